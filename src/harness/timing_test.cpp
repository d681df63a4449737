// Sample statistics and the adaptive stopping rule.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/timing.h"

namespace kf = kernelfoundry;

TEST(Stats, MedianMeanMinMaxStd) {
  kf::SampleStats s = kf::compute_stats({3, 1, 2, 10});
  EXPECT_EQ(s.n, 4);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 4.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
  EXPECT_NEAR(s.stddev, std::sqrt(50.0 / 3.0), 1e-12);  // sample variance: 50 / 3
  EXPECT_NEAR(s.rel_sem, std::sqrt(50.0 / 3.0) / 2.0 / 4.0, 1e-12);
  EXPECT_DOUBLE_EQ(kf::compute_stats({5, 1, 3}).median, 3.0);
  EXPECT_EQ(kf::compute_stats({}).n, 0);
}

TEST(Stats, RunningStatsRelSem) {
  kf::RunningStats r;
  EXPECT_TRUE(std::isinf(r.rel_sem()));
  r.add(1.0);
  EXPECT_TRUE(std::isinf(r.rel_sem()));
  r.add(1.0);
  EXPECT_DOUBLE_EQ(r.rel_sem(), 0.0);
  r.add(4.0);
  EXPECT_DOUBLE_EQ(r.mean(), 2.0);
  EXPECT_NEAR(r.stddev(), std::sqrt(3.0), 1e-12);
}

namespace {

kf::RunningStats samples(int n, double spread) {
  kf::RunningStats r;
  for (int i = 0; i < n; ++i) r.add(1.0 + (i % 2 ? spread : -spread));
  return r;
}

}  // namespace

TEST(StopRule, ConvergesOnlyWithMinSamples) {
  kf::StopRule rule;  // noise 0.5%, min 10, max 2000, budget 2 s
  EXPECT_EQ(kf::should_stop(samples(9, 0.0), 0.1, rule), kf::StopReason::None);
  EXPECT_EQ(kf::should_stop(samples(10, 0.0), 0.1, rule), kf::StopReason::Converged);
  // 10% spread: rel_sem ~ 0.1/sqrt(10) = 3% > 0.5%: keep sampling within the budget.
  EXPECT_EQ(kf::should_stop(samples(10, 0.1), 0.1, rule), kf::StopReason::None);
  EXPECT_EQ(kf::should_stop(samples(10, 0.1), 2.0, rule), kf::StopReason::Budget);
  // Noise shrinks with n: at n=1000 rel_sem ~ 0.1/sqrt(1000) = 0.32%.
  EXPECT_EQ(kf::should_stop(samples(1000, 0.1), 0.5, rule), kf::StopReason::Converged);
}

TEST(StopRule, MaxSamplesAndSlowKernelCap) {
  kf::StopRule rule;
  rule.max_samples = 50;
  EXPECT_EQ(kf::should_stop(samples(50, 0.5), 0.1, rule), kf::StopReason::MaxSamples);
  // Below min_samples the budget does not stop the loop, only the hard cap does.
  EXPECT_EQ(kf::should_stop(samples(3, 0.0), 5.0, rule), kf::StopReason::None);
  EXPECT_EQ(kf::should_stop(samples(3, 0.0), 10.0, rule), kf::StopReason::HardCap);
  EXPECT_STREQ(kf::stop_reason_name(kf::StopReason::Budget), "time_budget");
}
