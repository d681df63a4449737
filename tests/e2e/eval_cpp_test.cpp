// End-to-end evaluation of C++ candidates for examples/tasks/reduction_cpp on the host: a crash,
// a hang, a kernel right only on its first call and a correct one in one eval job, then
// `run validate=true` and `test` / `test --ref`, all through the built kernelfoundry binary.
#include <gtest/gtest.h>
#include <unistd.h>

#include "e2e/cli_helpers.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

constexpr char kTask[] = "reduction_cpp";

}  // namespace

TEST(EvalCpp, CrashHangFirstCallOnlyAndCorrectInOneJob) {
  Scratch s;
  const std::vector<std::string> names = {"crash.cpp", "hang.cpp", "first_call_only.cpp",
                                          "correct.cpp"};
  std::vector<std::filesystem::path> files;
  // A short test_timeout stops the hang quickly. It limits the reference's test run too, which
  // takes about 0.6 s with quick_args(): 4 s leaves room for a loaded machine (ctest -j).
  std::vector<std::string> args = {"eval", "task=" + example(kTask).string(),
                                   "job_name=cpp_candidates", "test_timeout=4"};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  for (const auto& n : names) {
    files.push_back(candidate(kTask, n));
    args.push_back(files.back().string());
  }
  // If the hang's process group were not killed, its forked helper would keep the output pipe
  // open and the CLI would not come back: the 120 s limit turns that into a failure.
  JobOutcome job = s.run_job("cpp_candidates", args, 120);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  expect_job_recorded(job, files, kTask);
  ASSERT_EQ(job.kernels.size(), names.size());
  EXPECT_CONTAINS(job.cli.output, "done: 4 evaluated, 1 correct");

  {
    SCOPED_TRACE("crash.cpp");
    const KernelRecord& k = job.kernels[0];
    EXPECT_EQ(k.verdict, 2) << k.reason;
    EXPECT_CONTAINS(k.reason, "crashed");
    EXPECT_CONTAINS(k.reason, "SIGSEGV");
    // The harness's crash handler says where it was.
    EXPECT_CONTAINS(
        k.eval_log,
        "SIGSEGV (segmentation fault) while running the candidate on shape rows=1,cols=1");
  }
  {
    SCOPED_TRACE("hang.cpp");
    const KernelRecord& k = job.kernels[1];
    EXPECT_EQ(k.verdict, 2) << k.reason;
    EXPECT_CONTAINS(k.reason, "timed out after 4 s (test_timeout)");
    double test_s = job.results["kernels"][1].value("test_s", -1.0);
    EXPECT_GE(test_s, 3.9);
    EXPECT_LT(test_s, 15.0) << "the hang was not stopped near test_timeout";
    // Both the test child and the helper it forked are gone: the whole group was killed.
    EXPECT_TRUE(processes_mentioning(s.dir().string()).empty())
        << "processes left running with " << s.dir() << " in their command line";
  }
  {
    SCOPED_TRACE("first_call_only.cpp");
    const KernelRecord& k = job.kernels[2];
    EXPECT_EQ(k.verdict, 4) << k.reason;
    EXPECT_CONTAINS(k.reason, "shape rows=1,cols=1 seed 1 call 2");
    EXPECT_CONTAINS(k.reason, "correct only on the first call");
    EXPECT_CONTAINS(k.reason, "never written");
  }
  {
    SCOPED_TRACE("correct.cpp");
    const KernelRecord& k = job.kernels[3];
    EXPECT_EQ(k.verdict, 5) << k.reason;
    // 4 correctness shapes x 1 seed, call 1 judged by the checker (call 2 is compared with call 1
    // in the candidate's run); the 3 benchmark shapes after timing: a call on fresh inputs and
    // up to four picked timed calls (one of each poison variant among the first calls of the
    // batches, which the host also moves to new places, and one of each among the other calls;
    // the variants a class holds depend on the batches' sizes): two to four per shape.
    EXPECT_CONTAINS(k.reason, "all 4 correctness checks passed, and ");
    int timed = timed_checks(k.reason);
    EXPECT_GE(timed, 3 * 3) << k.reason;
    EXPECT_LE(timed, 3 * 5) << k.reason;
    ASSERT_TRUE(k.speedup.has_value());
    EXPECT_GT(*k.speedup, 0.0);
    EXPECT_EQ(job.results.value("best_uuid", ""), k.uuid);
    // Judged by the job's judge, which drew the timed calls' inputs once, when the reference
    // passed: this check regenerated nothing.
    auto check =
        read_file(job.run_dir / "work" / "kernel-003" / "run" / "check-all" / "check.json");
    ASSERT_TRUE(check) << check.message();
    nlohmann::json report = nlohmann::json::parse(*check, nullptr, false);
    EXPECT_EQ(report["phase_seconds"].value("check.setup", -1.0), 0.0) << *check;
    EXPECT_GT(report["phase_seconds"].value("check.reference", -1.0), 0.0) << *check;
  }
}

TEST(EvalCpp, RunValidateOnTheExampleIsCorrect) {
  expect_validate_passes(kTask, "reduction_cpp_baseline", "CPP");
}

TEST(EvalCpp, TestCommandRunsTheBlockAndTheReference) {
  expect_test_command_passes(kTask, "host");
}

// The package written as a user would, for an existing kernel: it validates as shipped, and its
// USER_INSTRUCTIONS block is read from the source file it sits in.
TEST(EvalCpp, UserStylePackageValidates) {
  Scratch s;
  std::vector<std::string> args = {"run", "task=" + example("box_blur_cpp").string(),
                                   "validate=true"};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  JobOutcome job = s.run_job("box_blur_cpp_tuning", args);
  EXPECT_EQ(job.cli.exit_code, 0) << job.cli.output;
  EXPECT_CONTAINS(job.cli.output, "verdict 5 (correct)");
  ASSERT_EQ(job.kernels.size(), 1u);
  EXPECT_EQ(job.kernels[0].verdict, 5) << job.kernels[0].reason;
}

// Profiling on the CPU (issue 12, items 2-4): with perf on PATH, a correct kernel's eval log
// gets a profile section (perf stat over the timed calls of one shape, per call) with the
// reference's beside it (profile_original_model), the figures are stored with the kernel, and
// the progress line gives the profiling time apart from the evaluation's.
TEST(EvalCpp, CorrectKernelIsProfiledBesideTheReference) {
  bool have_perf = false;
  for (const std::string& dir : split(std::getenv("PATH") ? std::getenv("PATH") : "", ':'))
    have_perf = have_perf || (!dir.empty() && ::access((dir + "/perf").c_str(), X_OK) == 0);
  if (!have_perf) GTEST_SKIP() << "perf is not on PATH (scripts/setup.sh installs linux-perf)";
  Scratch s;
  // correct.cpp in an eval job of its own with one setting (profiling on unless it says off;
  // quick_args turns it off).
  auto eval_correct = [&](const std::string& job_name, const std::string& setting) {
    std::vector<std::string> args = {"eval", "task=" + example(kTask).string(),
                                     "job_name=" + job_name, setting,
                                     candidate(kTask, "correct.cpp").string()};
    for (const auto& a : Scratch::quick_args())
      if (a.rfind("eval_config.profile_custom_model=", 0) != 0) args.push_back(a);
    return s.run_job(job_name, args);
  };
  JobOutcome job = eval_correct("cpp_profile", "eval_config.profile_original_model=true");
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  ASSERT_EQ(job.kernels.size(), 1u);
  EXPECT_CONTAINS(job.cli.output, ", profile ");
  const std::string& log = job.kernels[0].eval_log;
  EXPECT_CONTAINS(log, "== profile (");
  EXPECT_CONTAINS(log, "not part of the evaluation time");
  EXPECT_CONTAINS(log, "perf stat over ");
  EXPECT_CONTAINS(log, "timed calls of shape ");
  EXPECT_CONTAINS(log, "CPU time ");
  EXPECT_CONTAINS(log, "reference, the baseline to beat, on the same shape:");
  auto profile = nlohmann::json::parse(job.kernels[0].profile_json, nullptr, false);
  ASSERT_TRUE(profile.is_object()) << job.kernels[0].profile_json;
  EXPECT_EQ(profile.value("tool", ""), "perf stat");
  EXPECT_GT(profile.value("calls", 0), 0);
  EXPECT_GT(profile["per_call"].value("task-clock", 0.0), 0.0);
  EXPECT_TRUE(profile["reference"].is_object());

  // Off: no profile section, nothing stored.
  JobOutcome quiet = eval_correct("cpp_no_profile", "eval_config.profile_custom_model=false");
  ASSERT_EQ(quiet.cli.exit_code, 0) << quiet.cli.output;
  ASSERT_EQ(quiet.kernels.size(), 1u);
  EXPECT_EQ(quiet.kernels[0].eval_log.find("== profile"), std::string::npos);
  EXPECT_TRUE(quiet.kernels[0].profile_json.empty() || quiet.kernels[0].profile_json == "null")
      << quiet.kernels[0].profile_json;
}

}  // namespace kf::e2e
