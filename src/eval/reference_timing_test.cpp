// Tests for reference timings kept across jobs: the key, the short re-check's rule, the harness
// arguments of the short run and what the job says about it.
#include "eval/reference_timing.h"

#include <gtest/gtest.h>

namespace kf {
namespace {

// A shape timed as `n` samples spread +-`spread` (relative) around `median_ms`.
ShapeTiming timed(double median_ms, double spread, int n = 40) {
  ShapeTiming t;
  for (int i = 0; i < n; ++i) {
    double step = n > 1 ? 2.0 * i / (n - 1) - 1 : 0;  // -1 .. 1
    t.samples_ms.push_back(median_ms * (1 + spread * step));
  }
  t.median_ms = median_ms;
  t.mean_ms = median_ms;
  t.min_ms = median_ms * (1 - spread);
  t.n = n;
  return t;
}

ReferenceTimingKey full_key() {
  EvalOptions o;
  o.language = Language::kCuda;
  o.arch.name = "h200";
  o.arch.cuda_sm = "sm_90";
  ReferenceTimingKey k = reference_timing_setup("abc123", o);
  nlohmann::json harness = {
      {"backend", "cuda"},
      {"device", "NVIDIA H200"},
      {"harness_version", "0.1.0"},
      {"device_info", {{"arch", "sm_90"}, {"timer", "cupti (libcupti.so.12)"}}}};
  return reference_timing_key(k, harness, "linkkey");
}

TEST(ReferenceTimingKey, TakesWhatTheRunReportedAndTheTimerKindOnly) {
  ReferenceTimingKey k = full_key();
  EXPECT_EQ(k.task_hash, "abc123");
  EXPECT_EQ(k.language, "CUDA");
  EXPECT_EQ(k.gpu_arch, "h200 (sm_90)");
  EXPECT_EQ(k.backend, "cuda");
  EXPECT_EQ(k.device, "NVIDIA H200");
  EXPECT_EQ(k.device_arch, "sm_90");
  EXPECT_EQ(k.timer, "cupti");
  EXPECT_EQ(k.harness_version, "0.1.0");
  EXPECT_EQ(k.build, "linkkey");
  EXPECT_EQ(k.settings.value("time_budget", 0.0), 2.0);
  EXPECT_EQ(k.settings.value("cold_samples", false), true);
}

TEST(ReferenceTimingKey, DigestIsStableAndChangesWithEveryField) {
  ReferenceTimingKey k = full_key();
  EXPECT_EQ(k.digest(), full_key().digest());
  EXPECT_EQ(k.digest().size(), 64u);
  EXPECT_EQ(ReferenceTimingKey::from_json(k.to_json()).digest(), k.digest());
  std::vector<void (*)(ReferenceTimingKey&)> changes = {
      [](ReferenceTimingKey& x) { x.task_hash = "other"; },
      [](ReferenceTimingKey& x) { x.language = "OCL"; },
      [](ReferenceTimingKey& x) { x.gpu_arch = "a100"; },
      [](ReferenceTimingKey& x) { x.settings["time_budget"] = 1.0; },
      [](ReferenceTimingKey& x) { x.settings["cold_samples"] = false; },
      [](ReferenceTimingKey& x) { x.backend = "opencl"; },
      [](ReferenceTimingKey& x) { x.device = "NVIDIA H100"; },
      [](ReferenceTimingKey& x) { x.device_arch = "sm_80"; },
      [](ReferenceTimingKey& x) { x.timer = "events"; },
      [](ReferenceTimingKey& x) { x.harness_version = "0.2.0"; },
      [](ReferenceTimingKey& x) { x.build = "otherlink"; },
      [](ReferenceTimingKey& x) { x.version += 1; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    ReferenceTimingKey c = k;
    changes[i](c);
    EXPECT_NE(c.digest(), k.digest()) << "change " << i;
  }
}

TEST(ReferenceTimingKey, SameSetupIgnoresWhatOnlyTheRunKnows) {
  ReferenceTimingKey k = full_key();
  ReferenceTimingKey other_device = k;
  other_device.device = "NVIDIA H100";
  other_device.build = "x";
  EXPECT_TRUE(k.same_setup(other_device));
  EXPECT_EQ(k.run_differences(other_device), "device, build (compiler, flags or harness library)");
  ReferenceTimingKey other_settings = k;
  other_settings.settings["min_samples"] = 20;
  EXPECT_FALSE(k.same_setup(other_settings));
  // A stored key without a version is from before versions: never the current setup.
  nlohmann::json old = k.to_json();
  old.erase("version");
  EXPECT_FALSE(ReferenceTimingKey::from_json(old).same_setup(k));
}

TEST(ReferenceTimingKey, DeviceNamesThatAreNotUtf8AreEscaped) {
  ReferenceTimingKey k = reference_timing_key({}, {{"device", "GPU\xff"}}, "");
  EXPECT_EQ(k.device, "GPU\\xff");
  EXPECT_EQ(k.digest().size(), 64u);
}

TEST(ReferenceTimings, RoundTripThroughJson) {
  std::map<std::string, ShapeTiming> t = {{"n=1024", timed(0.5, 0.01, 5)}};
  t["n=1024"].std_ms = 0.002;
  auto back = timings_from_json(timings_to_json(t));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_DOUBLE_EQ(back["n=1024"].median_ms, 0.5);
  EXPECT_DOUBLE_EQ(back["n=1024"].std_ms, 0.002);
  EXPECT_EQ(back["n=1024"].n, 5);
  EXPECT_EQ(back["n=1024"].samples_ms, t["n=1024"].samples_ms);
  EXPECT_TRUE(timings_from_json("not an object").empty());
}

TEST(RecheckArgs, ATenthOfTheBudgetWithinBoundsAndFewerSamples) {
  EvalOptions o;  // time_budget 2 s, samples 10..2000
  EXPECT_EQ(recheck_harness_args(o),
            (std::vector<std::string>{"--time-budget", "0.2", "--max-samples", "200"}));
  o.time_budget_s = 10;
  EXPECT_EQ(recheck_harness_args(o)[1], "0.25");
  o.time_budget_s = 0.3;
  EXPECT_EQ(recheck_harness_args(o)[1], "0.1");
  o.time_budget_s = 0.05;  // never above the job's own budget
  EXPECT_EQ(recheck_harness_args(o)[1], "0.05");
  o.min_samples = 300;  // never below min_samples (the harness refuses min > max)
  EXPECT_EQ(recheck_harness_args(o)[3], "300");
}

TEST(Recheck, QuietShapesWithinThreePercentAgree) {
  std::map<std::string, ShapeTiming> kept = {{"a", timed(1.0, 0.001)}, {"b", timed(2.0, 0.001)}};
  std::map<std::string, ShapeTiming> fresh = {{"a", timed(1.02, 0.001, 10)},
                                              {"b", timed(1.99, 0.001, 10)}};
  TimingRecheck r = recheck_timings(kept, fresh);
  EXPECT_TRUE(r.agree) << r.problem;
  ASSERT_EQ(r.shapes.size(), 2u);
  EXPECT_EQ(r.worst_shape, "a");
  EXPECT_NEAR(r.worst_rel_diff, 0.02, 1e-9);
  EXPECT_DOUBLE_EQ(r.shapes[0].tolerance, kRecheckFloor);  // quiet: the floor holds
}

TEST(Recheck, AShapeOffByMoreThanTheToleranceDisagreesAndIsNamed) {
  std::map<std::string, ShapeTiming> kept = {{"a", timed(1.0, 0.001)}, {"b", timed(2.0, 0.001)}};
  std::map<std::string, ShapeTiming> fresh = {{"a", timed(1.0, 0.001, 10)},
                                              {"b", timed(2.15, 0.001, 10)}};
  TimingRecheck r = recheck_timings(kept, fresh);
  EXPECT_FALSE(r.agree);
  EXPECT_EQ(r.worst_shape, "b");
  EXPECT_NEAR(r.worst_rel_diff, 0.075, 1e-9);
  EXPECT_TRUE(r.problem.empty());
}

TEST(Recheck, NoiseWidensTheToleranceUpToTheCeiling) {
  // +-10% spread over 10 re-check samples: the medians' noise is a few percent, so a 6% shift
  // is within 3 x noise; 12% is past the 10% ceiling whatever the noise.
  std::map<std::string, ShapeTiming> kept = {{"a", timed(1.0, 0.10, 40)}};
  TimingRecheck six = recheck_timings(kept, {{"a", timed(1.06, 0.10, 10)}});
  EXPECT_GT(six.shapes[0].tolerance, 0.06);
  EXPECT_LE(six.shapes[0].tolerance, kRecheckCeiling);
  EXPECT_TRUE(six.agree);
  std::map<std::string, ShapeTiming> noisy = {{"a", timed(1.0, 0.9, 40)}};
  TimingRecheck twelve = recheck_timings(noisy, {{"a", timed(1.12, 0.9, 10)}});
  EXPECT_DOUBLE_EQ(twelve.shapes[0].tolerance, kRecheckCeiling);
  EXPECT_FALSE(twelve.agree);
}

TEST(Recheck, TheFloorIsConfigurableAndLiftsTheCeiling) {
  std::map<std::string, ShapeTiming> kept = {{"a", timed(1.0, 0.001)}};
  std::map<std::string, ShapeTiming> fresh = {{"a", timed(1.3, 0.001, 10)}};
  EXPECT_FALSE(recheck_timings(kept, fresh).agree);
  TimingRecheck loose = recheck_timings(kept, fresh, 0.5);
  EXPECT_TRUE(loose.agree);
  EXPECT_DOUBLE_EQ(loose.shapes[0].tolerance, 0.5);
  EXPECT_TRUE(recheck_timings(kept, {{"a", timed(1.02, 0.001, 10)}}, 0.01).agree == false);
}

TEST(Recheck, HalvedKeptMediansDisagree) {
  ShapeTiming halved = timed(1.0, 0.01);
  halved.median_ms = 0.5;
  TimingRecheck r = recheck_timings({{"a", halved}}, {{"a", timed(1.0, 0.01, 10)}});
  EXPECT_FALSE(r.agree);
  EXPECT_NEAR(r.worst_rel_diff, 1.0, 1e-9);
}

TEST(Recheck, ShapesOnOneSideOnlyCannotBeCompared) {
  std::map<std::string, ShapeTiming> kept = {{"a", timed(1.0, 0.01)}};
  TimingRecheck extra = recheck_timings(kept, {{"a", timed(1.0, 0.01)}, {"z", timed(1, 0.01)}});
  EXPECT_FALSE(extra.agree);
  EXPECT_EQ(extra.problem, "shape z is not in the kept timing");
  TimingRecheck missing = recheck_timings(kept, {});
  EXPECT_FALSE(missing.agree);
  EXPECT_EQ(missing.problem, "shape a was not re-measured");
}

TEST(MedianNoise, FromSamplesRobustToOneOutlier) {
  ShapeTiming t = timed(1.0, 0.01, 20);
  double quiet = median_noise(t);
  t.samples_ms.back() = 50.0;  // one sample on a busy machine
  EXPECT_NEAR(median_noise(t), quiet, quiet * 0.5);
  ShapeTiming summary;  // no samples: from std and n
  summary.median_ms = 2.0;
  summary.std_ms = 0.2;
  summary.n = 100;
  EXPECT_NEAR(median_noise(summary), 1.2533 * 0.2 / 10 / 2.0, 1e-12);
  EXPECT_EQ(median_noise(ShapeTiming{}), 0);
}

TEST(Outcome, ProgressTextSaysWhatHappened) {
  ReferenceTimingOutcome o;
  EXPECT_EQ(o.progress_text(), "");
  EXPECT_TRUE(o.to_json().is_null());
  o.source = ReferenceTimingOutcome::Source::kReused;
  o.from_job = "job_a";
  o.timed_at = "2025-01-31T12:34:56.789Z";
  o.recheck = recheck_timings({{"n=8", timed(1.0, 0.001)}}, {{"n=8", timed(1.006, 0.001, 10)}});
  EXPECT_EQ(o.progress_text(),
            "; timing reused from job job_a of 2025-01-31 12:34 UTC, re-checked within 0.6%");
  nlohmann::json j = o.to_json();
  EXPECT_EQ(j["source"], "reused");
  EXPECT_EQ(j["from_job"], "job_a");
  EXPECT_TRUE(j["recheck"]["agree"].get<bool>());
  EXPECT_NEAR(j["recheck"]["shapes"]["n=8"]["rel_diff"].get<double>(), 0.006, 1e-9);
  EXPECT_NE(o.log_text().find("n=8"), std::string::npos) << o.log_text();

  o.source = ReferenceTimingOutcome::Source::kRetimed;
  o.recheck = recheck_timings({{"n=8", timed(1.0, 0.001)}}, {{"n=8", timed(1.074, 0.001, 10)}});
  EXPECT_EQ(o.progress_text(), "; kept timing disagreed by 7.4% on shape n=8, re-timed");
  o.source = ReferenceTimingOutcome::Source::kFresh;
  o.notes = {"timing not kept for later jobs: disk full"};
  EXPECT_EQ(o.progress_text(),
            "; timed afresh (eval_config.reuse_reference_timing is false); timing not kept for "
            "later jobs: disk full");
}

}  // namespace
}  // namespace kf
