// Operations with effects on one-subtensor Tensors: coordinate access,
// mutation, elementwise arithmetic, reductions, movement and scatter.
//
// Every operation first requires a one-subtensor Tensor (OneSubtensorRequired
// error naming the op and the level count, before any allocation, mutation or
// kernel), then a built-in simple dtype (TypeError for a descriptor a user
// created: NOTE [ One dtype switch ] in dtype/scalar_type.h), then checks its
// arguments, then runs. A failure has no effect. A mutation bumps the version
// of the carrier it writes exactly once per call
// (NOTE [ Carrier ownership and aliasing ] in carrier/carrier.h). Results of
// non-`Out` forms live in fresh, compact row-major host carriers.
//
// A Tensor's dims are the top-level modes of L_0 and its shape their extents
// (Tensor::shape()); broadcasting follows NumPy (trailing dims align, extent 1
// stretches). Errors begin with the operation's name ("Fill: ..."). The Tensor
// an operation writes is its first argument (CopyFrom(dst, src), Fill(dst, v),
// SetItem(t, c, v), Scatter(dst, ...), AddOut(out, a, b)), and dtype
// descriptors are passed by reference. Writing through a layout that
// maps two coordinates to one carrier value (a broadcast view, say) is a
// ValueError, as in PyTorch; so is a write whose layout cannot be proven to
// reach each value once within a fixed budget
// (NOTE [ Proving a write injective ] in ops/internal/checks.cc), and so is a
// walk over a top-level mode that does not coalesce to one stride and has more
// coordinates than both 2^24 and the carrier's size (its offset table would
// outgrow the data; NOTE [ Offset-table budget ] in ops/internal/checks.cc).
//
// Type promotion (PromoteTypes), as PyTorch's for these dtypes:
// clang-format off
//   same dtype             -> itself
//   bool with X            -> X
//   integer with integer   -> the wider; uint8 with int8 -> int16,
//                             uint8 with a wider signed integer -> that one
//   integer with floating  -> the floating
//   float16 with bfloat16  -> float32
//   floating with floating -> the wider
//   Div of two integral (or bool) operands -> float32
// clang-format on
// A rank-0 operand with an operand of rank >= 1 counts by category only, as
// in PyTorch's result_type (NOTE [ Rank-0 operands ] in elementwise.cc): the
// dimensioned operand's dtype, unless the rank-0 one is of a higher category
// (bool < integer < floating). PromoteTypes is the rule for operands of
// equal standing.
// Sub with a bool operand and Neg of bool are TypeErrors. float8_*, float4_*
// and float8_e8m0fnu are storage types, not arithmetic types: a TypeError says
// so (CopyFrom and Cast still convert to and from them).
//
// Arithmetic runs in the promoted ("compute") dtype, as PyTorch's does:
// integer arithmetic wraps (two's complement); floating operands are first
// converted to the compute dtype, the operation is computed in float for
// float32/float16/bfloat16 (double for float64) and rounded to the compute
// dtype, which is then converted to out's dtype. So int64 16777217 + float32
// 0.5 is float32 16777216. Neg flips the sign of floats (Neg(+0.0) is -0.0)
// and wraps integers.
#ifndef STRATA_OPS_OPS_H_
#define STRATA_OPS_OPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"
#include "dtype/dtype.h"
#include "layout/int_tuple.h"
#include "ops/scalar.h"

namespace strata {

// A zero-filled compact row-major Tensor over a fresh host carrier.
absl::StatusOr<Tensor> Zeros(const SimpleDType& dtype,
                             absl::Span<const int64_t> shape);

// The value at a coordinate with one component per dim (an integer for a
// rank-1 Tensor); a component addresses its dim linearly (colexicographically
// within a hierarchical dim) or hierarchically. Errors:
// ValueError for a coordinate of the wrong rank or congruence or out of range,
// or a carrier without host data.
absl::StatusOr<Scalar> GetItem(const Tensor& tensor, const IntTuple& coord);
absl::Status SetItem(const Tensor& tensor, const IntTuple& coord, Scalar value);

// Writes `value` (converted to the dtype) everywhere.
absl::Status Fill(const Tensor& dst, Scalar value);
// dst[c] = convert(src[broadcast c]). src may alias dst (it is read first).
// Errors: ValueError when src does not broadcast to dst's shape or dst overlaps
// itself.
absl::Status CopyFrom(const Tensor& dst, const Tensor& src);

enum class BinaryOp { kAdd, kSub, kMul, kDiv };
absl::StatusOr<const SimpleDType*> PromoteTypes(const SimpleDType& a,
                                                const SimpleDType& b,
                                                BinaryOp op);

absl::StatusOr<Tensor> Add(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Sub(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Mul(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Div(const Tensor& a, const Tensor& b);
absl::StatusOr<Tensor> Neg(const Tensor& a);
// out = a op b, computed in the promoted dtype and stored in out's dtype; out's
// shape must be the broadcast shape. out may be a or b exactly (in place), but
// must not otherwise overlap them (ValueError).
absl::Status AddOut(const Tensor& out, const Tensor& a, const Tensor& b);
absl::Status SubOut(const Tensor& out, const Tensor& a, const Tensor& b);
absl::Status MulOut(const Tensor& out, const Tensor& a, const Tensor& b);
absl::Status DivOut(const Tensor& out, const Tensor& a, const Tensor& b);
absl::Status NegOut(const Tensor& out, const Tensor& a);
absl::StatusOr<Tensor> BinaryOpTensor(BinaryOp op, const Tensor& a,
                                      const Tensor& b);

// The sum of all values (a rank-0 Tensor), or along `dims` (removed from the
// shape). Floating sums keep the dtype (accumulated in double); integral sums
// are int64.
absl::StatusOr<Tensor> Sum(const Tensor& a);
absl::StatusOr<Tensor> Sum(const Tensor& a, absl::Span<const int64_t> dims);

// A compact row-major copy; the same Tensor when already compact row-major.
absl::StatusOr<Tensor> Contiguous(const Tensor& a);
absl::StatusOr<Tensor> Clone(const Tensor& a);
absl::StatusOr<Tensor> Cast(const Tensor& a, const SimpleDType& dtype);
// Whether the logical elements sit at consecutive carrier indices in row-major
// order.
bool IsCompactRowMajor(const Tensor& a);

// PyTorch's scatter_: for every coordinate i of `index`,
//   dst[i with dim `dim` replaced by index[i]] = src[i].
// index is int32/int64 of dst's rank, index extents <= src's, and <= dst's
// except along `dim`. Every index value is checked against dst's extent before
// any write. Errors: TypeError (index dtype), ValueError (ranks, extents, an
// index out of range naming its position and value, dst overlapping itself).
absl::Status Scatter(const Tensor& dst, int64_t dim, const Tensor& index,
                     const Tensor& src);

}  // namespace strata

#endif  // STRATA_OPS_OPS_H_
