// Seeded values (counter-based splitmix64), poison/guard patterns and an xxhash-style checksum.
#include "harness/fill.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "harness/parallel.h"

namespace kernelfoundry {
namespace {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// Wall time of fill_values over the process (called from the harness's main thread only).
double g_fill_seconds = 0;

inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline double unit(std::uint64_t bits) {
  return double(bits >> 11) * 0x1.0p-53;
}  // [0, 1)

template <class T>
T clamp_to(double v) {
  if (std::isnan(v)) return T(0);
  double lo = double(std::numeric_limits<T>::lowest());
  double hi = double(std::numeric_limits<T>::max());
  return v <= lo   ? std::numeric_limits<T>::lowest()
         : v >= hi ? std::numeric_limits<T>::max()
                   : T(v);
}

void store(void* dst, DType dtype, long i, double v) {
  switch (dtype) {
    case DType::F32:
      static_cast<float*>(dst)[i] = float(v);
      break;
    case DType::F64:
      static_cast<double*>(dst)[i] = v;
      break;
    case DType::F16:
      static_cast<std::uint16_t*>(dst)[i] = float_to_half(float(v));
      break;
    case DType::BF16:
      static_cast<std::uint16_t*>(dst)[i] = float_to_bf16(float(v));
      break;
    case DType::I8:
      static_cast<std::int8_t*>(dst)[i] = clamp_to<std::int8_t>(std::floor(v));
      break;
    case DType::U8:
      static_cast<std::uint8_t*>(dst)[i] = clamp_to<std::uint8_t>(std::floor(v));
      break;
    case DType::I32:
      static_cast<std::int32_t*>(dst)[i] = clamp_to<std::int32_t>(std::floor(v));
      break;
    case DType::U32:
      static_cast<std::uint32_t*>(dst)[i] = clamp_to<std::uint32_t>(std::floor(v));
      break;
    case DType::I64:
      static_cast<std::int64_t*>(dst)[i] = clamp_to<std::int64_t>(std::floor(v));
      break;
  }
}

void store_int(void* dst, DType dtype, long i, std::int64_t v) {
  switch (dtype) {
    case DType::I8:
      static_cast<std::int8_t*>(dst)[i] = std::int8_t(v);
      break;
    case DType::U8:
      static_cast<std::uint8_t*>(dst)[i] = std::uint8_t(v);
      break;
    case DType::I32:
      static_cast<std::int32_t*>(dst)[i] = std::int32_t(v);
      break;
    case DType::U32:
      static_cast<std::uint32_t*>(dst)[i] = std::uint32_t(v);
      break;
    case DType::I64:
      static_cast<std::int64_t*>(dst)[i] = v;
      break;
    default:
      store(dst, dtype, i, double(v));
      break;
  }
}

void fill_range(void* dst, DType dtype, long begin, long end, const Distribution& d,
                std::uint64_t key) {
  switch (d.kind) {
    case Distribution::Kind::Uniform:
      for (long i = begin; i < end; ++i) {
        store(dst, dtype, i, d.a + (d.b - d.a) * unit(mix64(key + std::uint64_t(i) * kGolden)));
      }
      break;
    case Distribution::Kind::Normal:
      // Marsaglia's polar method on counter-derived uniforms, one accepted pair per two elements
      // (2j and 2j+1): no trigonometry, one logarithm per pair. Rejected draws move to the next
      // counter, so element i still depends only on (key, i).
      for (long i = begin; i < end;) {
        long j = i / 2;
        double u = 0, v = 0, s = 0;
        for (std::uint64_t attempt = 0;; ++attempt) {
          std::uint64_t c = key + (std::uint64_t(j) * 64 + attempt * 2) * kGolden;
          u = 2.0 * unit(mix64(c)) - 1.0;
          v = 2.0 * unit(mix64(c + kGolden)) - 1.0;
          s = u * u + v * v;
          if (s > 0 && s < 1) break;
        }
        double f = std::sqrt(-2.0 * std::log(s) / s);
        if (i % 2 == 0) {
          store(dst, dtype, i, d.a + d.b * u * f);
          ++i;
        }
        if (i < end && i % 2 == 1) {
          store(dst, dtype, i, d.a + d.b * v * f);
          ++i;
        }
      }
      break;
    case Distribution::Kind::Ints: {
      auto lo = static_cast<std::int64_t>(d.a);
      auto range = static_cast<std::uint64_t>(static_cast<std::int64_t>(d.b) - lo) + 1;
      for (long i = begin; i < end; ++i) {
        std::uint64_t r = mix64(key + std::uint64_t(i) * kGolden);
        store_int(dst, dtype, i, lo + std::int64_t(range == 0 ? r : r % range));
      }
      break;
    }
    case Distribution::Kind::Constant:
      for (long i = begin; i < end; ++i) store(dst, dtype, i, d.a);
      break;
  }
}

inline std::uint64_t rotl(std::uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

}  // namespace

std::uint64_t stream_key(int seed, const std::string& name) {
  std::uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a of the name
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001B3ull;
  return mix64(h ^ mix64(std::uint64_t(seed) * kGolden));
}

void fill_values(void* dst, DType dtype, long count, const Distribution& dist, std::uint64_t key,
                 long chunk) {
  if (dist.kind == Distribution::Kind::Ints && dist.b < dist.a) {
    throw Error("ints(" + std::to_string(long(dist.a)) + ", " + std::to_string(long(dist.b)) +
                "): the high bound is below the low bound");
  }
  auto start = std::chrono::steady_clock::now();
  parallel_chunks(count, chunk, [&](long, long begin, long end) {
    fill_range(dst, dtype, begin, end, dist, key);
  });
  g_fill_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double host_fill_seconds() {
  return g_fill_seconds;
}

std::vector<unsigned char> poison_pattern(DType dtype, int variant) {
  std::size_t size = dtype_size(dtype);
  std::vector<unsigned char> out(size, 0xFF);
  if (variant % 2 == 0) return out;  // all ones: a NaN for every float type, -1 for signed ints
  std::uint64_t bits = 0;
  switch (dtype) {
    case DType::F32:
      bits = 0x7FC1DEADull;
      break;  // quiet NaNs with a payload
    case DType::F64:
      bits = 0x7FF8DEADBEEFDEADull;
      break;
    case DType::F16:
      bits = 0x7E5Dull;
      break;
    case DType::BF16:
      bits = 0x7FDAull;
      break;
    case DType::I8:
    case DType::U8:
      bits = 0xA5ull;
      break;
    case DType::I32:
    case DType::U32:
      bits = 0xDEADBEEFull;
      break;
    case DType::I64:
      bits = 0xDEADBEEFDEADBEEFull;
      break;
  }
  std::memcpy(out.data(), &bits, size);  // little-endian: the low bytes
  return out;
}

long count_pattern(const void* data, DType dtype, long count, const unsigned char* pattern) {
  std::size_t size = dtype_size(dtype);
  const unsigned char* p = static_cast<const unsigned char*>(data);
  long n = 0;
  for (long i = 0; i < count; ++i) n += std::memcmp(p + std::size_t(i) * size, pattern, size) == 0;
  return n;
}

const std::vector<unsigned char>& guard_pattern() {
  static const std::vector<unsigned char> pattern = [] {
    std::vector<unsigned char> g(kGuardBytes);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<unsigned char>(mix64(i) >> 56);
    return g;
  }();
  return pattern;
}

std::uint64_t checksum(const void* data, std::size_t bytes, std::uint64_t seed) {
  constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  std::uint64_t v[4] = {seed + kP1 + kP2, seed + kP2, seed, seed - kP1};
  std::size_t i = 0;
  for (; i + 32 <= bytes; i += 32) {  // four independent lanes keep the multipliers busy
    for (int k = 0; k < 4; ++k) {
      std::uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      v[k] = rotl(v[k] + w * kP2, 31) * kP1;
    }
  }
  std::uint64_t h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18) + bytes;
  for (; i < bytes; ++i) h = rotl(h ^ (p[i] * kP1), 11) * kP2;
  return mix64(h);
}

std::uint64_t checksum_combine(std::uint64_t sum, std::uint64_t chunk_sum, std::size_t index) {
  return mix64(sum ^ (chunk_sum + std::uint64_t(index) * kGolden));
}

std::uint64_t checksum_chunked(const void* data, std::size_t bytes) {
  if (bytes == 0) return checksum(nullptr, 0);
  const unsigned char* p = static_cast<const unsigned char*>(data);
  long chunks = long((bytes + kChecksumChunk - 1) / kChecksumChunk);
  std::vector<std::uint64_t> sums(std::size_t(chunks), 0);
  parallel_chunks(chunks, 1, [&](long c, long, long) {
    std::size_t off = std::size_t(c) * kChecksumChunk;
    sums[std::size_t(c)] = checksum(p + off, std::min(kChecksumChunk, bytes - off));
  });
  std::uint64_t sum = 0;
  for (std::size_t c = 0; c < sums.size(); ++c) sum = checksum_combine(sum, sums[c], c);
  return sum;
}

}  // namespace kernelfoundry
