// The copy kernel shared by CopyFrom, Contiguous/Clone/Cast and Scatter's
// staging: dst[c] = convert(src[c]) over aligned accesses.
#ifndef STRATA_OPS_INTERNAL_COPY_KERNEL_H_
#define STRATA_OPS_INTERNAL_COPY_KERNEL_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"
#include "dtype/dtype.h"
#include "ops/internal/iterate.h"

namespace strata {
namespace ops_internal {

// dst[c] = convert(src[c]) for every c of `extents`, through each side's
// aligned access (src broadcast already aligned). Preconditions: both passed
// RequireKernelTensor and RequireData; dst is writable.
void CopyKernel(const Tensor& dst, const std::vector<int64_t>& extents,
                const std::vector<ModeAccess>& dst_access, const Tensor& src,
                const std::vector<ModeAccess>& src_access);

// A compact row-major Tensor of `shape` in a fresh host carrier: zeroed, or
// with values unspecified until written (HostCarrier::CreateForOverwrite).
// Errors: ValueError for a negative extent (the message starts "negative
// extent"), the carrier's errors.
absl::StatusOr<Tensor> NewCompact(const SimpleDType& dtype,
                                  absl::Span<const int64_t> shape, bool zeroed);

// A compact row-major copy of `a` in `dtype` (a built-in), in a fresh host
// carrier.
absl::StatusOr<Tensor> CompactCopy(const Tensor& a, const SimpleDType& dtype);

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_COPY_KERNEL_H_
