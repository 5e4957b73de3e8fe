// Storage of values as bytes, in one place.
//
// NOTE [ Sub-byte storage ]
// A carrier's size always counts values, never bytes. Values narrower than a
// byte are packed into bytes, the first value in the low bits: for
// float4_e2m1fn, value 2k is the low nibble and value 2k+1 the high nibble of
// byte k. Every sub-byte read, write and size computation goes through the
// functions of this header, as CuTe's recast_layout keeps bits-to-bytes in one
// place.
#ifndef STRATA_DTYPE_PACKING_H_
#define STRATA_DTYPE_PACKING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "dtype/dtype.h"

namespace strata {

// Bytes needed to hold `count` values of `dtype`: ceil(count * bits / 8).
// Errors (ValueError): negative count, or overflow.
absl::StatusOr<int64_t> StorageBytes(const SimpleDType& dtype, int64_t count);

// The raw bit pattern of value `index` of a packed array of `bits`-wide values
// (bits in 1, 2, 4, 8, 16, 32, 64), zero-extended.
uint64_t ReadPacked(const uint8_t* bytes, int bits, int64_t index);
// Stores the low `bits` bits of `pattern` as value `index`.
void WritePacked(uint8_t* bytes, int bits, int64_t index, uint64_t pattern);

}  // namespace strata

#endif  // STRATA_DTYPE_PACKING_H_
