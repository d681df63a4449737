#include "eval/multi_arch.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kf {
namespace {

EvalResult correct_on(const std::string& arch, double speedup, int shapes,
                      std::optional<SpeedupInterval> interval = std::nullopt) {
  EvalResult r;
  r.arch = arch;
  r.verdict = kCorrect;
  r.reason = "all checks passed";
  r.speedup = speedup;
  r.speedup_interval = interval;
  for (int i = 0; i < shapes; ++i) r.timings["shape" + std::to_string(i)].median_ms = 1.0 + i;
  r.eval_log = "log of " + arch + "\n";
  r.build_s = 1;
  r.test_s = 2;
  return r;
}

TEST(ArchTarget, CudaAndOpenClFormsSelectTheDeviceThroughTheHarnessEnvironment) {
  auto cuda = parse_arch_target(" h100/1 = cuda:1 ");
  ASSERT_TRUE(cuda.is_ok()) << cuda.message();
  EXPECT_EQ(cuda->arch, "h100/1");
  EXPECT_EQ(cuda->spec, "cuda:1");
  ASSERT_EQ(cuda->env.size(), 1u);
  EXPECT_EQ(cuda->env[0], (std::pair<std::string, std::string>{"CUDA_VISIBLE_DEVICES", "1"}));

  auto ocl = parse_arch_target("cpu=OpenCL:portable:2");
  ASSERT_TRUE(ocl.is_ok()) << ocl.message();
  ASSERT_EQ(ocl->env.size(), 2u);
  EXPECT_EQ(ocl->env[0], (std::pair<std::string, std::string>{"KF_OPENCL_PLATFORM", "portable"}));
  EXPECT_EQ(ocl->env[1], (std::pair<std::string, std::string>{"KF_OPENCL_DEVICE", "2"}));

  auto platform_only = parse_arch_target("h200=opencl:NVIDIA");
  ASSERT_TRUE(platform_only.is_ok());
  EXPECT_EQ(platform_only->env.size(), 1u);
}

TEST(ArchTarget, MalformedEntriesNameTheEntryAndTheForms) {
  for (const char* entry : {"h100", "=cuda:0", "h100=cuda", "h100=cuda:x", "h100=cuda:0:1",
                            "cpu=opencl", "cpu=opencl:portable:first", "cpu=vulkan:0"}) {
    auto t = parse_arch_target(entry);
    ASSERT_FALSE(t.is_ok()) << entry;
    EXPECT_NE(t.message().find(std::string("'") + entry + "'"), std::string::npos) << t.message();
    EXPECT_NE(t.message().find("NAME=opencl:PLATFORM[:DEVICE]"), std::string::npos);
  }
}

TEST(ArchTarget, LabelIsNotPartOfTheProfileName) {
  EXPECT_EQ(arch_profile_name("cpu/basic"), "cpu");
  EXPECT_EQ(arch_profile_name("h100"), "h100");
}

TEST(MergeArchResults, SpeedupIsTheGeometricMeanOverEveryArchAndShape) {
  // 3 shapes at 2x on one arch and 1 shape at 0.5x on the other: over the 4 (arch, shape)
  // pairs the mean of the logs is (3 ln 2 + ln 0.5) / 4 = ln 2 / 2.
  EvalResult m = merge_arch_results({correct_on("a", 2.0, 3), correct_on("b", 0.5, 1)});
  EXPECT_EQ(m.verdict, kCorrect);
  ASSERT_TRUE(m.speedup.has_value());
  EXPECT_NEAR(*m.speedup, std::sqrt(2.0), 1e-12);
  EXPECT_NE(m.reason.find("per arch: a 2x, b 0.5x"), std::string::npos) << m.reason;
  EXPECT_DOUBLE_EQ(m.fitness, double(kCorrect) + std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(m.build_s, 2);
  EXPECT_DOUBLE_EQ(m.test_s, 4);
  ASSERT_EQ(m.per_arch.size(), 2u);
  nlohmann::json runtimes = arch_runtimes_json(m, "a,b");
  EXPECT_TRUE(runtimes.contains("a"));
  EXPECT_TRUE(runtimes.contains("b"));
  EXPECT_EQ(runtimes["a"].size(), 3u);
  EXPECT_NE(m.eval_log.find("== arch a: correct, speedup 2.000x\nlog of a\n"), std::string::npos)
      << m.eval_log;
  EXPECT_NE(m.eval_log.find("== arch b: correct, speedup 0.500x\nlog of b\n"), std::string::npos);
}

TEST(MergeArchResults, IntervalHoldsForAllArchsAtOnce) {
  EvalResult m =
      merge_arch_results({correct_on("a", 2.0, 1, SpeedupInterval{2.0, 1.0, 4.0, 0.95, 10}),
                          correct_on("b", 2.0, 1, SpeedupInterval{2.0, 1.5, 3.0, 0.95, 12})});
  ASSERT_TRUE(m.speedup_interval.has_value());
  EXPECT_NEAR(m.speedup_interval->lo, std::sqrt(1.0 * 1.5), 1e-12);
  EXPECT_NEAR(m.speedup_interval->hi, std::sqrt(4.0 * 3.0), 1e-12);
  EXPECT_NEAR(m.speedup_interval->confidence, 0.90, 1e-12);  // union bound
  EXPECT_EQ(m.speedup_interval->batches, 22);

  // An arch with one pair has an unbounded interval: so has the mean.
  EvalResult open =
      merge_arch_results({correct_on("a", 2.0, 1, SpeedupInterval{2.0, 0.0, INFINITY, 0.95, 1}),
                          correct_on("b", 2.0, 1, SpeedupInterval{2.0, 1.5, 3.0, 0.95, 12})});
  ASSERT_TRUE(open.speedup_interval.has_value());
  EXPECT_EQ(open.speedup_interval->lo, 0.0);
  EXPECT_TRUE(std::isinf(open.speedup_interval->hi));

  // An arch without an interval leaves the mean without one (never a made-up bound).
  EvalResult none = merge_arch_results(
      {correct_on("a", 2.0, 1), correct_on("b", 2.0, 1, SpeedupInterval{2.0, 1.5, 3.0, 0.95, 12})});
  EXPECT_FALSE(none.speedup_interval.has_value());
  EXPECT_TRUE(none.speedup.has_value());
}

TEST(MergeArchResults, VerdictIsTheWorstWithThatArchsReason) {
  EvalResult wrong = correct_on("b", 0, 1);
  wrong.verdict = kWrongValues;
  wrong.speedup.reset();
  wrong.reason = "output 'y' outside tolerance";
  EvalResult crash = correct_on("c", 0, 1);
  crash.verdict = kRuntimeError;
  crash.speedup.reset();
  crash.reason = "device fault";
  crash.flags.push_back({{"flag", "out_of_bounds_write"}, {"detail", "past y"}, {"suspect", true}});
  EvalResult m = merge_arch_results({correct_on("a", 3.0, 2), wrong, crash});
  EXPECT_EQ(m.verdict, kRuntimeError);
  EXPECT_EQ(m.reason, "on c: device fault");
  EXPECT_FALSE(m.speedup.has_value());
  EXPECT_DOUBLE_EQ(m.fitness, kRuntimeError);
  ASSERT_EQ(m.flags.size(), 1u);
  EXPECT_EQ(m.flags[0].value("detail", ""), "c: past y");
  EXPECT_TRUE(m.suspect());

  // A correct but suspect arch keeps the merged kernel from counting as a win.
  EvalResult flagged = correct_on("b", 50.0, 1);
  flagged.flags.push_back({{"flag", "implausible_speedup"}, {"detail", "50x"}, {"suspect", true}});
  EvalResult f = merge_arch_results({correct_on("a", 1.0, 1), flagged});
  EXPECT_EQ(f.verdict, kCorrect);
  EXPECT_DOUBLE_EQ(f.fitness, kCorrect);
}

TEST(MergeArchResults, EnvironmentErrorOfAnyArchIsKept) {
  EvalResult broken = correct_on("b", 1.0, 1);
  broken.environment_error = "device lost";
  EvalResult m = merge_arch_results({correct_on("a", 1.0, 1), broken});
  EXPECT_EQ(m.environment_error, "b: device lost");
}

TEST(MergeArchResults, OneArchKeepsItsOwnRuntimes) {
  EvalResult r = correct_on("h100", 1.5, 2);
  nlohmann::json runtimes = arch_runtimes_json(r, "h100");
  ASSERT_TRUE(runtimes.contains("h100"));
  EXPECT_EQ(runtimes["h100"].size(), 2u);
}

}  // namespace
}  // namespace kf
