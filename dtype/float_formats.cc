#include "dtype/float_formats.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "dtype/registry.h"

namespace strata {
float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1F;
  const uint32_t mantissa = h & 0x3FF;
  if (exponent == 0x1F) return BitsFloat(sign | 0x7F800000u | (mantissa << 13));
  if (exponent != 0) {
    return BitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
  }
  // Zero or subnormal: mantissa * 2^-24, exact in float.
  const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  return sign ? -magnitude : magnitude;
}

int MiniFloat::emax() const {
  return static_cast<int>(std::floor(std::log2(max_finite)));
}

double MiniFloat::Decode(uint32_t code) const {
  if (exponent_bits > 0 && mantissa_bits == 0 && !is_signed) {  // e8m0
    if (has_nan && code == nan_code)
      return std::numeric_limits<double>::quiet_NaN();
    return std::ldexp(1.0, static_cast<int>(code) - bias);
  }
  const int total = exponent_bits + mantissa_bits;
  const bool negative = is_signed && ((code >> total) & 1u);
  const uint32_t magnitude_code = code & ((1u << total) - 1);
  const uint32_t e = magnitude_code >> mantissa_bits;
  const uint32_t m = magnitude_code & ((1u << mantissa_bits) - 1);
  double value;
  if (e == 0) {
    value = std::ldexp(static_cast<double>(m), 1 - bias - mantissa_bits);
  } else {
    value = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mantissa_bits),
                       static_cast<int>(e) - bias);
  }
  if (value > max_finite) {
    // Above the largest finite value: e5m2's inf (m == 0) and NaNs, e4m3fn's
    // NaN.
    value = m == 0 && exponent_bits == 5
                ? std::numeric_limits<double>::infinity()
                : std::numeric_limits<double>::quiet_NaN();
  }
  return negative ? -value : value;
}

uint32_t MiniFloat::EncodeSaturating(double value) const {
  const int total = exponent_bits + mantissa_bits;
  if (std::isnan(value)) return has_nan ? nan_code : 0;
  if (exponent_bits > 0 && mantissa_bits == 0 &&
      !is_signed) {  // e8m0: 2^k only.
    if (!(value > 0)) return 0;
    const int top = has_nan ? static_cast<int>(nan_code) - 1 : (1 << total) - 1;
    // Infinity saturates (ilogb would be INT_MAX, and k + bias overflow).
    if (std::isinf(value)) return static_cast<uint32_t>(top);
    int k = std::ilogb(value);
    const double frac = value / std::ldexp(1.0, k);  // In [1, 2).
    // Round in the log domain at the geometric midpoint sqrt(2): nearest power
    // of two by ratio; ties cannot occur for representable inputs.
    if (frac > std::sqrt(2.0)) ++k;
    const int code = k + bias;
    if (code < 0) return 0;
    return static_cast<uint32_t>(code > top ? top : code);
  }
  const bool negative = std::signbit(value);
  double a = std::fabs(value);
  uint32_t magnitude_code;
  if (a >= max_finite) {
    a = max_finite;
  }
  const int emin = 1 - bias;
  int e = a == 0 ? emin : std::ilogb(a);
  if (e < emin) e = emin;
  const double quantum = std::ldexp(1.0, e - mantissa_bits);
  double rounded =
      std::nearbyint(a / quantum) * quantum;  // Ties to even (default).
  if (rounded > max_finite) rounded = max_finite;
  if (rounded < std::ldexp(1.0, emin)) {
    magnitude_code = static_cast<uint32_t>(
        std::ldexp(rounded, mantissa_bits - emin));  // Subnormal (or zero).
  } else {
    const int re = std::ilogb(rounded);
    const uint32_t mantissa =
        static_cast<uint32_t>(std::ldexp(rounded, mantissa_bits - re) -
                              std::ldexp(1.0, mantissa_bits));
    magnitude_code =
        (static_cast<uint32_t>(re + bias) << mantissa_bits) | mantissa;
  }
  // Zeros keep their sign: -0, and a negative value that rounds to zero,
  // encode as the negative zero (NOTE [ Block quantization arithmetic ]).
  if (negative && is_signed) {
    magnitude_code |= 1u << total;
  }
  return magnitude_code;
}

const MiniFloat& Float8E4M3FNFormat() {
  static const MiniFloat f{4, 3, 7, true, 448.0, true, 0x7F};
  return f;
}
const MiniFloat& Float8E5M2Format() {
  static const MiniFloat f{5, 2, 15, true, 57344.0, true, 0x7E};
  return f;
}
const MiniFloat& Float4E2M1FNFormat() {
  static const MiniFloat f{2, 1, 1, true, 6.0, false, 0};
  return f;
}
const MiniFloat& Float8E8M0FNUFormat() {
  static const MiniFloat f{8, 0, 127, false, std::ldexp(1.0, 127), true, 0xFF};
  return f;
}

const MiniFloat* MiniFloatFormat(const SimpleDType& dtype) {
  if (&dtype == dtypes::Float8E4M3FN()) return &Float8E4M3FNFormat();
  if (&dtype == dtypes::Float8E5M2()) return &Float8E5M2Format();
  if (&dtype == dtypes::Float4E2M1FN()) return &Float4E2M1FNFormat();
  if (&dtype == dtypes::Float8E8M0FNU()) return &Float8E8M0FNUFormat();
  return nullptr;
}

}  // namespace strata
