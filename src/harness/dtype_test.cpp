// f16 / bf16 conversions: exact values, rounding to nearest even, overflow, subnormals, NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernelfoundry/dtype.h"

namespace kf = kernelfoundry;

TEST(Half, KnownValues) {
  EXPECT_EQ(kf::float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(kf::float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(kf::float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(kf::float_to_half(0.0f), 0x0000);
  EXPECT_EQ(kf::float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(kf::float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(kf::float_to_half(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_FLOAT_EQ(kf::half_to_float(0x3555), 0.333251953125f);
  EXPECT_FLOAT_EQ(kf::half_to_float(0x0001), std::ldexp(1.0f, -24));
}

TEST(Half, OverflowAndNan) {
  EXPECT_EQ(kf::float_to_half(65520.0f), 0x7C00);  // rounds up to Inf
  EXPECT_EQ(kf::float_to_half(65519.0f), 0x7BFF);
  EXPECT_EQ(kf::float_to_half(1e10f), 0x7C00);
  EXPECT_EQ(kf::float_to_half(-std::numeric_limits<float>::infinity()), 0xFC00);
  std::uint16_t nan = kf::float_to_half(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  EXPECT_TRUE(std::isnan(kf::half_to_float(0x7E00)));
  EXPECT_TRUE(std::isinf(kf::half_to_float(0x7C00)));
}

TEST(Half, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): ties go to even (1.0).
  EXPECT_EQ(kf::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3*2^-11 lies halfway between 0x3C01 and 0x3C02: ties go to 0x3C02.
  EXPECT_EQ(kf::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Just above halfway rounds up.
  EXPECT_EQ(kf::float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // Subnormal tie: 1.5 * 2^-24 rounds to 2 * 2^-24.
  EXPECT_EQ(kf::float_to_half(1.5f * std::ldexp(1.0f, -24)), 0x0002);
  EXPECT_EQ(kf::float_to_half(0.5f * std::ldexp(1.0f, -24)), 0x0000);
}

TEST(Half, EveryFiniteHalfRoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00) continue;  // Inf / NaN
    float f = kf::half_to_float(std::uint16_t(h));
    ASSERT_EQ(kf::float_to_half(f), h) << "half bits " << h;
  }
}

TEST(BFloat16, ConversionsRoundToNearestEven) {
  EXPECT_EQ(kf::float_to_bf16(1.0f), 0x3F80);
  EXPECT_FLOAT_EQ(kf::bf16_to_float(0x3F80), 1.0f);
  EXPECT_FLOAT_EQ(kf::bf16_to_float(0xC040), -3.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even keeps 1.0.
  EXPECT_EQ(kf::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(kf::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  std::uint16_t nan = kf::float_to_bf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(kf::bf16_to_float(nan)));
  EXPECT_EQ(kf::float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to Inf
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(kf::dtype_size(kf::f32), 4u);
  EXPECT_EQ(kf::dtype_size(kf::bf16), 2u);
  EXPECT_EQ(kf::dtype_size(kf::i64), 8u);
  EXPECT_STREQ(kf::dtype_name(kf::f16), "f16");
  EXPECT_TRUE(kf::dtype_is_float(kf::bf16));
  EXPECT_FALSE(kf::dtype_is_float(kf::i32));
}
