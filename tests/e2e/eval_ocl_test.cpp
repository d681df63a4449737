// End-to-end evaluation of OpenCL candidates for examples/tasks/softmax_ocl on PoCL (the CPU):
// one eval job with a candidate for every way a kernel can go wrong, `run validate=true`, and
// `test` / `test --ref`, all through the built kernelfoundry binary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "e2e/cli_helpers.h"

namespace kf::e2e {
namespace {

constexpr char kTask[] = "softmax_ocl";

bool has_flag(const KernelRecord& k, const std::string& flag) {
  auto flags = nlohmann::json::parse(k.flags_json, nullptr, false);
  if (!flags.is_array()) return false;
  for (const auto& f : flags)
    if (f.value("flag", "") == flag) return true;
  return false;
}

bool is_suspect(const KernelRecord& k) {
  auto flags = nlohmann::json::parse(k.flags_json, nullptr, false);
  if (!flags.is_array()) return false;
  for (const auto& f : flags)
    if (f.value("suspect", false)) return true;
  return false;
}

}  // namespace

// Failing candidates come first and in between: the correct ones after them show the job goes
// on after a compile error, an out-of-bounds write and wrong values.
TEST(EvalOcl, EachCandidateGetsItsVerdictAndReasonInOneJob) {
  Scratch s;
  const std::vector<std::string> names = {
      "compile_error.cl",  "correct.cl",        "out_of_bounds.cl", "wrong_wide_rows.cl",
      "writes_nothing.cl", "modifies_input.cl", "slower.cl",        "faster.cl"};
  std::vector<std::filesystem::path> files;
  std::vector<std::string> args = {
      "eval", "task=" + example(kTask).string(), "job_name=ocl_candidates",
      // Less sampling than isolation_args: the speed checks below
      // have margins of several times.
      "eval_config.time_budget=0.15", "eval_config.hidden_shapes=false",
      "eval_config.profile_custom_model=false"};
  for (const auto& n : names) {
    files.push_back(candidate(kTask, n));
    args.push_back(files.back().string());
  }
  JobOutcome job = s.run_job("ocl_candidates", args);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  expect_job_recorded(job, files, kTask);
  ASSERT_EQ(job.kernels.size(), names.size());
  EXPECT_CONTAINS(job.cli.output, "done: 8 evaluated, 3 correct");
  auto kernel = [&](const std::string& name) -> const KernelRecord& {
    size_t i = std::find(names.begin(), names.end(), name) - names.begin();
    return job.kernels.at(i);
  };

  {
    SCOPED_TRACE("compile_error.cl");
    const KernelRecord& k = kernel("compile_error.cl");
    EXPECT_EQ(k.verdict, 1) << k.reason;
    EXPECT_CONTAINS(k.reason, "OpenCL build of 'softmax.cl' failed");
    // The driver's build log reaches the eval log, naming the package's file, not PoCL's copy.
    EXPECT_TRUE(std::regex_search(
        k.eval_log,
        std::regex(R"(softmax\.cl:[0-9]+:[0-9]+: use of undeclared identifier 'maximum')")))
        << k.eval_log;
    EXPECT_EQ(k.eval_log.find("tempfile_"), std::string::npos) << k.eval_log;
    EXPECT_FALSE(k.speedup.has_value());
  }
  {
    SCOPED_TRACE("correct.cl");
    const KernelRecord& k = kernel("correct.cl");
    EXPECT_EQ(k.verdict, 5) << k.reason;
    // 4 correctness shapes x 2 seeds, call 1 of each judged by the checker; the 3 benchmark
    // shapes are judged after timing: a call on fresh inputs and a picked timed call of each
    // poison variant among the batches' first calls (OpenCL keeps its buffers in place, but a
    // batch's first call follows a pause) and among the others, two to four per shape.
    EXPECT_CONTAINS(k.reason, "all 8 correctness checks passed, and ");
    int timed = timed_checks(k.reason);
    EXPECT_GE(timed, 3 * 3) << k.reason;
    EXPECT_LE(timed, 3 * 5) << k.reason;
    ASSERT_TRUE(k.speedup.has_value());
    EXPECT_GT(*k.speedup, 0.0);
    EXPECT_FALSE(is_suspect(k)) << k.flags_json;
  }
  {
    SCOPED_TRACE("out_of_bounds.cl");
    const KernelRecord& k = kernel("out_of_bounds.cl");
    EXPECT_EQ(k.verdict, 2) << k.reason;
    EXPECT_CONTAINS(k.reason, "out-of-bounds write past the end of buffer 'y'");
    EXPECT_CONTAINS(k.reason, "shape rows=1,cols=1");  // the first shape checked
    EXPECT_CONTAINS(k.reason, "element index 1 of a 1-element buffer");
    EXPECT_TRUE(has_flag(k, "out_of_bounds_write")) << k.flags_json;
  }
  {
    SCOPED_TRACE("wrong_wide_rows.cl");
    const KernelRecord& k = kernel("wrong_wide_rows.cl");
    EXPECT_EQ(k.verdict, 4) << k.reason;
    EXPECT_CONTAINS(k.reason, "shape rows=5,cols=4097");
    EXPECT_CONTAINS(k.reason, "output 'y'");
    EXPECT_CONTAINS(k.reason, "outside tolerance");
    // The narrower shapes before it passed, and the log says so.
    EXPECT_CONTAINS(k.eval_log, "ok   rows=3,cols=1000");
  }
  {
    SCOPED_TRACE("writes_nothing.cl");
    const KernelRecord& k = kernel("writes_nothing.cl");
    EXPECT_EQ(k.verdict, 4) << k.reason;
    EXPECT_CONTAINS(k.reason, "output 'y' was never written (still holds the poison pattern)");
  }
  {
    SCOPED_TRACE("modifies_input.cl");
    const KernelRecord& k = kernel("modifies_input.cl");
    EXPECT_EQ(k.verdict, 4) << k.reason;
    EXPECT_CONTAINS(k.reason, "modified input 'x'");
    EXPECT_TRUE(has_flag(k, "input_modified")) << k.flags_json;
  }
  {
    // 8 work-items each redo the whole row: about 5x the reference's time on PoCL.
    SCOPED_TRACE("slower.cl");
    const KernelRecord& k = kernel("slower.cl");
    EXPECT_EQ(k.verdict, 5) << k.reason;
    ASSERT_TRUE(k.speedup.has_value());
    EXPECT_LT(*k.speedup, 1.0);
  }
  {
    // 16-wide vectors and one exp per element: about 9x faster than the reference on PoCL.
    SCOPED_TRACE("faster.cl");
    const KernelRecord& k = kernel("faster.cl");
    EXPECT_EQ(k.verdict, 5) << k.reason;
    ASSERT_TRUE(k.speedup.has_value());
    EXPECT_GT(*k.speedup, 2.0);
    EXPECT_FALSE(is_suspect(k)) << k.flags_json;
    EXPECT_EQ(job.results.value("best_uuid", ""), k.uuid);
  }
}

TEST(EvalOcl, RunValidateOnTheExampleIsCorrect) {
  expect_validate_passes(kTask, "softmax_ocl_example", "OCL");
}

TEST(EvalOcl, TestCommandRunsTheBlockAndTheReference) {
  expect_test_command_passes(kTask, "opencl");
}

// An arch is a claim about where the kernel ran (issue 12): gpu_arch=lnl on a machine whose
// OpenCL device is PoCL on the CPU stops after the reference, with the device found and the fix
// named, and stores no kernel under lnl; the default `native` is stored as the device's name.
TEST(EvalOcl, ArchIsTheDeviceFoundNeverAClaimAboutAnother) {
  Scratch s;
  std::vector<std::string> claim = {"eval", "task=" + example(kTask).string(), "job_name=ocl_lnl",
                                    "gpu_arch=lnl", candidate(kTask, "correct.cl").string()};
  for (const auto& a : Scratch::quick_args()) claim.push_back(a);
  JobOutcome lnl = s.run_job("ocl_lnl", claim);
  EXPECT_NE(lnl.cli.exit_code, 0) << lnl.cli.output;
  EXPECT_CONTAINS(lnl.cli.output, "gpu_arch 'lnl'");
  EXPECT_CONTAINS(lnl.cli.output, "(opencl, a CPU)");
  EXPECT_CONTAINS(lnl.cli.output, "set gpu_arch=cpu");
  EXPECT_CONTAINS(lnl.cli.output, "from command line argument 'gpu_arch=lnl'");
  EXPECT_TRUE(lnl.kernels.empty()) << lnl.kernels.size() << " kernel(s) stored under lnl";

  std::vector<std::string> native = {"eval", "task=" + example(kTask).string(),
                                     "job_name=ocl_native",
                                     candidate(kTask, "correct.cl").string()};
  for (const auto& a : Scratch::quick_args()) native.push_back(a);
  JobOutcome found = s.run_job("ocl_native", native);
  ASSERT_EQ(found.cli.exit_code, 0) << found.cli.output;
  ASSERT_EQ(found.kernels.size(), 1u);
  EXPECT_EQ(found.kernels[0].gpu_arch, "cpu");
  ASSERT_TRUE(found.job.has_value());
  EXPECT_EQ(found.job->gpu_arch, "cpu");
  EXPECT_EQ(found.results.value("gpu_arch", ""), "cpu");
}

// gpu_arch listing two archs, each on its own PoCL device (POCL_DEVICES gives the platform two
// CPU drivers): every candidate runs on both, the verdict is the worse, the speedup the geometric
// mean over both archs' shapes, and each arch's results are kept under its name.
TEST(EvalOcl, SeveralArchsRunOnTheirOwnDevicesWithWorstVerdictAndGeomean) {
  ::setenv("POCL_DEVICES", "basic pthread", 1);
  Scratch s;
  const std::string archs = "gpu_arch=cpu/basic,cpu/pthread";
  const std::string targets =
      "arch_targets=cpu/basic=opencl:portable:0,cpu/pthread=opencl:portable:1";
  std::vector<std::string> args = {"eval",
                                   "task=" + example(kTask).string(),
                                   "job_name=ocl_two",
                                   archs,
                                   targets,
                                   candidate(kTask, "correct.cl").string(),
                                   candidate(kTask, "wrong_wide_rows.cl").string()};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  JobOutcome job = s.run_job("ocl_two", args);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  EXPECT_CONTAINS(job.cli.output, "reference on cpu/pthread: ok");
  ASSERT_EQ(job.kernels.size(), 2u);
  ASSERT_TRUE(job.job.has_value());
  EXPECT_EQ(job.job->gpu_arch, "cpu/basic,cpu/pthread");
  ASSERT_TRUE(job.results.contains("reference"));
  EXPECT_TRUE(job.results["reference"].contains("cpu/basic"));
  EXPECT_TRUE(job.results["reference"].contains("cpu/pthread"));

  const KernelRecord& ok = job.kernels[0];
  EXPECT_EQ(ok.verdict, 5) << ok.reason;
  EXPECT_EQ(ok.gpu_arch, "cpu/basic,cpu/pthread");
  // Each section of the log is the run on that arch's device.
  size_t basic = ok.eval_log.find("== arch cpu/basic: correct, speedup ");
  size_t pthread = ok.eval_log.find("== arch cpu/pthread: correct, speedup ");
  ASSERT_NE(basic, std::string::npos) << ok.eval_log;
  ASSERT_NE(pthread, std::string::npos) << ok.eval_log;
  ASSERT_LT(basic, pthread);
  std::string basic_log = ok.eval_log.substr(basic, pthread - basic);
  std::string pthread_log = ok.eval_log.substr(pthread);
  EXPECT_CONTAINS(basic_log, "on opencl device 'basic-");
  EXPECT_CONTAINS(pthread_log, "on opencl device 'pthread-");
  auto runtimes = nlohmann::json::parse(ok.runtimes_json);
  ASSERT_TRUE(runtimes.contains("cpu/basic")) << ok.runtimes_json;
  ASSERT_TRUE(runtimes.contains("cpu/pthread")) << ok.runtimes_json;
  // Both archs time the same 3 shapes: the geometric mean over the 6 (arch, shape) pairs is the
  // geometric mean of the two archs' speedups.
  auto speedup_of = [&](const std::string& log) {
    size_t at = log.find("speedup ");
    return at == std::string::npos ? 0.0 : std::atof(log.c_str() + at + 8);
  };
  double a = speedup_of(basic_log), b = speedup_of(pthread_log);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  ASSERT_TRUE(ok.speedup.has_value());
  EXPECT_NEAR(*ok.speedup, std::sqrt(a * b), 0.002 * *ok.speedup);
  EXPECT_CONTAINS(ok.reason, "per arch: cpu/basic ");
  ASSERT_TRUE(ok.speedup_interval.has_value());
  EXPECT_NEAR(ok.speedup_interval->confidence, 0.90, 1e-9);  // two 95% intervals at once

  const KernelRecord& wrong = job.kernels[1];
  EXPECT_EQ(wrong.verdict, 4) << wrong.reason;
  // The first arch with the worst verdict gives the reason, named.
  EXPECT_EQ(wrong.reason.rfind("on cpu/basic: ", 0), 0u) << wrong.reason;
  EXPECT_CONTAINS(wrong.reason, "outside tolerance");
  EXPECT_FALSE(wrong.speedup.has_value());
}

// Each arch must have a device, and the device a target selects must be the arch's.
TEST(EvalOcl, SeveralArchsNeedATargetEachWhichMustBeTheirDevice) {
  ::setenv("POCL_DEVICES", "basic pthread", 1);
  Scratch s;
  std::vector<std::string> untargeted = {"eval",
                                         "task=" + example(kTask).string(),
                                         "job_name=ocl_untargeted",
                                         "gpu_arch=cpu,bmg",
                                         "arch_targets=cpu=opencl:portable",
                                         candidate(kTask, "correct.cl").string()};
  JobOutcome none = s.run_job("ocl_untargeted", untargeted);
  EXPECT_NE(none.cli.exit_code, 0);
  EXPECT_CONTAINS(none.cli.output, "arch 'bmg' has no device here");
  EXPECT_CONTAINS(none.cli.output, "bmg=opencl:PLATFORM[:DEVICE]");
  EXPECT_CONTAINS(none.cli.output, "key 'arch_targets'");
  EXPECT_FALSE(none.job.has_value());

  std::vector<std::string> wrong = {"eval",
                                    "task=" + example(kTask).string(),
                                    "job_name=ocl_wrong_target",
                                    "gpu_arch=cpu,bmg",
                                    "arch_targets=cpu=opencl:portable:0,bmg=opencl:portable:1",
                                    candidate(kTask, "correct.cl").string()};
  for (const auto& a : Scratch::quick_args()) wrong.push_back(a);
  JobOutcome other = s.run_job("ocl_wrong_target", wrong);
  EXPECT_NE(other.cli.exit_code, 0);
  EXPECT_CONTAINS(other.cli.output, "arch 'bmg' (target opencl:portable:1)");
  EXPECT_CONTAINS(other.cli.output, "(opencl, a CPU)");
  EXPECT_TRUE(other.kernels.empty()) << other.kernels.size() << " kernel(s) stored";

  std::vector<std::string> bad = {"eval",
                                  "task=" + example(kTask).string(),
                                  "job_name=ocl_bad",
                                  "gpu_arch=cpu/a,cpu/b",
                                  "arch_targets=cpu/a=opencl,cpu/b=cuda:0",
                                  candidate(kTask, "correct.cl").string()};
  JobOutcome malformed = s.run_job("ocl_bad", bad);
  EXPECT_NE(malformed.cli.exit_code, 0);
  EXPECT_CONTAINS(malformed.cli.output, "arch_targets entry 'cpu/a=opencl'");
}

// reference_gpu_arch: the reference is built, checked and timed (beside each candidate, by the
// judge) on its own arch's device, and run once on the candidates' device, which the arch check
// reads; speedups are candidate-there against reference-here, and the log says so.
TEST(EvalOcl, ReferenceRunsOnItsOwnArchDevice) {
  ::setenv("POCL_DEVICES", "basic pthread", 1);
  Scratch s;
  const std::string targets =
      "arch_targets=cpu/basic=opencl:portable:0,cpu/pthread=opencl:portable:1";
  std::vector<std::string> args = {"eval",
                                   "task=" + example(kTask).string(),
                                   "job_name=ocl_ref_elsewhere",
                                   "gpu_arch=cpu/pthread",
                                   "reference_gpu_arch=cpu/basic",
                                   targets,
                                   candidate(kTask, "correct.cl").string()};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  JobOutcome job = s.run_job("ocl_ref_elsewhere", args);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  EXPECT_CONTAINS(job.cli.output, " timed on basic-");
  EXPECT_CONTAINS(job.cli.output, ", candidates on pthread-");
  EXPECT_EQ(job.results.value("reference_gpu_arch", std::string()), "cpu/basic") << job.results;
  ASSERT_EQ(job.kernels.size(), 1u);
  const KernelRecord& k = job.kernels[0];
  EXPECT_EQ(k.verdict, 5) << k.reason << k.eval_log;
  EXPECT_EQ(k.gpu_arch, "cpu/pthread");
  EXPECT_TRUE(k.speedup.has_value());
  EXPECT_CONTAINS(k.eval_log, "on opencl device 'pthread-");
  EXPECT_CONTAINS(k.eval_log,
                  "speedup against the reference on cpu/basic (reference_gpu_arch); this kernel "
                  "ran on cpu");

  // The reference's device is checked like any arch's: bmg pointed at a CPU stops the job.
  std::vector<std::string> wrong = {
      "eval",
      "task=" + example(kTask).string(),
      "job_name=ocl_ref_wrong",
      "gpu_arch=cpu/pthread",
      "reference_gpu_arch=bmg",
      "arch_targets=bmg=opencl:portable:0,cpu/pthread=opencl:portable:1",
      candidate(kTask, "correct.cl").string()};
  for (const auto& a : Scratch::quick_args()) wrong.push_back(a);
  JobOutcome other = s.run_job("ocl_ref_wrong", wrong);
  EXPECT_NE(other.cli.exit_code, 0);
  EXPECT_CONTAINS(other.cli.output, "reference_gpu_arch 'bmg' (target opencl:portable:0)");
  EXPECT_TRUE(other.kernels.empty()) << other.kernels.size() << " kernel(s) stored";
}

// Mistakes in reference_gpu_arch and the profiler keys stop the job before anything runs.
TEST(EvalOcl, ReferenceArchAndProfilerChoicesAreCheckedAtStart) {
  Scratch s;
  auto start = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"eval", "task=" + example(kTask).string(), "job_name=" + name};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(candidate(kTask, "correct.cl").string());
    return s.run_job(name, args);
  };
  JobOutcome untargeted = start("ref_untargeted", {"gpu_arch=cpu", "reference_gpu_arch=h100"});
  EXPECT_NE(untargeted.cli.exit_code, 0);
  EXPECT_CONTAINS(untargeted.cli.output, "reference_gpu_arch is 'h100', but it has no device here");
  EXPECT_CONTAINS(untargeted.cli.output, "h100=cuda:N");
  JobOutcome list = start("ref_list", {"gpu_arch=cpu", "reference_gpu_arch=h100,h200"});
  EXPECT_NE(list.cli.exit_code, 0);
  EXPECT_CONTAINS(list.cli.output, "reference_gpu_arch names one arch");
  JobOutcome native = start("ref_native", {"gpu_arch=cpu", "reference_gpu_arch=native"});
  EXPECT_NE(native.cli.exit_code, 0);
  EXPECT_CONTAINS(native.cli.output, "reference_gpu_arch cannot be 'native'");
  JobOutcome ncu = start("prof_ncu", {"eval_config.profiler_kernel=ncu"});
  EXPECT_NE(ncu.cli.exit_code, 0);
  EXPECT_CONTAINS(ncu.cli.output,
                  "eval_config.profiler_kernel is ncu, but ncu (Nsight Compute) profiles CUDA "
                  "kernels only, and this job's language is OCL");
  JobOutcome bad = start("prof_bad", {"eval_config.profiler_reference=vtune"});
  EXPECT_NE(bad.cli.exit_code, 0);
  EXPECT_CONTAINS(bad.cli.output, "profiler_reference");
  for (const JobOutcome* o : {&untargeted, &list, &native, &ncu, &bad})
    EXPECT_TRUE(o->kernels.empty());
}

}  // namespace kf::e2e
