// Tests for the compute-sanitizer pass: reading the tool's reports (memcheck, racecheck; old and
// new formats), the command, the job-start checks, and the flag and score it gives a kernel
// through Evaluator::sanitize with a scripted runner.
#include "eval/sanitizer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "eval/eval.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kf {
namespace {

namespace fs = std::filesystem;

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << "missing: " << (part) << "\nin:\n" << (text)

// compute-sanitizer 2023+ (CUDA 12): the kernel's name and offset first, then the file and line.
const char* kMemcheckNew = R"(========= COMPUTE-SANITIZER
kernelfoundry: correctness: shape rows=1,cols=1 seed 1
========= Invalid __global__ read of size 4 bytes
=========     at softmax_tail(const float *, float *, int, int)+0x2b0 in /tmp/kf/work/kernel-003/src/softmax.cu:27
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f3a5e000004 is out of bounds
=========     and is 0 bytes after the nearest allocation at 0x7f3a5e000000 of size 4 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f6f4f] in libcuda.so.1
=========         Host Frame: cudaLaunchKernel [0x4a1b0] in libcudart.so.12
=========
========= Invalid __global__ read of size 4 bytes
=========     at softmax_tail(const float *, float *, int, int)+0x2b0 in /tmp/kf/work/kernel-003/src/softmax.cu:27
=========     by thread (31,0,0) in block (2,0,0)
=========     Address 0x7f3a5e100840 is out of bounds
=========     and is 0 bytes after the nearest allocation at 0x7f3a5e100000 of size 2112 bytes
=========
kernelfoundry: correctness: 3 shapes dumped
========= ERROR SUMMARY: 2 errors
)";

// compute-sanitizer 2020-2022 (CUDA 11): the offset, then file:line:signature.
const char* kMemcheckOld = R"(========= COMPUTE-SANITIZER
========= Invalid __shared__ write of size 4 bytes
=========     at 0x00000150 in /src/softmax.cu:40:softmax_block(float const*, float*, int)
=========     by thread (255,0,0) in block (3,0,0)
=========     Address 0x00001000 is out of bounds
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame:/lib/x86_64-linux-gnu/libcuda.so.1 [0x2b8fbb]
=========                in /lib/x86_64-linux-gnu/libcuda.so.1
=========
========= ERROR SUMMARY: 1 error
)";

const char* kRacecheck = R"(========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at reduce_rows(const float *, float *, int)+0x3c0 in softmax.cu:31
=========     and Read access at reduce_rows(const float *, float *, int)+0x420 in softmax.cu:33 [1024 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
)";

const char* kRacecheckWarning = R"(========= COMPUTE-SANITIZER
========= Warning: Race reported between Write access at void kf::rows<float, 256>(const float *, float *, int)+0x40 in k.cu:12
=========     and Write access at void kf::rows<float, 256>(const float *, float *, int)+0x40 in k.cu:12 [32 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)
)";

const char* kClean = R"(========= COMPUTE-SANITIZER
kernelfoundry: correctness: 5 shapes dumped
========= ERROR SUMMARY: 0 errors
)";

TEST(SanitizerParse, MemcheckOfCuda12) {
  SanitizerReport r = parse_sanitizer_output(kMemcheckNew, "memcheck");
  EXPECT_EQ(r.errors, 2);
  EXPECT_EQ(r.reports, 2);
  ASSERT_EQ(r.findings.size(), 1u);  // the same access by two threads: one finding
  const SanitizerFinding& f = r.findings[0];
  EXPECT_EQ(f.tool, "memcheck");
  EXPECT_EQ(f.kind, "Invalid __global__ read of size 4 bytes");
  EXPECT_EQ(f.kernel, "softmax_tail");
  EXPECT_EQ(f.location, "softmax.cu:27");
  EXPECT_EQ(f.repeats, 2);
  ASSERT_EQ(f.details.size(), 3u);  // no backtrace lines
  EXPECT_EQ(f.details[0], "by thread (0,0,0) in block (0,0,0)");
  EXPECT_CONTAINS(f.details[2], "0 bytes after the nearest allocation");
  std::string text = f.describe();
  EXPECT_CONTAINS(text,
                  "Invalid __global__ read of size 4 bytes in kernel softmax_tail "
                  "(softmax.cu:27): by thread (0,0,0) in block (0,0,0)");
  EXPECT_CONTAINS(text, "reported 2 times");
  EXPECT_EQ(text.find("/tmp/kf/work"), std::string::npos) << text;  // no work paths
}

TEST(SanitizerParse, MemcheckOfCuda11) {
  SanitizerReport r = parse_sanitizer_output(kMemcheckOld, "memcheck");
  EXPECT_EQ(r.errors, 1);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, "Invalid __shared__ write of size 4 bytes");
  EXPECT_EQ(r.findings[0].kernel, "softmax_block");
  EXPECT_EQ(r.findings[0].location, "softmax.cu:40");
  EXPECT_EQ(r.findings[0].details.size(), 2u);
}

TEST(SanitizerParse, RacecheckErrorsAndWarnings) {
  SanitizerReport r = parse_sanitizer_output(kRacecheck, "racecheck");
  EXPECT_EQ(r.errors, 1);
  EXPECT_EQ(r.warnings, 0);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, "Error: Race reported between Write access");
  EXPECT_EQ(r.findings[0].kernel, "reduce_rows");
  EXPECT_EQ(r.findings[0].location, "softmax.cu:31");
  EXPECT_TRUE(r.findings[0].error);
  ASSERT_EQ(r.findings[0].details.size(), 1u);
  EXPECT_CONTAINS(r.findings[0].details[0], "and Read access at");

  SanitizerReport w = parse_sanitizer_output(kRacecheckWarning, "racecheck");
  EXPECT_EQ(w.errors, 0);
  EXPECT_EQ(w.warnings, 1);
  ASSERT_EQ(w.findings.size(), 1u);
  EXPECT_FALSE(w.findings[0].error);
  EXPECT_EQ(w.findings[0].kernel, "kf::rows<float, 256>");  // templates and namespaces kept
}

TEST(SanitizerParse, OffsetWhenThereIsNoLineInfo) {
  SanitizerReport r = parse_sanitizer_output(
      "========= Invalid __global__ write of size 16 bytes\n"
      "=========     at vec_store(float *, int)+0x1d0\n"
      "=========     by thread (3,0,0) in block (0,0,0)\n"
      "=========     Address 0x7f0000000008 is misaligned\n"
      "========= ERROR SUMMARY: 1 error\n",
      "memcheck");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kernel, "vec_store");
  EXPECT_EQ(r.findings[0].location, "+0x1d0");
}

TEST(SanitizerParse, TheProgramCannotForgeTheSummary) {
  // The program's own "=========" lines come before the tool's summary, which is printed after
  // the program exited: the last summary counts.
  std::string out = std::string("========= ERROR SUMMARY: 0 errors\n") + kMemcheckNew;
  EXPECT_EQ(parse_sanitizer_output(out, "memcheck").errors, 2);
  EXPECT_EQ(parse_sanitizer_output(kClean, "memcheck").errors, 0);
  EXPECT_TRUE(parse_sanitizer_output(kClean, "memcheck").findings.empty());
  // No summary at all (the tool died): unknown, not clean.
  EXPECT_EQ(parse_sanitizer_output("========= COMPUTE-SANITIZER\n", "memcheck").errors, -1);
}

TEST(SanitizerParse, KeepsAFewDistinctFindings) {
  std::string out;
  for (int i = 0; i < 10; ++i)
    out += strprintf(
        "========= Invalid __global__ read of size 4 bytes\n"
        "=========     at k%d(float *)+0x10 in k.cu:%d\n"
        "=========     by thread (%d,0,0) in block (0,0,0)\n",
        i, i + 1, i);
  out += "========= ERROR SUMMARY: 10 errors\n";
  SanitizerReport r = parse_sanitizer_output(out, "memcheck", 3);
  EXPECT_EQ(r.reports, 10);
  ASSERT_EQ(r.findings.size(), 3u);
  EXPECT_EQ(r.findings[2].kernel, "k2");
}

ProcessResult exited(int code, std::string output, double wall_s = 1) {
  ProcessResult r = FakeProcessRunner::exited(code, std::move(output));
  r.wall_s = wall_s;
  return r;
}

TEST(SanitizerJudge, ErrorsAreSuspectWithWordsToActOn) {
  ProcessResult p = exited(kSanitizerErrorExitCode, kMemcheckNew);
  SanitizerOutcome o =
      judge_sanitizer_run(p, parse_sanitizer_output(p.output, "memcheck"), "memcheck", 1800);
  EXPECT_EQ(o.flag, "sanitizer_memcheck");
  EXPECT_TRUE(o.suspect);
  EXPECT_CONTAINS(o.detail, "memcheck found 2 errors");
  EXPECT_CONTAINS(o.detail, "in kernel softmax_tail (softmax.cu:27)");
  EXPECT_CONTAINS(o.detail, "by thread (0,0,0)");
  EXPECT_CONTAINS(o.detail, "guard every global load and store with the bounds check");

  ProcessResult race = exited(kSanitizerErrorExitCode, kRacecheck);
  SanitizerOutcome ro = judge_sanitizer_run(race, parse_sanitizer_output(race.output, "racecheck"),
                                            "racecheck", 1800);
  EXPECT_EQ(ro.flag, "sanitizer_racecheck");
  EXPECT_TRUE(ro.suspect);
  EXPECT_CONTAINS(ro.detail, "__syncthreads()");
}

TEST(SanitizerJudge, TheExitCodeCountsWhenTheReportCannotBeRead) {
  ProcessResult p = exited(kSanitizerErrorExitCode, "garbled\n");
  SanitizerOutcome o =
      judge_sanitizer_run(p, parse_sanitizer_output(p.output, "memcheck"), "memcheck", 1800);
  EXPECT_EQ(o.flag, "sanitizer_memcheck");
  EXPECT_TRUE(o.suspect);
  EXPECT_CONTAINS(o.detail, "could not be read");
}

TEST(SanitizerJudge, CleanIsNoFlag) {
  ProcessResult p = exited(0, kClean);
  SanitizerOutcome o =
      judge_sanitizer_run(p, parse_sanitizer_output(p.output, "memcheck"), "memcheck", 1800);
  EXPECT_EQ(o.flag, "");
  EXPECT_FALSE(o.suspect);
  EXPECT_EQ(o.log_line, "memcheck: no errors");
}

TEST(SanitizerJudge, AnUnfinishedPassIsANoteNotAVerdict) {
  ProcessResult timeout = FakeProcessRunner::timeout(1800, "========= COMPUTE-SANITIZER\n");
  SanitizerOutcome t = judge_sanitizer_run(
      timeout, parse_sanitizer_output(timeout.output, "racecheck"), "racecheck", 1800);
  EXPECT_EQ(t.flag, "sanitizer_incomplete");
  EXPECT_FALSE(t.suspect);
  EXPECT_CONTAINS(t.detail, "eval_config.sanitizer_timeout");

  ProcessResult failed = exited(2, std::string(kClean) + "kernelfoundry: device error\n");
  SanitizerOutcome f = judge_sanitizer_run(
      failed, parse_sanitizer_output(failed.output, "memcheck"), "memcheck", 1800);
  EXPECT_EQ(f.flag, "sanitizer_incomplete");
  EXPECT_FALSE(f.suspect);
  EXPECT_CONTAINS(f.detail, "exit code 2");

  ProcessResult missing = FakeProcessRunner::not_started("cannot run 'compute-sanitizer'");
  SanitizerOutcome m = judge_sanitizer_run(missing, {}, "memcheck", 1800);
  EXPECT_EQ(m.flag, "sanitizer_incomplete");
  EXPECT_FALSE(m.suspect);
}

TEST(SanitizerJudge, RacecheckWarningsAloneAreNotSuspect) {
  ProcessResult p = exited(0, kRacecheckWarning);
  SanitizerOutcome o =
      judge_sanitizer_run(p, parse_sanitizer_output(p.output, "racecheck"), "racecheck", 1800);
  EXPECT_EQ(o.flag, "sanitizer_racecheck_warnings");
  EXPECT_FALSE(o.suspect);
}

TEST(SanitizerCommand, WrapsTheCandidateBinaryInItsCorrectnessPhase) {
  SanitizerRun run;
  run.tool = "/usr/local/cuda/bin/compute-sanitizer";
  run.tool_name = "racecheck";
  run.binary = "/cache/bin/abc";
  run.kernel_dir = "/work/kernel-003/src";
  run.work_dir = "/work/kernel-003/sanitize-racecheck";
  run.extra_shapes = R"([{"dims":{"rows":9}}])";
  run.timeout_s = 900;
  ProcessSpec spec = sanitizer_spec(run);
  std::vector<std::string> want = {"/usr/local/cuda/bin/compute-sanitizer",
                                   "--tool",
                                   "racecheck",
                                   "--error-exitcode",
                                   std::to_string(kSanitizerErrorExitCode),
                                   "--print-limit",
                                   "20",
                                   "--show-backtrace",
                                   "no",
                                   "--report-api-errors",
                                   "no",
                                   "/cache/bin/abc",
                                   "--phase",
                                   "correctness",
                                   "--out",
                                   "/work/kernel-003/sanitize-racecheck/result.json",
                                   "--kernel-dir",
                                   "/work/kernel-003/src",
                                   "--dump-dir",
                                   "/work/kernel-003/sanitize-racecheck/outputs",
                                   "--seeds",
                                   "1",
                                   "--large-shape-mib",
                                   "64",
                                   "--no-benchmark-shapes",
                                   "--extra-shapes",
                                   R"([{"dims":{"rows":9}}])"};
  EXPECT_EQ(spec.argv, want);
  EXPECT_EQ(spec.work_dir, run.work_dir);
  EXPECT_EQ(spec.timeout_s, 900);
  EXPECT_EQ(spec.inactivity_timeout_s, 0);
  ASSERT_EQ(spec.env.size(), 1u);
  EXPECT_EQ(spec.env[0].first, kNoGuardBytesEnv);
  EXPECT_EQ(spec.env[0].second, "1");
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kf_sanitizer_test_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_executable(const fs::path& path) {
  ASSERT_TRUE(make_dirs(path.parent_path()).is_ok());
  ASSERT_TRUE(write_file(path, "#!/bin/sh\n").is_ok());
  ::chmod(path.c_str(), 0755);
}

TEST(SanitizerSetup, FoundOnPathThenUnderNvccsCudaRoot) {
  TempDir t;
  Toolchain toolchain;
  toolchain.nvcc = (t.path() / "cuda" / "bin" / "nvcc").string();
  write_executable(t.path() / "cuda" / "bin" / "nvcc");
  EXPECT_TRUE(find_compute_sanitizer(toolchain, "").empty());
  write_executable(t.path() / "cuda" / "compute-sanitizer" / "compute-sanitizer");
  EXPECT_EQ(find_compute_sanitizer(toolchain, ""),
            t.path() / "cuda" / "compute-sanitizer" / "compute-sanitizer");
  write_executable(t.path() / "bin" / "compute-sanitizer");
  EXPECT_EQ(find_compute_sanitizer(toolchain, "/nonexistent:" + (t.path() / "bin").string()),
            t.path() / "bin" / "compute-sanitizer");
  // nvcc by name, found on PATH.
  toolchain.nvcc = "nvcc";
  EXPECT_EQ(find_compute_sanitizer(toolchain, (t.path() / "cuda" / "bin").string()),
            t.path() / "cuda" / "compute-sanitizer" / "compute-sanitizer");
}

TEST(SanitizerSetup, ModesAndTools) {
  std::vector<std::string> tools = {"memcheck", "racecheck"};
  fs::path tool = "/opt/cuda/bin/compute-sanitizer";
  auto off = check_sanitizer(SanitizerMode::kOff, Language::kCuda, tools, tool);
  ASSERT_TRUE(off.is_ok());
  EXPECT_TRUE(off->tool.empty());
  auto cpp = check_sanitizer(SanitizerMode::kOn, Language::kCpp, tools, {});
  ASSERT_TRUE(cpp.is_ok()) << cpp.message();  // CUDA only: not an error elsewhere
  EXPECT_TRUE(cpp->tool.empty());
  auto found = check_sanitizer(SanitizerMode::kAuto, Language::kCuda, tools, tool);
  ASSERT_TRUE(found.is_ok());
  EXPECT_EQ(found->tool, tool);
  EXPECT_TRUE(found->note.empty());
  auto missing = check_sanitizer(SanitizerMode::kAuto, Language::kCuda, tools, {});
  ASSERT_TRUE(missing.is_ok());
  EXPECT_TRUE(missing->tool.empty());
  EXPECT_CONTAINS(missing->note, "compute-sanitizer was not found");
  EXPECT_CONTAINS(missing->note, "eval_config.compute_sanitizer: off");
  auto required = check_sanitizer(SanitizerMode::kOn, Language::kCuda, tools, {});
  ASSERT_FALSE(required.is_ok());
  EXPECT_CONTAINS(required.message(), "eval_config.compute_sanitizer is on");
  auto typo = check_sanitizer(SanitizerMode::kAuto, Language::kCuda, {"memchek"}, tool);
  ASSERT_FALSE(typo.is_ok());
  EXPECT_CONTAINS(typo.message(), "eval_config.sanitizer_tools: 'memchek'");
  EXPECT_CONTAINS(typo.message(), "did you mean 'memcheck'");
  EXPECT_TRUE(parse_sanitizer_mode("on").is_ok());
  EXPECT_FALSE(parse_sanitizer_mode("yes").is_ok());
}

// Evaluator::sanitize with a scripted runner: the candidate's binary (a file with its recorded
// hash, as the build cache keeps it) and a correct result that would be the job's best.
class SanitizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = dir_.path() / "cache" / "bin" / "0123abcd";
    ASSERT_TRUE(make_dirs(binary_.parent_path()).is_ok());
    ASSERT_TRUE(write_file(binary_, "ELF binary").is_ok());
    ASSERT_TRUE(write_file(fs::path(binary_.string() + ".sha256"), sha256_hex("ELF binary") + "\n")
                    .is_ok());
    ASSERT_TRUE(make_dirs(dir_.path() / "work" / "kernel-001" / "src").is_ok());
    options_.language = Language::kCuda;
    options_.sandbox = SandboxMode::kNone;  // the spec reaches the runner as built
    options_.sanitizer_path = "/opt/cuda/bin/compute-sanitizer";
    options_.sanitizer_timeout_s = 600;
    options_.work_root = dir_.path() / "work";
    options_.cache_dir = dir_.path() / "cache";
  }

  EvalResult best() const {
    EvalResult r;
    r.verdict = kCorrect;
    r.reason = "correct on 9 checks";
    r.speedup = 3.0;
    r.fitness = 8.0;
    r.binary = binary_;
    r.dir = dir_.path() / "work" / "kernel-001";
    r.eval_log = "verdict: 5 (correct): correct on 9 checks\n\n== build\nok\n";
    return r;
  }

  TempDir dir_;
  fs::path binary_;
  EvalOptions options_;
  TaskPackage task_;
};

TEST_F(SanitizeTest, FindingsFlagTheKernelAndItIsNoLongerAWin) {
  FakeProcessRunner runner([](const ProcessSpec& spec) {
    bool memcheck = std::find(spec.argv.begin(), spec.argv.end(), "memcheck") != spec.argv.end();
    return memcheck ? exited(kSanitizerErrorExitCode, kMemcheckNew, 2.5) : exited(0, kClean, 1.5);
  });
  Evaluator evaluator(task_, options_, Toolchain{}, runner);
  EvalResult r = best();
  evaluator.sanitize(r);
  ASSERT_EQ(runner.calls(), 2u);  // memcheck, racecheck
  std::vector<ProcessSpec> specs = runner.specs();
  EXPECT_EQ(specs[0].argv[0], "/opt/cuda/bin/compute-sanitizer");
  EXPECT_EQ(specs[0].argv[2], "memcheck");
  EXPECT_EQ(specs[1].argv[2], "racecheck");
  EXPECT_EQ(specs[0].argv[11], binary_.string());
  EXPECT_EQ(specs[0].timeout_s, 600);
  EXPECT_EQ(specs[0].work_dir, r.dir / "sanitize-memcheck");
  EXPECT_TRUE(fs::is_directory(r.dir / "sanitize-memcheck" / "tmp"));
  bool no_guard = false;
  for (const auto& [name, value] : specs[0].env) no_guard = no_guard || name == kNoGuardBytesEnv;
  EXPECT_TRUE(no_guard);

  EXPECT_TRUE(r.suspect());
  ASSERT_EQ(r.flags.size(), 1u) << r.flags.dump();
  EXPECT_EQ(r.flags[0]["flag"], "sanitizer_memcheck");
  EXPECT_EQ(r.verdict, kCorrect);
  EXPECT_DOUBLE_EQ(r.fitness, 5.0);  // the speedup no longer counts
  EXPECT_CONTAINS(r.reason, "not counted as a win");
  EXPECT_CONTAINS(r.eval_log, "verdict: 5 (correct): correct on 9 checks; flagged");
  EXPECT_CONTAINS(r.eval_log, "== build\nok\n");
  EXPECT_CONTAINS(r.eval_log, "== compute-sanitizer\n- memcheck: memcheck found 2 errors");
  EXPECT_CONTAINS(r.eval_log, "in kernel softmax_tail (softmax.cu:27)");
  EXPECT_CONTAINS(r.eval_log, "- racecheck: no errors (1.5 s)");
  EXPECT_GE(r.sanitize_s, 0.0);

  // The same binary again (another branch wrote the same kernel): not run again, same outcome.
  EvalResult again = best();
  again.dir = dir_.path() / "work" / "kernel-002";
  evaluator.sanitize(again);
  EXPECT_EQ(runner.calls(), 2u);
  EXPECT_TRUE(again.suspect());
  EXPECT_DOUBLE_EQ(again.fitness, 5.0);
  EXPECT_CONTAINS(again.eval_log, "== compute-sanitizer (this binary was checked before)");
  EXPECT_EQ(again.sanitize_s, 0.0);
}

TEST_F(SanitizeTest, ACleanKernelKeepsItsWin) {
  FakeProcessRunner runner([](const ProcessSpec&) { return exited(0, kClean); });
  Evaluator evaluator(task_, options_, Toolchain{}, runner);
  EvalResult r = best();
  evaluator.sanitize(r);
  EXPECT_EQ(runner.calls(), 2u);
  EXPECT_FALSE(r.suspect());
  EXPECT_TRUE(r.flags.empty());
  EXPECT_DOUBLE_EQ(r.fitness, 8.0);
  ASSERT_TRUE(r.speedup.has_value());
  EXPECT_EQ(r.reason, "correct on 9 checks");
  EXPECT_CONTAINS(r.eval_log, "- memcheck: no errors");
}

TEST_F(SanitizeTest, NothingRunsWithoutTheToolOrForOtherKernels) {
  FakeProcessRunner runner([](const ProcessSpec&) { return exited(0, kClean); });
  EvalOptions no_tool = options_;
  no_tool.sanitizer_path.clear();
  Evaluator without(task_, no_tool, Toolchain{}, runner);
  EvalResult r = best();
  without.sanitize(r);
  EXPECT_EQ(runner.calls(), 0u);
  EXPECT_EQ(r.eval_log, best().eval_log);

  Evaluator evaluator(task_, options_, Toolchain{}, runner);
  EvalResult wrong = best();
  wrong.verdict = kWrongValues;
  evaluator.sanitize(wrong);
  EXPECT_EQ(runner.calls(), 0u);
}

TEST_F(SanitizeTest, AReplacedCachedBinaryIsNotRun) {
  FakeProcessRunner runner([](const ProcessSpec&) { return exited(0, kClean); });
  Evaluator evaluator(task_, options_, Toolchain{}, runner);
  ASSERT_TRUE(write_file(binary_, "a wrapper put here later").is_ok());
  EvalResult r = best();
  evaluator.sanitize(r);
  EXPECT_EQ(runner.calls(), 0u);
  ASSERT_EQ(r.flags.size(), 1u);
  EXPECT_EQ(r.flags[0]["flag"], "sanitizer_incomplete");
  EXPECT_FALSE(r.suspect());
  EXPECT_CONTAINS(r.flags[0]["detail"].get<std::string>(), "changed on disk");
}

}  // namespace
}  // namespace kf
