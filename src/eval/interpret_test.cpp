// Tests for turning a test child's outcome into a verdict.
#include "eval/interpret.h"

#include <gtest/gtest.h>

namespace kf {
namespace {

ProcessResult exited(int code) {
  ProcessResult p;
  p.started = true;
  p.exit_code = code;
  p.wall_s = 1.0;
  return p;
}

nlohmann::json harness_result(const std::string& status, const std::string& reason) {
  return {{"format", "kernelfoundry-harness-result"},
          {"version", 1},
          {"status", status},
          {"reason", reason},
          {"stats",
           {{"n=1024",
             {{"median_ms", 2.0}, {"mean_ms", 2.1}, {"min_ms", 1.9}, {"std_ms", 0.1}, {"n", 12}}}}},
          {"timings", {{"n=1024", {2.0, 2.1, 1.9}}}},
          {"flags",
           nlohmann::json::array({{{"flag", "nondeterministic"}, {"detail", "bits differ"}}})}};
}

}  // namespace

TEST(Interpret, PassIsCorrectWithTimings) {
  EvalResult r;
  interpret_test_run(exited(0), harness_result("pass", ""), r);
  EXPECT_EQ(r.verdict, kCorrect);
  ASSERT_EQ(r.timings.count("n=1024"), 1u);
  EXPECT_DOUBLE_EQ(r.timings["n=1024"].median_ms, 2.0);
  EXPECT_EQ(r.timings["n=1024"].samples_ms.size(), 3u);
  ASSERT_EQ(r.flags.size(), 1u);
  EXPECT_FALSE(r.flags[0]["suspect"].get<bool>());
}

TEST(Interpret, StatusesMapToTheLadder) {
  EvalResult wrong, shape, error, compile;
  interpret_test_run(exited(1), harness_result("wrong", "output 'y' mismatches"), wrong);
  EXPECT_EQ(wrong.verdict, kWrongValues);
  EXPECT_EQ(wrong.reason, "output 'y' mismatches");
  interpret_test_run(exited(1), harness_result("shape_mismatch", ""), shape);
  EXPECT_EQ(shape.verdict, kShapeMismatch);
  interpret_test_run(exited(2), harness_result("error", "CUDA error: illegal address"), error);
  EXPECT_EQ(error.verdict, kRuntimeError);
  interpret_test_run(exited(2), harness_result("error", "OpenCL program build failed: softmax.cl"),
                     compile);
  EXPECT_EQ(compile.verdict, kCompileError);
}

TEST(Interpret, OpenClBuildFailureInTheChildIsACompileError) {
  // The reason as the OpenCL harness writes it; error_kind says what it was.
  nlohmann::json result = harness_result(
      "error",
      "correctness failed on shape rows=1,cols=1 seed 1 call 1: OpenCL build of 'softmax.cl' "
      "failed (CL_BUILD_PROGRAM_FAILURE)");
  result["error_kind"] = "compile";
  EvalResult r;
  interpret_test_run(exited(2), result, r);
  EXPECT_EQ(r.verdict, kCompileError);
  EXPECT_NE(r.reason.find("OpenCL build of 'softmax.cl' failed"), std::string::npos);
}

TEST(Interpret, KillsAndCrashesOverrideAPassingResultFile) {
  ProcessResult crashed = exited(-1);
  crashed.term_signal = 11;
  EvalResult r;
  interpret_test_run(crashed, harness_result("pass", ""), r);
  EXPECT_EQ(r.verdict, kRuntimeError);
  EXPECT_NE(r.reason.find("crashed"), std::string::npos);
  EXPECT_NE(r.reason.find("after passing the correctness phase"), std::string::npos);

  ProcessResult hung = exited(-1);
  hung.timed_out = true;
  hung.limit_s = 5;
  EvalResult h;
  interpret_test_run(hung, nullptr, h);
  EXPECT_EQ(h.verdict, kRuntimeError);
  EXPECT_NE(h.reason.find("timed out after 5 s"), std::string::npos) << h.reason;
}

TEST(Interpret, NoResultFile) {
  EvalResult r;
  interpret_test_run(exited(3), nullptr, r);
  EXPECT_EQ(r.verdict, kRuntimeError);
  EXPECT_NE(r.reason.find("no result file"), std::string::npos);
}

TEST(Interpret, GeomeanSpeedup) {
  std::map<std::string, ShapeTiming> ref, cand;
  ref["a"].median_ms = 4;
  ref["b"].median_ms = 1;
  cand["a"].median_ms = 1;  // 4x
  cand["b"].median_ms = 1;  // 1x
  auto s = geomean_speedup(ref, cand);
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(*s, 2.0, 1e-9);
  EXPECT_FALSE(geomean_speedup({}, cand).has_value());
}

TEST(Interpret, MalformedValuesInTheResultFileAreSkippedNotThrown) {
  // The result file is written inside the candidate's process: any shape must give a verdict.
  nlohmann::json hostile = {{"status", 5},
                            {"reason", {1, 2}},
                            {"phase_seconds", "none"},
                            {"stats", {{"s", {{"median_ms", "fast"}, {"n", "many"}}}, {"t", 3}}},
                            {"timings", {{"s", {1.5, "a", nullptr}}, {"t", "x"}}},
                            {"flags", {1, {{"flag", 2}}, {{"flag", "x"}, {"detail", {1}}}}},
                            {"sampled_ms_total", "lots"}};
  EvalResult r;
  EXPECT_NO_THROW(interpret_test_run(exited(0), hostile, r));
  EXPECT_EQ(r.verdict, kRuntimeError);
  ASSERT_EQ(r.timings.count("s"), 1u);
  EXPECT_EQ(r.timings["s"].median_ms, 0.0);
  EXPECT_EQ(r.timings["s"].samples_ms, std::vector<double>{1.5});
  ASSERT_EQ(r.flags.size(), 1u);
  EXPECT_EQ(r.flags[0]["detail"], "");
  EXPECT_EQ(json_number(hostile, "sampled_ms_total"), 0.0);
}

}  // namespace kf

namespace kf {
namespace {

EvalResult side_by_side(double lo, double hi, bool busy) {
  EvalResult r;
  r.verdict = kCorrect;
  r.speedup = (lo + hi) / 2;
  r.speedup_interval = SpeedupInterval{*r.speedup, lo, hi, 0.95, 20};
  if (busy) add_flag(r, "machine_busy", "some task waited for a CPU 40% of the time", false);
  return r;
}

TEST(Interpret, OnlyAFasterIntervalOnABusyMachineIsMeasuredAgain) {
  EXPECT_TRUE(faster_on_a_busy_machine(side_by_side(1.04, 1.31, true)));
  EXPECT_FALSE(faster_on_a_busy_machine(side_by_side(1.04, 1.31, false)));  // idle: it stands
  EXPECT_FALSE(faster_on_a_busy_machine(side_by_side(0.98, 1.10, true)));   // holds 1.00
  EXPECT_FALSE(faster_on_a_busy_machine(side_by_side(0.84, 0.97, true)));   // slower
  EvalResult wrong = side_by_side(1.5, 1.6, true);
  wrong.verdict = kWrongValues;
  EXPECT_FALSE(faster_on_a_busy_machine(wrong));
  EvalResult alone = side_by_side(1.5, 1.6, true);
  alone.speedup_interval.reset();  // not side by side: no interval to doubt
  EXPECT_FALSE(faster_on_a_busy_machine(alone));
}

}  // namespace
}  // namespace kf
