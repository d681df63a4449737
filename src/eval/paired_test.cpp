// Tests for the paired speedup: the t quantile, per-shape and all-shape intervals against values
// worked out by hand, drift cancellation, narrowing, the stop rule and the "clearly faster" rule.
#include "eval/paired.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace kf {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// `n` pairs whose candidate batch is {c, c, c} and reference batch {r, r, r}.
std::vector<BatchPair> constant_pairs(int n, double c, double r) {
  std::vector<BatchPair> out;
  for (int i = 0; i < n; ++i) out.push_back({{c, c, c}, {r, r, r}});
  return out;
}

// Pairs with the given reference/candidate ratios (candidate 1 ms, odd batches so the median is
// a sample).
std::vector<BatchPair> ratio_pairs(const std::vector<double>& ratios) {
  std::vector<BatchPair> out;
  for (double q : ratios) out.push_back({{0.9, 1.0, 1.1}, {0.9 * q, q, 1.1 * q}});
  return out;
}

TEST(PairedTest, StudentTQuantileMatchesTables) {
  // Two-sided 95% (p = 0.975) from standard t tables, and a few other levels.
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.7062047362, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.3026527297, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.7764451052, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.975, 9), 2.2621571628, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.975, 30), 2.0422724563, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.95, 10), 1.8124611228, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.995, 5), 4.0321429836, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.975, 2.5), 3.5746548, 1e-6);  // fractional df (Welch)
  EXPECT_NEAR(student_t_quantile(0.975, kInf), 1.9599639845, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.025, 9), -2.2621571628, 1e-8);
  EXPECT_EQ(student_t_quantile(0.5, 7), 0.0);
  EXPECT_TRUE(std::isnan(student_t_quantile(1.0, 7)));
  EXPECT_TRUE(std::isnan(student_t_quantile(0.9, 0)));
}

TEST(PairedTest, ConstantRatioGivesThatSpeedupWithZeroWidth) {
  SpeedupInterval s = shape_speedup(constant_pairs(5, 2.0, 3.0));
  EXPECT_DOUBLE_EQ(s.speedup, 1.5);
  EXPECT_EQ(s.lo, s.speedup);
  EXPECT_EQ(s.hi, s.speedup);
  EXPECT_EQ(s.batches, 5);
  EXPECT_EQ(s.confidence, 0.95);
}

TEST(PairedTest, KnownCaseMatchesHandComputation) {
  // Log ratios 0.1, 0.2, 0.3: mean 0.2; s^2 = (0.01 + 0 + 0.01) / 2 = 0.01, s = 0.1;
  // SE = 0.1 / sqrt(3) = 0.0577350; t(0.975, df 2) = 0.95 / sqrt(2 * 0.975 * 0.025) = 4.3026527;
  // half-width 0.2484138. Speedup e^0.2 = 1.2214028, interval [e^-0.0484138, e^0.4484138] =
  // [0.9527395, 1.5658265].
  SpeedupInterval s = shape_speedup(ratio_pairs({std::exp(0.1), std::exp(0.2), std::exp(0.3)}));
  EXPECT_NEAR(s.speedup, 1.2214027582, 1e-9);
  EXPECT_NEAR(s.lo, 0.9527394894, 1e-9);
  EXPECT_NEAR(s.hi, 1.5658264555, 1e-9);
  EXPECT_EQ(s.batches, 3);
  // The pair order does not matter.
  SpeedupInterval r = shape_speedup(ratio_pairs({std::exp(0.3), std::exp(0.1), std::exp(0.2)}));
  EXPECT_NEAR(r.lo, s.lo, 1e-12);
  EXPECT_NEAR(r.hi, s.hi, 1e-12);
}

TEST(PairedTest, ShapesCombineAsGeometricMeanWithPooledVariance) {
  // Shape a as above (mean 0.2, var of mean 0.01/3, df 2); shape b a constant ratio 1 (mean 0,
  // var 0). Mean over shapes 0.1; var = (0.01/3 + 0) / 2^2 = 0.01/12; Welch df = 2 (only a
  // varies); half-width 4.3026527 * sqrt(0.01/12) = 0.1242069. Speedup e^0.1 = 1.1051709,
  // interval [e^-0.0242069, e^0.2242069] = [0.9760838, 1.2513299]; 6 pairs.
  std::vector<ShapePairs> shapes = {
      {"a", ratio_pairs({std::exp(0.1), std::exp(0.2), std::exp(0.3)})},
      {"b", constant_pairs(3, 2.0, 2.0)}};
  SpeedupInterval s = paired_speedup(shapes);
  EXPECT_NEAR(s.speedup, 1.1051709181, 1e-9);
  EXPECT_NEAR(s.lo, 0.9760837512, 1e-9);
  EXPECT_NEAR(s.hi, 1.2513298748, 1e-9);
  EXPECT_EQ(s.batches, 6);

  // One shape alone is its shape_speedup.
  SpeedupInterval one = paired_speedup({shapes[0]});
  SpeedupInterval direct = shape_speedup(shapes[0].batches);
  EXPECT_NEAR(one.lo, direct.lo, 1e-12);
  EXPECT_NEAR(one.hi, direct.hi, 1e-12);
  EXPECT_NEAR(one.speedup, direct.speedup, 1e-12);
}

TEST(PairedTest, DriftOnBothSidesOfEachPairCancels) {
  // Each pair's samples (both sides alike) are multiplied by a slow ramp from 1 to 2, as a
  // machine that slows down over the measurement. The paired speedup does not move; the
  // unpaired ratio of medians of the old protocol (the reference timed once, before the drift,
  // against the candidate's samples taken later) reads the drift as a slowdown.
  const std::vector<double> cand = {0.98, 0.99, 1.0, 1.02, 1.6};  // median 1.0 (one outlier)
  const std::vector<double> ref = {1.23, 1.24, 1.25, 1.27, 3.0};  // median 1.25
  const int n = 20;
  std::vector<BatchPair> steady, drifting;
  std::vector<double> all_cand;
  for (int i = 0; i < n; ++i) {
    double f = 1.0 + i / double(n - 1);
    BatchPair p = {cand, ref};
    steady.push_back(p);
    for (double& x : p.candidate_ms) x *= f;
    for (double& x : p.reference_ms) x *= f;
    all_cand.insert(all_cand.end(), p.candidate_ms.begin(), p.candidate_ms.end());
    drifting.push_back(p);
  }
  SpeedupInterval a = shape_speedup(steady), b = shape_speedup(drifting);
  EXPECT_NEAR(a.speedup, 1.25, 1e-12);
  EXPECT_NEAR(b.speedup, a.speedup, 1e-12);
  EXPECT_NEAR(b.lo, 1.25, 1e-9);
  EXPECT_NEAR(b.hi, 1.25, 1e-9);

  std::sort(all_cand.begin(), all_cand.end());
  double cand_median = 0.5 * (all_cand[all_cand.size() / 2 - 1] + all_cand[all_cand.size() / 2]);
  double unpaired = 1.25 / cand_median;  // reference median of the first, undrifted batch
  EXPECT_LT(unpaired, 0.9);              // 1.25x read as a slowdown
}

TEST(PairedTest, TheProbePairIsStoredButNotCounted) {
  std::vector<BatchPair> pairs = ratio_pairs({3.7, 1.0, 1.0, 1.0});
  pairs[0].probe = true;
  SpeedupInterval s = shape_speedup(pairs);
  EXPECT_EQ(s.batches, 3);
  EXPECT_NEAR(s.speedup, 1.0, 1e-12);
  nlohmann::json j = pairs_json({{"a", pairs}});
  EXPECT_EQ(j["a"][0].value("probe", false), true);
  EXPECT_FALSE(j["a"][1].contains("probe"));
}

TEST(PairedTest, AFewOutlyingPairsAreLeftOutSymmetrically) {
  // Three pairs in a row at 1.9x (a burst of load on one side) among pairs within 1% of 1.00x.
  std::vector<double> ratios = {1.0, 1.01, 0.99, 1.9, 1.9, 1.9, 1.0, 1.005, 0.995, 1.0, 1.01};
  SpeedupInterval s = shape_speedup(ratio_pairs(ratios));
  EXPECT_EQ(s.batches, 8);
  EXPECT_NEAR(s.speedup, 1.0, 0.005);
  EXPECT_LE(s.lo, 1.0);
  EXPECT_GE(s.hi, 1.0);
  // The same burst the other way is left out alike.
  for (double& q : ratios) q = 1 / q;
  SpeedupInterval t = shape_speedup(ratio_pairs(ratios));
  EXPECT_EQ(t.batches, 8);
  EXPECT_NEAR(t.speedup, 1 / s.speedup, 1e-12);
  // Four pairs: too few to tell an outlier, every pair counts.
  EXPECT_EQ(shape_speedup(ratio_pairs({1.0, 1.0, 1.0, 1.9})).batches, 4);
  // Spread with no clear centre (half the pairs far off): nothing is left out.
  EXPECT_EQ(shape_speedup(ratio_pairs({1.0, 1.0, 1.0, 1.5, 1.5, 1.5})).batches, 6);
}

TEST(PairedTest, IntervalNarrowsWithMorePairs) {
  // Log ratios ln 1.2 + uniform noise of +-2.5%, from a fixed seed (mt19937 is specified
  // bit-exactly by the standard).
  std::mt19937 rng(12345);
  std::vector<double> ratios;
  auto width_after = [&](int n) {
    while (static_cast<int>(ratios.size()) < n) {
      double u = static_cast<double>(rng()) / 4294967296.0;
      ratios.push_back(1.2 * std::exp(0.05 * (u - 0.5)));
    }
    SpeedupInterval s = shape_speedup(ratio_pairs(ratios));
    EXPECT_LT(s.lo, s.speedup);
    EXPECT_GT(s.hi, s.speedup);
    EXPECT_NEAR(s.speedup, 1.2, 0.02);
    return std::log(s.hi / s.lo);
  };
  double w3 = width_after(3), w10 = width_after(10), w30 = width_after(30), w100 = width_after(100);
  EXPECT_GT(w3, w10);
  EXPECT_GT(w10, w30);
  EXPECT_GT(w30, w100);
}

TEST(PairedTest, FewerThanTwoPairsIsUnbounded) {
  SpeedupInterval one = shape_speedup(constant_pairs(1, 2.0, 3.0));
  EXPECT_DOUBLE_EQ(one.speedup, 1.5);
  EXPECT_EQ(one.lo, 0);
  EXPECT_EQ(one.hi, kInf);
  EXPECT_EQ(one.batches, 1);
  EXPECT_FALSE(pairs_converged(constant_pairs(1, 2.0, 3.0), 0.5, 1));

  SpeedupInterval none = shape_speedup({});
  EXPECT_EQ(none.batches, 0);
  EXPECT_EQ(none.speedup, 0);

  // Across shapes: one shape with a single pair makes the whole interval unbounded.
  SpeedupInterval mixed =
      paired_speedup({{"a", constant_pairs(4, 2.0, 3.0)}, {"b", constant_pairs(1, 2.0, 2.0)}});
  EXPECT_NEAR(mixed.speedup, std::sqrt(1.5), 1e-12);
  EXPECT_EQ(mixed.lo, 0);
  EXPECT_EQ(mixed.hi, kInf);
  EXPECT_EQ(mixed.batches, 5);
}

TEST(PairedTest, BadSamplesAreSkipped) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<BatchPair> pairs = {
      {{0.0, -1.0, nan, kInf, 2.0}, {3.0, nan}},  // ratio 3 / 2
      {{0.0, -2.0}, {3.0}},                       // no usable candidate sample: skipped
      {{}, {}},                                   // empty: skipped
      {{2.0, 2.0, 2.0}, {3.0, 3.0, 3.0, -kInf}},  // ratio 3 / 2
  };
  SpeedupInterval s = shape_speedup(pairs);
  EXPECT_DOUBLE_EQ(s.speedup, 1.5);
  EXPECT_EQ(s.batches, 2);
  EXPECT_EQ(s.lo, s.hi);
  SpeedupInterval all = paired_speedup({{"x", pairs}, {"empty", {}}});
  EXPECT_DOUBLE_EQ(all.speedup, 1.5);
  EXPECT_EQ(all.batches, 2);
}

TEST(PairedTest, ConvergesOnlyWithEnoughPairsAndANarrowInterval) {
  EXPECT_FALSE(pairs_converged(constant_pairs(2, 2.0, 3.0), 0.01, 3));  // too few
  EXPECT_TRUE(pairs_converged(constant_pairs(3, 2.0, 3.0), 0.01, 3));
  EXPECT_FALSE(pairs_converged(constant_pairs(1, 2.0, 3.0), 0.01, 0));  // never below 2
  // Half-width of the known case: 0.2484 in log space.
  auto pairs = ratio_pairs({std::exp(0.1), std::exp(0.2), std::exp(0.3)});
  EXPECT_FALSE(pairs_converged(pairs, 0.2, 2));
  EXPECT_TRUE(pairs_converged(pairs, 0.25, 2));
}

SpeedupInterval interval(double speedup, double lo, double hi, int batches) {
  SpeedupInterval s;
  s.speedup = speedup;
  s.lo = lo;
  s.hi = hi;
  s.batches = batches;
  return s;
}

TEST(PairedTest, LogStandardErrorInvertsTheInterval) {
  SpeedupInterval s = shape_speedup(ratio_pairs({std::exp(0.1), std::exp(0.2), std::exp(0.3)}));
  EXPECT_NEAR(log_standard_error(s), 0.1 / std::sqrt(3.0), 1e-9);
  EXPECT_EQ(log_standard_error(interval(1.5, 1.5, 1.5, 4)), 0);
  EXPECT_EQ(log_standard_error(interval(1.5, 0, kInf, 1)), kInf);
}

TEST(PairedTest, ClearlyFasterNeedsTheIntervalToSaySo) {
  // Overlapping noisy intervals: 1.30 [1.20-1.41] vs 1.25 [1.15-1.36], 10 pairs each: unclear.
  SpeedupInterval a = interval(1.30, 1.20, 1.41, 10), b = interval(1.25, 1.15, 1.36, 10);
  EXPECT_FALSE(clearly_faster(a, b));
  EXPECT_FALSE(clearly_faster(b, a));
  // Tight intervals 1.30 [1.29-1.31] vs 1.25 [1.24-1.26]: a is faster, b is not.
  a = interval(1.30, 1.29, 1.31, 10);
  b = interval(1.25, 1.24, 1.26, 10);
  EXPECT_TRUE(clearly_faster(a, b));
  EXPECT_FALSE(clearly_faster(b, a));
  // Zero-width on both sides: any real difference counts; equal is not faster.
  EXPECT_TRUE(clearly_faster(interval(1.3, 1.3, 1.3, 3), interval(1.2, 1.2, 1.2, 3)));
  EXPECT_FALSE(clearly_faster(interval(1.3, 1.3, 1.3, 3), interval(1.3, 1.3, 1.3, 3)));
  // An unbounded side (a single pair) is never clearly faster nor clearly beaten.
  EXPECT_FALSE(clearly_faster(interval(3.0, 0, kInf, 1), interval(1.2, 1.19, 1.21, 10)));
  EXPECT_FALSE(clearly_faster(interval(3.0, 2.9, 3.1, 10), interval(1.2, 0, kInf, 1)));
}

TEST(PairedTest, FasterThanFallsBackToPointEstimates) {
  std::optional<SpeedupInterval> wide = interval(1.30, 1.10, 1.50, 5);
  std::optional<SpeedupInterval> other = interval(1.20, 1.00, 1.40, 5);
  EXPECT_FALSE(faster_than(1.30, wide, 1.20, other));          // both intervals: unclear
  EXPECT_TRUE(faster_than(1.30, wide, 1.20, std::nullopt));    // old kernel: point estimates
  EXPECT_TRUE(faster_than(1.30, std::nullopt, 1.20, other));   // ... either side
  EXPECT_FALSE(faster_than(1.20, std::nullopt, 1.20, other));  // a tie keeps the incumbent
  EXPECT_TRUE(faster_than(0.5, std::nullopt, std::nullopt, std::nullopt));
  EXPECT_FALSE(faster_than(std::nullopt, std::nullopt, 0.5, std::nullopt));
}

TEST(PairedTest, TextAndJson) {
  EXPECT_EQ(interval_text(interval(1.23, 1.2, 1.26, 8)), "[1.20-1.26]");
  EXPECT_EQ(interval_text(interval(1.23, 0, kInf, 1)), "[0.00-inf]");
  EXPECT_EQ(interval_text(interval(1.0, 0.9956, 1.0041, 8), 3), "[0.996-1.004]");
  EXPECT_EQ(interval_text(interval(1.0, 0.5, kInf, 1), 3), "[0.500-inf]");
  nlohmann::json j = interval_json(interval(1.23, 0, kInf, 1));
  EXPECT_TRUE(j["hi"].is_null());
  EXPECT_EQ(j["batches"], 1);
  nlohmann::json p = pairs_json({{"n1024", {{{1.0, 2.0}, {3.0}}}}});
  EXPECT_EQ(p["n1024"][0]["candidate_ms"].size(), 2u);
  EXPECT_EQ(p["n1024"][0]["reference_ms"][0], 3.0);
}

}  // namespace
}  // namespace kf
