// Element types of harness buffers, and f16/bf16 <-> float conversions for task authors.
// C++17, header-only: task.cpp (g++ or nvcc) includes it through harness.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kernelfoundry {

// f16 and bf16 are stored as raw uint16 bits; convert with the helpers below.
enum class DType : std::uint8_t { F32, F64, F16, BF16, I8, U8, I32, U32, I64 };

inline constexpr DType f32 = DType::F32;
inline constexpr DType f64 = DType::F64;
inline constexpr DType f16 = DType::F16;
inline constexpr DType bf16 = DType::BF16;
inline constexpr DType i8 = DType::I8;
inline constexpr DType u8 = DType::U8;
inline constexpr DType i32 = DType::I32;
inline constexpr DType u32 = DType::U32;
inline constexpr DType i64 = DType::I64;

inline constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F64:
    case DType::I64:
      return 8;
    case DType::F32:
    case DType::I32:
    case DType::U32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::I8:
    case DType::U8:
      return 1;
  }
  return 0;
}

inline constexpr bool dtype_is_float(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}

inline constexpr const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "f32";
    case DType::F64:
      return "f64";
    case DType::F16:
      return "f16";
    case DType::BF16:
      return "bf16";
    case DType::I8:
      return "i8";
    case DType::U8:
      return "u8";
    case DType::I32:
      return "i32";
    case DType::U32:
      return "u32";
    case DType::I64:
      return "i64";
  }
  return "?";
}

// IEEE binary16 bits -> float (exact).
inline float half_to_float(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0x1Fu) {
    bits = sign | 0x7F800000u | (mant << 13);  // Inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise the mantissa
    std::uint32_t e = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// float -> IEEE binary16 bits, round to nearest even; overflow gives Inf, NaN stays NaN.
inline std::uint16_t float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t mag = x & 0x7FFFFFFFu;
  if (mag >= 0x7F800000u) {  // Inf or NaN
    std::uint32_t nan = mag > 0x7F800000u ? (0x200u | ((mag >> 13) & 0x3FFu)) : 0u;
    return static_cast<std::uint16_t>(sign | 0x7C00u | nan);
  }
  std::uint32_t e = mag >> 23;
  if (e > 142) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 2^16: Inf
  if (e < 102) return static_cast<std::uint16_t>(sign);            // < 2^-25: zero
  std::uint32_t h, rem, half_way;
  if (e >= 113) {  // normal half
    h = ((e - 112) << 10) | ((mag >> 13) & 0x3FFu);
    rem = mag & 0x1FFFu;
    half_way = 0x1000u;
  } else {  // subnormal half: units of 2^-24
    std::uint32_t m = (mag & 0x7FFFFFu) | 0x800000u;
    std::uint32_t shift = 126 - e;
    h = m >> shift;
    rem = m & ((1u << shift) - 1);
    half_way = 1u << (shift - 1);
  }
  if (rem > half_way || (rem == half_way && (h & 1u))) ++h;  // may carry into Inf: correct
  return static_cast<std::uint16_t>(sign | h);
}

// bfloat16 bits -> float (exact).
inline float bf16_to_float(std::uint16_t b) {
  std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// float -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

}  // namespace kernelfoundry
