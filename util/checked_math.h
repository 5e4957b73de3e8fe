// Overflow-checked 64-bit arithmetic for shapes, strides, offsets and sizes.
//
// Every helper returns false (and leaves *out unspecified) when the exact
// result does not fit in int64_t; callers turn that into a ValueError that
// names the operands.
#ifndef STRATA_UTIL_CHECKED_MATH_H_
#define STRATA_UTIL_CHECKED_MATH_H_

#include <cstdint>

namespace strata {

inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
inline bool CheckedSub(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_sub_overflow(a, b, out);
}
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

// ceil(a / b) for a >= 0, b > 0.
inline int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

}  // namespace strata

#endif  // STRATA_UTIL_CHECKED_MATH_H_
