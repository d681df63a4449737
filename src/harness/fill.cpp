// Seeded values (counter-based splitmix64), poison/guard patterns and an xxhash-style checksum.
#include "harness/fill.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
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

// One element of `T` from a double (integers: floor, clamped; halves through float).
template <class T>
inline T convert(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return T(v);
  } else {
    return clamp_to<T>(std::floor(v));
  }
}

// 16-bit floats are stored as their bits.
struct Half {
  std::uint16_t bits;
};
struct BFloat {
  std::uint16_t bits;
};
template <>
inline Half convert<Half>(double v) {
  return {float_to_half(float(v))};
}
template <>
inline BFloat convert<BFloat>(double v) {
  return {float_to_bf16(float(v))};
}

// Calls body(static_cast<T*>(dst)) with T the element type of `dtype`: the loops below are
// compiled once per type, with no switch per element.
template <class Body>
void with_type(void* dst, DType dtype, Body&& body) {
  switch (dtype) {
    case DType::F32:
      return body(static_cast<float*>(dst));
    case DType::F64:
      return body(static_cast<double*>(dst));
    case DType::F16:
      return body(static_cast<Half*>(dst));
    case DType::BF16:
      return body(static_cast<BFloat*>(dst));
    case DType::I8:
      return body(static_cast<std::int8_t*>(dst));
    case DType::U8:
      return body(static_cast<std::uint8_t*>(dst));
    case DType::I32:
      return body(static_cast<std::int32_t*>(dst));
    case DType::U32:
      return body(static_cast<std::uint32_t*>(dst));
    case DType::I64:
      return body(static_cast<std::int64_t*>(dst));
  }
}

// The ziggurat for the standard normal (Marsaglia and Tsang's method, 256 layers of equal area
// v under f(x) = exp(-x^2 / 2), the base layer holding the tail beyond r). x[i] is layer i's
// right edge (x[0] the base layer's pseudo-width v / f(r), x[1] = r, x[256] = 0) and f[i] =
// f(x[i]). Built once from r and v by the recurrence f(x[i+1]) = v / x[i] + f(x[i]).
struct Ziggurat {
  static constexpr int kLayers = 256;
  static constexpr double kR = 3.6541528853610088;
  static constexpr double kV = 0.00492867323399;
  double x[kLayers + 1], f[kLayers + 1];
  Ziggurat() {
    x[0] = kV / std::exp(-0.5 * kR * kR);
    x[1] = kR;
    for (int i = 1; i < kLayers - 1; ++i)
      x[i + 1] = std::sqrt(-2.0 * std::log(kV / x[i] + std::exp(-0.5 * x[i] * x[i])));
    x[kLayers] = 0;
    for (int i = 0; i <= kLayers; ++i) f[i] = std::exp(-0.5 * x[i] * x[i]);
  }
};
const Ziggurat& ziggurat() {
  static const Ziggurat z;
  return z;
}

// A standard normal value for counter position `i` of stream `key`. Element i owns 64 counter
// values: attempts 0-11 use four each (0-47), the tail's draws two each (48-63), so the value
// depends only on (key, i). About 1.5% of attempts fall outside the layers' inner rectangles;
// of those most are accepted. After 12 rejected attempts (or 8 in the tail) the last draw stands:
// an event of probability below 1e-20.
inline double ziggurat_normal(const Ziggurat& z, std::uint64_t key, std::uint64_t i) {
  double value = 0;
  for (std::uint64_t attempt = 0; attempt < 12; ++attempt) {
    std::uint64_t c = key + (i * 64 + attempt * 4) * kGolden;
    std::uint64_t bits = mix64(c);
    int layer = int(bits & 0xFF);
    double sign = 1.0 - 2.0 * double((bits >> 8) & 1);  // no branch: it would mispredict half
    double u = unit(bits);  // the top 53 bits: independent of the layer and sign bits
    double x = u * z.x[layer];
    value = sign * x;
    if (x < z.x[layer + 1]) return value;  // inside the part wholly under the curve
    if (layer == 0) {
      // The tail beyond r, sampled exactly (Marsaglia's method, its own rejection loop):
      // a = -ln(u1) / r, b = -ln(u2), accepted when 2b > a^2, giving r + a.
      for (std::uint64_t k = 0; k < 8; ++k) {
        std::uint64_t t = key + (i * 64 + 48 + k * 2) * kGolden;
        double a = -std::log1p(-unit(mix64(t))) / Ziggurat::kR;
        double b = -std::log1p(-unit(mix64(t + kGolden)));
        value = sign * (Ziggurat::kR + a);
        if (2 * b > a * a) return value;
      }
      return value;
    }
    // The wedge: a point uniform in the layer's rectangle above f(x[layer]), kept when it lies
    // under the curve (a rejection restarts from a new layer, as the method requires).
    double y = z.f[layer] + unit(mix64(c + kGolden)) * (z.f[layer + 1] - z.f[layer]);
    if (y < std::exp(-0.5 * x * x)) return value;
  }
  return value;
}

template <class T>
void fill_typed(T* dst, long begin, long end, const Distribution& d, std::uint64_t key) {
  switch (d.kind) {
    case Distribution::Kind::Uniform:
      for (long i = begin; i < end; ++i)
        dst[i] = convert<T>(d.a + (d.b - d.a) * unit(mix64(key + std::uint64_t(i) * kGolden)));
      break;
    case Distribution::Kind::Normal: {
      const Ziggurat& z = ziggurat();
      for (long i = begin; i < end; ++i)
        dst[i] = convert<T>(d.a + d.b * ziggurat_normal(z, key, std::uint64_t(i)));
      break;
    }
    case Distribution::Kind::Ints: {
      auto lo = static_cast<std::int64_t>(d.a);
      auto range = static_cast<std::uint64_t>(static_cast<std::int64_t>(d.b) - lo) + 1;
      for (long i = begin; i < end; ++i) {
        std::uint64_t r = mix64(key + std::uint64_t(i) * kGolden);
        std::int64_t v = lo + std::int64_t(range == 0 ? r : r % range);
        if constexpr (std::is_integral_v<T>) {
          dst[i] = T(v);  // wraps like the old per-element store: ints(a, b) fits the type
        } else {
          dst[i] = convert<T>(double(v));
        }
      }
      break;
    }
    case Distribution::Kind::Constant: {
      T value = convert<T>(d.a);
      for (long i = begin; i < end; ++i) dst[i] = value;
      break;
    }
  }
}

void fill_range(void* dst, DType dtype, long begin, long end, const Distribution& d,
                std::uint64_t key) {
  with_type(dst, dtype, [&](auto* typed) { fill_typed(typed, begin, end, d, key); });
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
