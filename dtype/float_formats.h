// Encodings of the floating storage dtypes, in one place: IEEE half, bfloat16,
// and the OCP 8-bit / 4-bit formats (float8_e4m3fn, float8_e5m2,
// float8_e8m0fnu, float4_e2m1fn).
//
// Encoders round to nearest, ties to even; the narrow formats saturate to their
// largest finite value (the OCP MX conversion with saturation). NaN encodes as
// the format's NaN, or as +0 for a format without one (float4_e2m1fn). A
// negative value that rounds to zero, and -0, encode as the negative zero of
// a signed format (e4m3 0x80, e2m1 0x8), as IEEE conversions do.
#ifndef STRATA_DTYPE_FLOAT_FORMATS_H_
#define STRATA_DTYPE_FLOAT_FORMATS_H_

#include <cstdint>
#include <cstring>

#include "dtype/dtype.h"

namespace strata {

// The IEEE binary32 bit pattern of a float, and back.
inline uint32_t FloatBits(float value) {
  uint32_t u;
  std::memcpy(&u, &value, 4);
  return u;
}
inline float BitsFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float HalfToFloat(uint16_t bits);

// The narrowing conversions are inline: the dequantize kernels store one per
// value, and a call each kept the loops from vectorizing. Round to nearest
// even, overflow to infinity, NaN quiet with its sign.
inline uint16_t FloatToHalf(float value) {
  const uint32_t u = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u;   // NaN (quiet).
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // Rounds to inf (>= 65520).
  if (a < 0x38800000u) {                        // Below the smallest normal.
    // Subnormal half: round(a_value * 2^24) to nearest even, exactly in float
    // (adding and subtracting 2^23 rounds a value below 2^10 to an integer).
    const float scaled = BitsFloat(a) * 16777216.0f;  // * 2^24, exact.
    const float rounded = (scaled + 8388608.0f) - 8388608.0f;
    return sign | static_cast<uint16_t>(rounded);
  }
  // Normal: rebias and round the 13 dropped bits to nearest even.
  const uint32_t rebased = a - 0x38000000u;  // Exponent bias 127 -> 15.
  const uint32_t rounded = rebased + 0xFFFu + ((rebased >> 13) & 1u);
  return sign | static_cast<uint16_t>(rounded >> 13);
}

inline float BFloat16ToFloat(uint16_t bits) {
  return BitsFloat(static_cast<uint32_t>(bits) << 16);
}

inline uint16_t FloatToBFloat16(float value) {
  const uint32_t u = FloatBits(value);
  // Both results, then a select: no branch, so loops of it vectorize.
  const uint32_t nan = (u >> 16) | 0x40u;  // Quiet NaN, sign kept.
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

// A narrow floating format: sign bit (if signed), exponent, mantissa.
struct MiniFloat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool is_signed;
  double max_finite;
  bool has_nan;
  uint32_t nan_code;  // Positive NaN, when has_nan.

  // Value of `code`; NaN codes decode to NaN (e5m2 infinities to +-inf).
  double Decode(uint32_t code) const;
  // Nearest code (ties to even), saturating to +-max_finite.
  uint32_t EncodeSaturating(double value) const;
  // Largest exponent of a normal number: max_finite = (1.m) * 2^emax.
  int emax() const;
};

// The format of a floating storage dtype of at most 8 bits (nullptr otherwise).
const MiniFloat* MiniFloatFormat(const SimpleDType& dtype);

const MiniFloat& Float8E4M3FNFormat();
const MiniFloat& Float8E5M2Format();
const MiniFloat& Float4E2M1FNFormat();
// float8_e8m0fnu: unsigned, exponent only, 2^(code - 127), 0xFF is NaN.
const MiniFloat& Float8E8M0FNUFormat();

}  // namespace strata

#endif  // STRATA_DTYPE_FLOAT_FORMATS_H_
