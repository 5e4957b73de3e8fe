// Typed loads and stores of single values of any built-in simple dtype, as
// double or int64 (NOTE [ One dtype switch ]). Conversions: floats to integers
// truncate toward zero and saturate (NaN -> 0); to bool, non-zero is true; to
// the narrow floating formats, round to nearest even and saturate
// (dtype/float_formats.h). Sub-byte values go through dtype/packing.h
// (NOTE [ Sub-byte storage ]).
#ifndef STRATA_OPS_INTERNAL_ELEMENT_IO_H_
#define STRATA_OPS_INTERNAL_ELEMENT_IO_H_

#include <cstdint>

#include "dtype/dtype.h"
#include "ops/scalar.h"

namespace strata {
namespace ops_internal {

// Whether values of `dtype` are read as integers (bool and integer dtypes).
inline bool IsIntegral(const SimpleDType& dtype) {
  return !dtype.is_floating();
}

double LoadDouble(const SimpleDType& dtype, const void* base, int64_t index);
int64_t LoadInt(const SimpleDType& dtype, const void* base, int64_t index);
void StoreDouble(const SimpleDType& dtype, void* base, int64_t index,
                 double value);
void StoreInt(const SimpleDType& dtype, void* base, int64_t index,
              int64_t value);
// `value` wrapped to integral `dtype` as a store and a load would (two's
// complement for the integers, != 0 for bool); other dtypes return it as is.
// Integer arithmetic rounds to its compute dtype with it before converting
// to another out dtype (uint8 64 negated is 192 also in a float32 out).
int64_t WrapToIntegral(const SimpleDType& dtype, int64_t value);
// A Scalar stored as a float (StoreDouble) or an integer (StoreInt).
void StoreScalar(const SimpleDType& dtype, void* base, int64_t index,
                 const Scalar& value);

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_ELEMENT_IO_H_
