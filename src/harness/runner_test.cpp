// The protocol end to end on the host backend: tiny problems run in-process through kf::main,
// each candidate misbehaving in one way the harness must catch.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "harness/dump.h"
#include "harness/test_util.h"
#include "kernelfoundry/harness.h"

namespace kf = kernelfoundry;
namespace fs = std::filesystem;
using kf::testing::quick_benchmark_args;
using kf::testing::run_main;

namespace {

enum class Mode {
  Correct,
  NoWrite,
  ModifyInput,
  FirstCallOnly,
  WritePastEnd,
  Throws,
  SlightlyWrong,
  Nondeterministic,
  WrongCount,
  WrongOnceTimed,  // correct for the correctness phase, wrong from the 4th call on
};

// y = x + 1 over n floats.
struct AddOne : kf::Problem {
  Mode mode = Mode::Correct;
  int candidate_calls = 0;

  void setup(kf::Case& c) override {
    long n = c.dim("n");
    c.input("x", kf::f32, n, kf::uniform(-1, 1));
    c.output("y", kf::f32, n, kf::tolerance(1e-6, 1e-6));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    long n = c.dim("n");
    float* x = c.buffer("x").host<float>();
    float* y = c.buffer("y").host<float>();
    if (impl == kf::Impl::Reference) {
      for (long i = 0; i < n; ++i) y[i] = x[i] + 1;
      return;
    }
    int call = ++candidate_calls;
    switch (mode) {
      case Mode::NoWrite:
        return;
      case Mode::ModifyInput:
        x[0] = 42;
        break;
      case Mode::FirstCallOnly:
        if (call % 2 == 0) return;
        break;
      case Mode::WritePastEnd:
        y[n + 2] = 0;
        break;  // inside the guard region
      case Mode::Throws:
        throw std::runtime_error("boom in candidate");
      case Mode::WrongCount:
        c.buffer("y").set_count(n - 1);
        break;
      case Mode::WrongOnceTimed:
        if (call > 4) return;
        break;
      default:
        break;
    }
    for (long i = 0; i < n; ++i) y[i] = x[i] + 1;
    if (mode == Mode::SlightlyWrong) y[n / 2] += 0.5f;
    if (mode == Mode::Nondeterministic && call % 2 == 0) y[0] += 1e-7f;
  }
};

kf::Suite suite() {
  kf::Suite s;
  s.backend = kf::Backend::Host;
  s.correctness = {{{"n", 7}}, {{"n", 1000}}};
  s.benchmarks = {kf::benchmark("add_one", {{{"n", 4096}}, {{"n", 5000}}})};
  return s;
}

kf::testing::RunResult correctness(Mode mode, std::vector<std::string> extra = {}) {
  AddOne p;
  p.mode = mode;
  std::vector<std::string> args = {"--phase", "correctness", "--seeds", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_main(p, suite(), args);
}

bool has_flag(const nlohmann::json& j, const std::string& flag) {
  for (const auto& f : j["flags"]) {
    if (f["flag"] == flag) return true;
  }
  return false;
}

}  // namespace

TEST(HostRunner, CorrectCandidatePassesEveryShapeSeedAndCall) {
  auto r = correctness(Mode::Correct);
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text;
  EXPECT_EQ(r.json["format"], "kernelfoundry-harness-result");
  EXPECT_EQ(r.json["status"], "pass");
  EXPECT_EQ(r.json["impl"], "candidate");
  EXPECT_EQ(r.json["backend"], "host");
  EXPECT_TRUE(r.json["finished"].get<bool>());
  // 4 shapes (2 correctness + 2 benchmark) x 2 seeds x 2 calls x 1 output.
  ASSERT_EQ(r.json["cases"].size(), 16u);
  const auto& first = r.json["cases"][0];
  EXPECT_EQ(first["shape"], "n=7");
  EXPECT_EQ(first["seed"], 1);
  EXPECT_EQ(first["call"], 1);
  EXPECT_EQ(first["output"], "y");
  EXPECT_EQ(first["total"], 7);
  EXPECT_EQ(first["mismatches"], 0);
  EXPECT_DOUBLE_EQ(first["cosine"].get<double>(), 1.0);
  EXPECT_EQ(r.json["cases"][15]["shape"], "n=5000");
  EXPECT_TRUE(r.json["phase_seconds"].contains("correctness"));
  EXPECT_FALSE(has_flag(r.json, "nondeterministic"));
}

TEST(HostRunner, UntouchedOutputGetsThePoisonMessage) {
  auto r = correctness(Mode::NoWrite);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.json["status"], "wrong");
  std::string reason = r.json["reason"];
  EXPECT_NE(reason.find("output 'y' was never written (still holds the poison pattern)"),
            std::string::npos)
      << reason;
  // Stops at the first failing case.
  EXPECT_EQ(r.json["cases"].size(), 1u);
}

TEST(HostRunner, ModifiedInputFails) {
  auto r = correctness(Mode::ModifyInput);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.json["status"], "wrong");
  EXPECT_NE(r.json["reason"].get<std::string>().find("modified input 'x'"), std::string::npos);
  EXPECT_TRUE(has_flag(r.json, "input_modified"));
}

TEST(HostRunner, CorrectOnlyOnFirstCallFailsOnCallTwo) {
  auto r = correctness(Mode::FirstCallOnly);
  EXPECT_EQ(r.exit_code, 1);
  const auto& last = r.json["cases"].back();
  EXPECT_EQ(last["call"], 2);
  EXPECT_EQ(last["status"], "wrong");
  EXPECT_NE(last["message"].get<std::string>().find("never written"), std::string::npos);
}

TEST(HostRunnerDeathTest, WritePastTheEndHitsTheGuardPage) {
  EXPECT_DEATH(
      correctness(Mode::WritePastEnd),
      "while running the candidate on shape n=7 seed 1 \\(call 1\\): read or wrote past the "
      "end of buffer 'y' \\(28 bytes\\): the access at byte offset \\+8 beyond its end hit a "
      "guard page");
}

TEST(HostRunner, ExceptionInRunIsAnError) {
  auto r = correctness(Mode::Throws);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.json["error_kind"], "exception");
  EXPECT_NE(r.json["reason"].get<std::string>().find("boom in candidate"), std::string::npos);
}

TEST(HostRunner, WrongValueReportsIndexAndValues) {
  auto r = correctness(Mode::SlightlyWrong);
  EXPECT_EQ(r.exit_code, 1);
  const auto& last = r.json["cases"].back();
  EXPECT_EQ(last["mismatches"], 1);
  EXPECT_EQ(last["first_bad"], 3);  // n = 7: index 3
  EXPECT_NEAR(last["actual"].get<double>() - last["expected"].get<double>(), 0.5, 1e-6);
  EXPECT_NE(r.stdout_text.find("FAIL correctness failed on shape n=7 seed 1 call 1"),
            std::string::npos)
      << r.stdout_text;
}

TEST(HostRunner, BitwiseDifferenceBetweenPassingCallsIsFlaggedOnly) {
  auto r = correctness(Mode::Nondeterministic);
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text;
  EXPECT_TRUE(has_flag(r.json, "nondeterministic"));
}

TEST(HostRunner, CountDifferentFromReferenceIsShapeMismatch) {
  auto r = correctness(Mode::WrongCount);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.json["status"], "shape_mismatch");
}

TEST(HostRunner, RefModeChecksTheReferenceAgainstItself) {
  AddOne p;
  p.mode = Mode::Throws;  // the candidate is never called
  auto r = run_main(p, suite(), {"--ref", "--phase", "correctness", "--seeds", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text;
  EXPECT_EQ(r.json["impl"], "reference");
  EXPECT_EQ(p.candidate_calls, 0);
}

TEST(HostRunner, BenchmarkTimesEveryShape) {
  AddOne p;
  std::vector<std::string> args = quick_benchmark_args();
  args.insert(args.end(), {"--seeds", "1"});
  auto r = run_main(p, suite(), args);
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text;
  for (const char* shape : {"n=4096", "n=5000"}) {
    ASSERT_TRUE(r.json["timings"].contains(shape)) << shape;
    const auto& stats = r.json["stats"][shape];
    EXPECT_GE(stats["n"].get<long>(), 3);
    EXPECT_LE(stats["n"].get<long>(), 20);
    EXPECT_EQ(r.json["timings"][shape].size(), stats["n"].get<std::size_t>());
    EXPECT_GT(stats["median_ms"].get<double>(), 0);
    EXPECT_EQ(stats["timer"], "host");  // the host backend has no device clock
    EXPECT_DOUBLE_EQ(stats["bytes"].get<double>(), std::string(shape) == "n=4096" ? 32768 : 40000);
  }
  double total = 0;
  for (const auto& [shape, samples] : r.json["timings"].items()) {
    for (const auto& ms : samples) total += ms.get<double>();
  }
  EXPECT_NEAR(r.json["sampled_ms_total"].get<double>(), total, 1e-9);
  EXPECT_NE(r.stdout_text.find("median_ms"), std::string::npos);
  // Where the phase's time went; the calls' share is at least what was sampled.
  for (const char* step :
       {"benchmark.setup", "benchmark.perturb", "benchmark.calls", "benchmark.after"}) {
    ASSERT_TRUE(r.json["phase_seconds"].contains(step)) << step;
    EXPECT_GE(r.json["phase_seconds"][step].get<double>(), 0.0) << step;
  }
  EXPECT_GE(r.json["phase_seconds"]["benchmark.calls"].get<double>() * 1e3, total);
  EXPECT_LE(r.json["phase_seconds"]["benchmark.calls"].get<double>(),
            r.json["phase_seconds"]["benchmark"].get<double>());
  // The whole process: main's own time covers the phase, and the device's release is timed.
  ASSERT_TRUE(r.json["phase_seconds"].contains("process.main"));
  ASSERT_TRUE(r.json["phase_seconds"].contains("device.close"));
  EXPECT_GE(r.json["phase_seconds"]["process.main"].get<double>(),
            r.json["phase_seconds"]["benchmark"].get<double>());
}

TEST(HostRunner, WrongAfterTimingLoopIsCaught) {
  AddOne p;
  p.mode = Mode::WrongOnceTimed;
  std::vector<std::string> args = quick_benchmark_args();
  args.insert(args.end(), {"--phase", "benchmark"});
  auto r = run_main(p, suite(), args);
  EXPECT_EQ(r.exit_code, 1) << r.stdout_text;
  EXPECT_TRUE(has_flag(r.json, "wrong_after_timing"));
  EXPECT_NE(r.json["reason"].get<std::string>().find("wrong after timing loop"), std::string::npos);
}

TEST(HostRunner, RooflineFlag) {
  AddOne p;
  std::vector<std::string> args = quick_benchmark_args();
  args.insert(args.end(), {"--phase", "benchmark", "--peak-gbps", "0.000001"});
  auto r = run_main(p, suite(), args);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(has_flag(r.json, "faster_than_roofline"));
}

TEST(HostRunner, SuiteNeedsExactlyOneBenchmark) {
  AddOne p;
  kf::Suite s = suite();
  s.benchmarks.push_back(kf::benchmark("second", {{{"n", 1}}}));
  auto r = run_main(p, s, {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.json["reason"].get<std::string>().find("exactly one benchmark"), std::string::npos);
  s.benchmarks.clear();
  EXPECT_EQ(run_main(p, s, {}).exit_code, 2);
}

TEST(HostRunner, BadArgumentsStillWriteAResult) {
  AddOne p;
  auto r = run_main(p, suite(), {"--sedes", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.json["error_kind"], "usage");
}

TEST(HostRunner, ListPrintsShapes) {
  AddOne p;
  auto r = run_main(p, suite(), {"--list"});
  EXPECT_EQ(r.exit_code, 0);
  auto j = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(j["benchmark"], "add_one");
  EXPECT_EQ(j["benchmark_shapes"][1]["id"], "n=5000");
  EXPECT_EQ(j["checked_shapes"].size(), 4u);
}

// Parameters from --params and --template-params (the latter wins).
struct Params : kf::Problem {
  long block = 0;
  double alpha = 0;
  std::string name;
  std::string defines;
  void setup(kf::Case& c) override {
    block = c.param("BLOCK", 1);
    alpha = c.param("ALPHA", 0.0);
    name = c.param("NAME", "none");
    defines = c.param_defines();
    c.output("y", kf::i32, 1);
  }
  void run(kf::Case& c, kf::Impl) override { *c.buffer("y").host<int>() = 3; }
};

TEST(HostRunner, RuntimeAndTemplateParameters) {
  std::string dir = kf::testing::make_temp_dir();
  kf::testing::write_text(dir + "/p.json", R"({"BLOCK": 64, "ALPHA": 0.5, "NAME": "x"})");
  Params p;
  kf::Suite s;
  s.benchmarks = {kf::benchmark("b", {{{"n", 1}}})};
  auto r = run_main(p, s,
                    {"--phase", "correctness", "--params", dir + "/p.json", "--template-params",
                     R"({"BLOCK": 128})"});
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text;
  EXPECT_EQ(p.block, 128);
  EXPECT_DOUBLE_EQ(p.alpha, 0.5);
  EXPECT_EQ(p.name, "x");
  EXPECT_EQ(p.defines, "-DBLOCK=128");
  EXPECT_EQ(r.json["template_params"]["BLOCK"], 128);
}

// In-out buffers are reset to their seeded values before every call.
struct Scale : kf::Problem {
  bool skip = false;
  void setup(kf::Case& c) override {
    c.inout("v", kf::f32, c.dim("n"), kf::uniform(1, 2), kf::tolerance(1e-6));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    if (impl == kf::Impl::Candidate && skip) return;
    float* v = c.buffer("v").host<float>();
    for (long i = 0; i < c.dim("n"); ++i) v[i] *= 2;
  }
};

TEST(HostRunner, InOutBuffers) {
  Scale p;
  kf::Suite s;
  s.benchmarks = {kf::benchmark("scale", {{{"n", 100}}})};
  auto r = run_main(p, s, {"--phase", "correctness"});
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text;  // would double twice without the reset
  p.skip = true;
  r = run_main(p, s, {"--phase", "correctness"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.json["reason"].get<std::string>().find("still holds the initial values"),
            std::string::npos);
}

// Declaration mistakes in the task are reported as task errors with a clear message.
struct Misdeclared : kf::Problem {
  void setup(kf::Case& c) override {
    c.input("x", kf::f32, 4, kf::normal(0, 1));
    c.output("y", kf::f32, 4);
  }
  void run(kf::Case& c, kf::Impl) override { c.buffer("z"); }
};

TEST(HostRunner, UnknownBufferNamesTheDeclaredOnes) {
  Misdeclared p;
  kf::Suite s;
  s.benchmarks = {kf::benchmark("b", {{{"n", 1}}})};
  auto r = run_main(p, s, {"--phase", "correctness"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.json["reason"].get<std::string>().find("no buffer named 'z' (declared: x, y)"),
            std::string::npos)
      << r.json["reason"];
}

TEST(HostRunner, LargeShapesGetOneCorrectnessSeedAndTheBreakdownIsReported) {
  // n=4096 and n=5000 floats: 3 buffers of 16-20 KB each, over a 0.04 MiB threshold; n=7 and
  // n=1000 stay under it and keep both seeds.
  auto r = correctness(Mode::Correct, {"--large-shape-mib", "0.04"});
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text;
  std::map<std::string, std::set<int>> seeds;
  for (const auto& c : r.json["cases"]) seeds[c["shape"]].insert(c["seed"].get<int>());
  EXPECT_EQ(seeds["n=7"], (std::set<int>{1, 2}));
  EXPECT_EQ(seeds["n=1000"], (std::set<int>{1, 2}));
  EXPECT_EQ(seeds["n=4096"], (std::set<int>{1}));
  EXPECT_EQ(seeds["n=5000"], (std::set<int>{1}));
  EXPECT_NE(
      r.stdout_text.find("n=5000  y: max_abs 0 max_rel 0 cosine 1.000000  (large: seed 1 only)"),
      std::string::npos)
      << r.stdout_text;
  for (const char* step :
       {"correctness.setup", "correctness.reference", "correctness.calls", "correctness.checks"}) {
    ASSERT_TRUE(r.json["phase_seconds"].contains(step)) << step;
    EXPECT_GE(r.json["phase_seconds"][step].get<double>(), 0.0);
  }
  // Without the threshold every shape gets every seed.
  auto all = correctness(Mode::Correct, {"--large-shape-mib", "0"});
  EXPECT_EQ(all.json["cases"].size(), 16u);
}

TEST(HostRunner, BenchmarkRecheckUsesASeedOfItsOwn) {
  AddOne p;
  std::vector<std::string> args = quick_benchmark_args();
  args.insert(args.end(), {"--phase", "benchmark", "--seeds", "2"});
  auto r = run_main(p, suite(), args);
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text;
  bool any = false;
  for (const auto& c : r.json["cases"]) {
    if (c["phase"] != "benchmark") continue;
    any = true;
    EXPECT_EQ(c["seed"], 3);
  }
  EXPECT_TRUE(any);
}

TEST(HostRunner, NoBenchmarkShapesLeavesThemOutOfTheCorrectnessPhase) {
  auto all = correctness(Mode::Correct);
  auto listed = correctness(Mode::Correct, {"--no-benchmark-shapes"});
  ASSERT_EQ(listed.exit_code, 0) << listed.stdout_text;
  std::set<std::string> with, without;
  for (const auto& c : all.json["cases"]) with.insert(c["shape"].get<std::string>());
  for (const auto& c : listed.json["cases"]) without.insert(c["shape"].get<std::string>());
  EXPECT_TRUE(with.count("n=4096") && with.count("n=5000"));
  EXPECT_EQ(without, (std::set<std::string>{"n=7", "n=1000"}));
}

namespace {

// y = x + 1, correct, and from call 4 on every fourth call leaves a thread behind: one that
// keeps computing (work handed off past the call) or one that only waits (as the CUDA and CUPTI
// runtimes' own helper threads do, started on their own after hundreds of calls).
struct LeavesThread : AddOne {
  bool working = false;
  void run(kf::Case& c, kf::Impl impl) override {
    AddOne::run(c, impl);
    if (impl != kf::Impl::Candidate || candidate_calls < 4 || candidate_calls % 4 != 0) return;
    if (working) {
      std::thread([] {
        auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
        volatile unsigned long spin = 0;
        while (std::chrono::steady_clock::now() < end) spin = spin + 1;
      }).detach();
    } else {
      std::thread([] { std::this_thread::sleep_for(std::chrono::seconds(30)); }).detach();
    }
  }
};

// The benchmark phase as the split judge runs it (--dump-dir, which ends the process), in a
// forked child; its exit code and result.
std::pair<int, nlohmann::json> benchmark_in_child(bool working) {
  std::string dir = kf::testing::make_temp_dir();
  std::string result = dir + "/result.json";
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    LeavesThread p;
    p.working = working;
    std::vector<std::string> args = quick_benchmark_args();
    args.insert(args.end(), {"--phase", "benchmark", "--max-samples", "40", "--out", result,
                             "--dump-dir", dir + "/outputs"});
    run_main(p, suite(), args);
    ::_exit(99);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ifstream f(result);
  std::stringstream text;
  text << f.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          nlohmann::json::parse(text.str(), nullptr, false)};
}

}  // namespace

TEST(HostRunner, AThreadStillWorkingAfterTheCallFailsIt) {
  auto [code, json] = benchmark_in_child(true);
  EXPECT_NE(code, 0);
  ASSERT_TRUE(json.is_object());
  EXPECT_TRUE(has_flag(json, "thread_outlived_call")) << json.dump();
}

namespace {

// y = x + 1 over the first n / 2 + calls elements (at most n), that count set as produced: a
// task whose output length grows from call to call, so each picked timed call produced more than
// the ones picked before it.
struct GrowingCount : kf::Problem {
  long calls = 0;
  void setup(kf::Case& c) override {
    c.input("x", kf::f32, c.dim("n"), kf::uniform(-1, 1));
    c.output("y", kf::f32, c.dim("n"), kf::tolerance(1e-6, 1e-6));
  }
  void run(kf::Case& c, kf::Impl) override {
    long n = c.dim("n"), produced = std::min(n, n / 2 + ++calls);
    const float* x = c.buffer("x").host<float>();
    float* y = c.buffer("y").host<float>();
    for (long i = 0; i < produced; ++i) y[i] = x[i] + 1;
    c.buffer("y").set_count(produced);
  }
};

}  // namespace

// A picked timed call's outputs are kept with the count that call produced, whatever the calls
// picked before or after it produced.
TEST(HostRunner, PickedTimedCallsKeepTheCountTheyProduced) {
  std::string dir = kf::testing::make_temp_dir();
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    GrowingCount p;
    std::vector<std::string> args = quick_benchmark_args();
    args.insert(args.end(), {"--phase", "benchmark", "--min-samples", "60", "--max-samples", "60",
                             "--out", dir + "/result.json", "--dump-dir", dir + "/outputs"});
    run_main(p, suite(), args);
    ::_exit(99);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the benchmark child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::vector<kf::DumpEntry> entries;
  std::string err;
  ASSERT_TRUE(kf::read_dump(dir + "/outputs", &entries, &err)) << err;
  int timed = 0;
  for (const kf::DumpEntry& e : entries) {
    if (e.kind != "timed") continue;
    ++timed;
    ASSERT_EQ(e.outputs.size(), 1u);
    long n = e.shape.dims().front().second;
    EXPECT_LT(e.outputs[0].count, n) << e.shape.id() << " call " << e.call;
    std::vector<unsigned char> bytes;
    ASSERT_TRUE(kf::read_dumped(dir + "/outputs", e.outputs[0], &bytes, &err)) << err;
    // Every element the call produced is x + 1 of a perturbed input: none is the poison.
    const float* y = reinterpret_cast<const float*>(bytes.data());
    for (long i = 0; i < e.outputs[0].count; ++i)
      ASSERT_TRUE(std::isfinite(y[i]) && y[i] >= -0.5f && y[i] <= 3.0f)
          << e.shape.id() << " call " << e.call << " element " << i << ": " << y[i];
  }
  EXPECT_GE(timed, 2);
}

TEST(HostRunner, AnIdleThreadLeftByARuntimeIsNotTheCallsWork) {
  auto [code, json] = benchmark_in_child(false);
  ASSERT_TRUE(json.is_object());
  EXPECT_FALSE(has_flag(json, "thread_outlived_call")) << json.dump();
  EXPECT_EQ(code, 0) << json.value("reason", "");
}

namespace {

// y = x + 1, as the combination named by --template-params "MODE" does it: 0 right, 1 throws,
// 2 writes y as x + 2 (wrong values, judged later by the checker), 3 right but also writes into
// its input x on the benchmark shapes (n > 1000). Each setup appends its n to `log`.
struct Swept : kf::Problem {
  std::string log;
  void setup(kf::Case& c) override {
    std::ofstream(log, std::ios::app) << c.dim("n") << "\n";
    c.input("x", kf::f32, c.dim("n"), kf::uniform(-1, 1));
    c.output("y", kf::f32, c.dim("n"), kf::tolerance(1e-6, 1e-6));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    long n = c.dim("n"), mode = impl == kf::Impl::Reference ? 0 : kf::template_param("MODE", 0);
    if (mode == 1) throw std::runtime_error("combination MODE=1 throws");
    const float* x = c.buffer("x").host<float>();
    float* y = c.buffer("y").host<float>();
    for (long i = 0; i < n; ++i) y[i] = x[i] + (mode == 2 ? 2.0f : 1.0f);
    if (mode == 3 && n > 1000) c.buffer("x").host<float>()[n / 2] += 1.0f;
  }
};

// Runs the sweep of `modes` (one combination each) in a forked harness child with its results
// under `dir` (c0.json, c0/, ...) and each setup logged to dir/setups.txt; the child's exit code.
int run_sweep(const std::string& dir, const std::vector<int>& modes) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < modes.size(); ++i)
    list.push_back({{"template_params", {{"MODE", modes[i]}}},
                    {"out", dir + "/c" + std::to_string(i) + ".json"},
                    {"dump_dir", dir + "/c" + std::to_string(i)}});
  kf::testing::write_text(dir + "/sweep.json", list.dump());
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    Swept p;
    p.log = dir + "/setups.txt";
    std::vector<std::string> args = quick_benchmark_args();
    args.insert(args.end(), {"--sweep", dir + "/sweep.json", "--seeds", "1"});
    run_main(p, suite(), args);
    ::_exit(99);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Combination i's result file of a sweep run in `dir`.
nlohmann::json sweep_result(const std::string& dir, int i) {
  std::ifstream f(dir + "/c" + std::to_string(i) + ".json");
  std::stringstream text;
  text << f.rdbuf();
  return nlohmann::json::parse(text.str(), nullptr, false);
}

// The setups logged by a sweep run in `dir`, by shape size n.
std::map<std::string, int> sweep_setups(const std::string& dir) {
  std::ifstream log(dir + "/setups.txt");
  std::map<std::string, int> setups;
  for (std::string line; std::getline(log, line);) ++setups[line];
  return setups;
}

}  // namespace

// --sweep: each combination gets its own result and dump, as its own run would; the benchmark
// shapes' inputs are set up once for all; the sweep stops after a combination's error (the rest
// are left for another child).
TEST(HostRunner, ASweepRunsEachCombinationInTurnAndStopsAfterAnError) {
  std::string dir = kf::testing::make_temp_dir();
  // The sweep ran; each combination has its own verdict.
  EXPECT_EQ(run_sweep(dir, {0, 2, 1, 0}), 0);
  auto read = [&](int i) { return sweep_result(dir, i); };
  nlohmann::json right = read(0), wrong = read(1), error = read(2);
  ASSERT_TRUE(right.is_object() && wrong.is_object() && error.is_object());
  // The candidate's child gives no verdict on values: both hand their outputs over, timed.
  for (const nlohmann::json* r : {&right, &wrong}) {
    EXPECT_EQ((*r)["status"], "pass") << r->dump();
    EXPECT_EQ((*r)["finished"], true);
    EXPECT_EQ((*r)["stats"].size(), 2u) << r->dump();
  }
  EXPECT_EQ(right["template_params"]["MODE"], 0);
  EXPECT_EQ(wrong["template_params"]["MODE"], 2);
  EXPECT_TRUE(fs::exists(dir + "/c0") && fs::exists(dir + "/c1"));
  EXPECT_EQ(error["status"], "error");
  EXPECT_NE(error["reason"].get<std::string>().find("combination MODE=1 throws"), std::string::npos)
      << error.dump();
  // Stopped after the error: the fourth was not begun.
  EXPECT_FALSE(fs::exists(dir + "/c3.json"));
  // The benchmark shapes' cases (timed inputs, fresh inputs after timing) were set up by the
  // first combination and, found intact, served the second: two setups per shape, not four.
  std::map<std::string, int> setups = sweep_setups(dir);
  EXPECT_EQ(setups["4096"], 2);
  EXPECT_EQ(setups["5000"], 2);
  EXPECT_EQ(setups["7"], 3);  // a correctness shape: every combination's own
}

// A combination that writes into its inputs while timed fails (input_modified), and the case it
// wrote into is not served to the next combination, which sets its inputs up again.
TEST(HostRunner, ASweepDoesNotReuseInputsACombinationWroteInto) {
  std::string dir = kf::testing::make_temp_dir();
  EXPECT_EQ(run_sweep(dir, {0, 3, 0}), 0);
  auto read = [&](int i) { return sweep_result(dir, i); };
  nlohmann::json first = read(0), writer = read(1), after = read(2);
  ASSERT_TRUE(first.is_object() && writer.is_object() && after.is_object());
  EXPECT_EQ(first["status"], "pass") << first.dump();
  EXPECT_NE(writer["status"], "pass") << writer.dump();
  EXPECT_TRUE(has_flag(writer, "input_modified")) << writer.dump();
  EXPECT_EQ(after["status"], "pass") << after.dump();
  EXPECT_EQ(after["stats"].size(), 2u) << after.dump();
  // The first combination set up each benchmark shape's two cases; the writer spoiled the timed
  // case of the shape it failed on, so the third set that one up again.
  std::map<std::string, int> setups = sweep_setups(dir);
  EXPECT_EQ(setups["4096"] + setups["5000"], 5)
      << "4096: " << setups["4096"] << ", 5000: " << setups["5000"];
}
