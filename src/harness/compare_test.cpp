// allclose / cosine semantics: relative tolerance, pass ratio, NaN/Inf, integers, reporting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernelfoundry/compare.h"

namespace kf = kernelfoundry;

TEST(Compare, RelativeToleranceScalesWithMagnitude) {
  std::vector<float> expected = {1000.0f, 1.0f};
  std::vector<float> actual = {1000.5f, 1.0f};
  EXPECT_TRUE(kf::allclose(actual, expected, kf::tolerance(1e-3, 0)).passed);
  // The same absolute error on a small value is far outside the relative tolerance.
  actual = {1000.0f, 1.5f};
  kf::CompareResult r = kf::allclose(actual, expected, kf::tolerance(1e-3, 0));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1);
  EXPECT_EQ(r.first_bad, 1);
  EXPECT_DOUBLE_EQ(r.max_abs, 0.5);
  EXPECT_NEAR(r.max_rel, 0.5, 1e-9);
}

TEST(Compare, AtolCoversValuesNearZero) {
  std::vector<float> expected = {0.0f, 1e-9f};
  std::vector<float> actual = {1e-7f, 0.0f};
  EXPECT_TRUE(kf::allclose(actual, expected, kf::tolerance(1e-5, 1e-6)).passed);
  EXPECT_FALSE(kf::allclose(actual, expected, kf::tolerance(1e-5, 1e-8)).passed);
}

TEST(Compare, RatioAllowsAFractionOfMismatches) {
  std::vector<float> expected(100, 1.0f), actual(100, 1.0f);
  actual[10] = 2.0f;
  actual[50] = 3.0f;
  EXPECT_TRUE(kf::allclose(actual, expected, kf::tolerance(1e-6, 0, 0.98)).passed);
  kf::CompareResult r = kf::allclose(actual, expected, kf::tolerance(1e-6, 0, 0.99));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 2);
  ASSERT_EQ(r.examples.size(), 2u);
  EXPECT_EQ(r.examples[0].index, 10);
  EXPECT_EQ(r.examples[1].actual, 3.0);
}

TEST(Compare, NanWhereFiniteExpectedAlwaysFails) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> expected = {1.0f, 2.0f, 3.0f, 4.0f};
  std::vector<float> actual = {1.0f, nan, 3.0f, inf};
  kf::CompareResult r = kf::allclose(actual, expected, kf::tolerance(1e30, 1e30, 0.0));
  EXPECT_EQ(r.mismatches, 2);
  EXPECT_EQ(r.nonfinite, 2);
  // Even a ratio of 0 cannot fail on a count, but NaNs are still counted as mismatches.
  EXPECT_TRUE(r.passed);
  r = kf::allclose(actual, expected, kf::tolerance(1e30, 1e30, 1.0));
  EXPECT_FALSE(r.passed);
  // Statistics ignore the non-finite pairs.
  EXPECT_DOUBLE_EQ(r.max_abs, 0.0);
  EXPECT_NEAR(r.cosine, 1.0, 1e-12);
}

TEST(Compare, MatchingNanAndInfinityPass) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> expected = {nan, inf, -inf};
  EXPECT_TRUE(kf::allclose(std::vector<float>{nan, inf, -inf}, expected).passed);
  EXPECT_FALSE(kf::allclose(std::vector<float>{nan, -inf, -inf}, expected).passed);
  EXPECT_FALSE(kf::allclose(std::vector<float>{0.0f, inf, -inf}, expected).passed);
}

TEST(Compare, CosineSimilarity) {
  std::vector<float> a = {1, 0}, b = {0, 1}, c = {-1, 0}, z = {0, 0};
  EXPECT_NEAR(kf::cosine_similarity(a.data(), a.data(), 2), 1.0, 1e-12);
  EXPECT_NEAR(kf::cosine_similarity(a.data(), b.data(), 2), 0.0, 1e-12);
  EXPECT_NEAR(kf::cosine_similarity(a.data(), c.data(), 2), -1.0, 1e-12);
  EXPECT_NEAR(kf::cosine_similarity(z.data(), z.data(), 2), 1.0, 1e-12);
  EXPECT_NEAR(kf::cosine_similarity(a.data(), z.data(), 2), 0.0, 1e-12);
  std::vector<double> d1 = {1, 2, 3}, d2 = {2, 4, 6};
  EXPECT_NEAR(kf::cosine_similarity(d1.data(), d2.data(), 3), 1.0, 1e-12);
}

TEST(Compare, HalfPrecisionComparesConvertedValues) {
  std::vector<std::uint16_t> expected = {kf::float_to_half(1.0f), kf::float_to_half(2.0f)};
  std::vector<std::uint16_t> actual = {kf::float_to_half(1.0f), kf::float_to_half(2.001f)};
  EXPECT_TRUE(kf::compare(actual.data(), expected.data(), kf::f16, 2, kf::tolerance(1e-2)).passed);
  actual[1] = kf::float_to_half(2.5f);
  kf::CompareResult r =
      kf::compare(actual.data(), expected.data(), kf::f16, 2, kf::tolerance(1e-2));
  EXPECT_FALSE(r.passed);
  EXPECT_DOUBLE_EQ(r.examples[0].actual, 2.5);
}

TEST(Compare, IntegersAreExactUnlessToleranceGiven) {
  std::vector<std::int32_t> expected = {1, 2, 3}, actual = {1, 2, 4};
  EXPECT_FALSE(kf::compare(actual.data(), expected.data(), kf::i32, 3, kf::exact()).passed);
  EXPECT_TRUE(kf::compare(actual.data(), expected.data(), kf::i32, 3, kf::tolerance(0, 1)).passed);
  // Distinct 64-bit values that round to the same double still differ.
  std::vector<std::int64_t> big_e = {(std::int64_t(1) << 60)},
                            big_a = {(std::int64_t(1) << 60) + 1};
  EXPECT_FALSE(kf::compare(big_a.data(), big_e.data(), kf::i64, 1, kf::exact()).passed);
  EXPECT_EQ(kf::default_tolerance(kf::i32).atol, 0.0);
}

TEST(Compare, DescribeNamesCountsAndFirstMismatch) {
  std::vector<float> expected = {1, 2, 3}, actual = {1, 5, 3};
  kf::Tolerance tol = kf::tolerance(1e-4, 1e-6);
  std::string text = kf::allclose(actual, expected, tol).describe(tol);
  EXPECT_NE(text.find("1 of 3 elements outside tolerance"), std::string::npos) << text;
  EXPECT_NE(text.find("[1] expected 2 got 5"), std::string::npos) << text;
}

TEST(Compare, SizeMismatchNeverPasses) {
  kf::CompareResult r = kf::allclose(std::vector<float>{1, 2}, std::vector<float>{1, 2, 3});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.total, 3);
}

TEST(Compare, ChunkedParallelCompareKeepsFirstMismatchAndExamplesInOrder) {
  // Three chunks of 1M elements: mismatches in the second and third; the first reported must be
  // the lowest index, the examples in index order, sums over every element.
  long n = 3 * (1L << 20) + 17;
  std::vector<float> expected(std::size_t(n), 1.0f), actual = expected;
  std::vector<long> bad = {(1L << 20) + 5, (1L << 20) + 9, 2 * (1L << 20) + 1, n - 1};
  for (long i : bad) actual[std::size_t(i)] = 2.0f;
  auto r = kf::compare(actual.data(), expected.data(), kf::DType::F32, n, kf::tolerance(1e-5));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.total, n);
  EXPECT_EQ(r.mismatches, long(bad.size()));
  EXPECT_EQ(r.first_bad, bad[0]);
  ASSERT_EQ(r.examples.size(), bad.size());
  for (std::size_t k = 0; k < bad.size(); ++k) EXPECT_EQ(r.examples[k].index, bad[k]);
  EXPECT_DOUBLE_EQ(r.max_abs, 1.0);
  // cosine of (1,..,1,2,..) against (1,..,1): below 1, the same on a repeat.
  EXPECT_LT(r.cosine, 1.0);
  auto again = kf::compare(actual.data(), expected.data(), kf::DType::F32, n, kf::tolerance(1e-5));
  EXPECT_EQ(again.cosine, r.cosine);
}
