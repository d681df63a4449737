// Seeded fills: deterministic per (seed, name), independent of threading; poison and checksum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "harness/fill.h"

namespace kf = kernelfoundry;

namespace {

std::vector<float> fill_f32(long n, const kf::Distribution& d, int seed, const char* name) {
  std::vector<float> v(std::size_t(n), 0.0f);
  kf::fill_values(v.data(), kf::f32, n, d, kf::stream_key(seed, name));
  return v;
}

}  // namespace

TEST(Fill, DeterministicPerSeedAndName) {
  auto a = fill_f32(1000, kf::normal(0, 1), 1, "x");
  auto b = fill_f32(1000, kf::normal(0, 1), 1, "x");
  auto other_seed = fill_f32(1000, kf::normal(0, 1), 2, "x");
  auto other_name = fill_f32(1000, kf::normal(0, 1), 1, "w");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other_seed);
  EXPECT_NE(a, other_name);
}

TEST(Fill, ThreadedFillMatchesSmallFill) {
  // A large fill runs on several threads; element i must not depend on the split.
  auto big = fill_f32(3 << 20, kf::uniform(-1, 1), 7, "x");
  auto small = fill_f32(1000, kf::uniform(-1, 1), 7, "x");
  EXPECT_TRUE(std::equal(small.begin(), small.end(), big.begin()));
}

TEST(Fill, UniformStaysInRange) {
  auto v = fill_f32(100000, kf::uniform(2, 5), 1, "u");
  double sum = 0;
  for (float x : v) {
    ASSERT_GE(x, 2.0f);
    ASSERT_LE(x, 5.0f);
    sum += x;
  }
  EXPECT_NEAR(sum / double(v.size()), 3.5, 0.02);
}

TEST(Fill, NormalHasRequestedMoments) {
  auto v = fill_f32(200000, kf::normal(3, 2), 1, "n");
  double sum = 0, sq = 0;
  for (float x : v) sum += x;
  double mean = sum / double(v.size());
  for (float x : v) sq += (x - mean) * (x - mean);
  EXPECT_NEAR(mean, 3.0, 0.02);
  EXPECT_NEAR(std::sqrt(sq / double(v.size())), 2.0, 0.02);
}

// The shape of the normal fill, not only its moments: the fraction beyond each of several
// points (the ziggurat's tail starts at 3.654) within 4 standard errors of the normal curve's.
// The fill is deterministic, so this is the same check every run, not a random one.
TEST(Fill, NormalFollowsTheCurveIntoTheTail) {
  const long n = 20000000;
  auto v = fill_f32(n, kf::normal(0, 1), 3, "tail");
  for (double t : {0.5, 1.0, 2.0, 3.0, 3.6541528853610088, 4.0}) {
    long beyond = 0;
    for (float x : v) beyond += std::fabs(x) > t;
    double p = std::erfc(t / std::sqrt(2.0));
    double se = std::sqrt(p * (1 - p) * double(n));
    EXPECT_NEAR(double(beyond), p * double(n), 4 * se) << "|x| > " << t;
  }
}

TEST(Fill, IntsAreInclusiveAndCoverTheRange) {
  std::vector<std::int32_t> v(10000);
  kf::fill_values(v.data(), kf::i32, long(v.size()), kf::ints(-3, 3), kf::stream_key(1, "i"));
  std::vector<int> seen(7, 0);
  for (std::int32_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LE(x, 3);
    ++seen[std::size_t(x + 3)];
  }
  for (int c : seen) EXPECT_GT(c, 1000);
}

TEST(Fill, HalfAndConstant) {
  std::vector<std::uint16_t> h(4);
  kf::fill_values(h.data(), kf::f16, 4, kf::constant(1.5), 0);
  for (auto bits : h) EXPECT_EQ(bits, kf::float_to_half(1.5f));
  std::vector<std::uint16_t> b(1000);
  kf::fill_values(b.data(), kf::bf16, 1000, kf::uniform(-1, 1), kf::stream_key(1, "b"));
  for (auto bits : b) {
    float f = kf::bf16_to_float(bits);
    ASSERT_GE(f, -1.0f);
    ASSERT_LE(f, 1.0f);
  }
  EXPECT_THROW(kf::fill_values(b.data(), kf::i32, 1, kf::ints(5, 1), 0), kf::Error);
}

TEST(Poison, VariantsDifferAndFloatsAreNan) {
  for (kf::DType t : {kf::f32, kf::f64, kf::f16, kf::bf16, kf::i32, kf::u8, kf::i64}) {
    auto p0 = kf::poison_pattern(t, 0), p1 = kf::poison_pattern(t, 1);
    ASSERT_EQ(p0.size(), kf::dtype_size(t));
    EXPECT_NE(p0, p1) << kf::dtype_name(t);
  }
  for (int variant : {0, 1}) {
    auto p = kf::poison_pattern(kf::f32, variant);
    float f;
    std::memcpy(&f, p.data(), 4);
    EXPECT_TRUE(std::isnan(f));
    auto h = kf::poison_pattern(kf::f16, variant);
    std::uint16_t bits;
    std::memcpy(&bits, h.data(), 2);
    EXPECT_TRUE(std::isnan(kf::half_to_float(bits)));
  }
  std::uint32_t words[4] = {0xFFFFFFFFu, 1, 0xFFFFFFFFu, 0xFFFFFFFFu};
  EXPECT_EQ(kf::count_pattern(words, kf::i32, 4, kf::poison_pattern(kf::i32, 0).data()), 3);
}

TEST(Checksum, ChangesWithAnyByteAndChains) {
  std::vector<unsigned char> data(1000, 7);
  std::uint64_t base = kf::checksum(data.data(), data.size());
  for (std::size_t i : {0u, 31u, 32u, 999u}) {
    data[i] ^= 1;
    EXPECT_NE(kf::checksum(data.data(), data.size()), base) << i;
    data[i] ^= 1;
  }
  EXPECT_EQ(kf::checksum(data.data(), data.size()), base);
  EXPECT_NE(kf::checksum(data.data(), 500, kf::checksum(data.data(), 500)),
            kf::checksum(data.data(), 500));
}

TEST(Checksum, ChunkedSumSeesEveryChunkAndItsPosition) {
  // Three chunks (the last partial): a change anywhere moves the sum; so does swapping two equal-
  // sized chunks, since each chunk's index is folded in.
  std::size_t bytes = 2 * kf::kChecksumChunk + 4096;
  std::vector<unsigned char> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    data[i] = static_cast<unsigned char>((i * 2654435761u >> 13) ^ (i / kf::kChecksumChunk));
  std::uint64_t base = kf::checksum_chunked(data.data(), bytes);
  EXPECT_EQ(kf::checksum_chunked(data.data(), bytes), base);
  for (std::size_t i : {std::size_t(0), kf::kChecksumChunk + 3, bytes - 1}) {
    data[i] ^= 0x10;
    EXPECT_NE(kf::checksum_chunked(data.data(), bytes), base) << i;
    data[i] ^= 0x10;
  }
  std::vector<unsigned char> swapped(data);
  std::swap_ranges(swapped.begin(), swapped.begin() + long(kf::kChecksumChunk),
                   swapped.begin() + long(kf::kChecksumChunk));
  EXPECT_NE(kf::checksum_chunked(swapped.data(), bytes), base);
}

TEST(Fill, ValuesDoNotDependOnTheChunkSize) {
  for (const kf::Distribution& d : {kf::uniform(-1, 1), kf::normal(0, 1), kf::ints(-5, 5)}) {
    std::vector<float> a(300001), b(300001);
    kf::fill_values(a.data(), kf::f32, long(a.size()), d, 1234);
    kf::fill_values(b.data(), kf::f32, long(b.size()), d, 1234, 1L << 10);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  }
}
