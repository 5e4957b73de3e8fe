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

#include "dtype/dtype.h"

namespace strata {

// The IEEE binary32 bit pattern of a float, and back.
uint32_t FloatBits(float value);
float BitsFloat(uint32_t bits);

float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);
float BFloat16ToFloat(uint16_t bits);
uint16_t FloatToBFloat16(float value);

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
