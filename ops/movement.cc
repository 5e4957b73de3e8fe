// Creation, fill, copy and movement: Zeros, Fill, CopyFrom, Contiguous, Clone,
// Cast, IsCompactRowMajor (ops.h).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "layout/algebra.h"
#include "layout/layout.h"
#include "ops/internal/checks.h"
#include "ops/internal/copy_kernel.h"
#include "ops/internal/element_io.h"
#include "ops/internal/iterate.h"
#include "ops/internal/require.h"
#include "ops/ops.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

using ops_internal::AlignedAccess;
using ops_internal::CompactCopy;
using ops_internal::CopyKernel;
using ops_internal::DTypeOf;
using ops_internal::ForEachIndex;
using ops_internal::MayOverlap;
using ops_internal::ModeAccess;
using ops_internal::RequireBroadcastsTo;
using ops_internal::RequireData;
using ops_internal::RequireKernelTensor;
using ops_internal::RequireWritable;
using ops_internal::SameView;
using ops_internal::ShapeText;
using ops_internal::StoreScalar;

absl::StatusOr<Tensor> Zeros(const SimpleDType& dtype,
                             absl::Span<const int64_t> shape) {
  for (int64_t e : shape) {
    if (e < 0) return ValueErrorCat("Zeros: negative extent ", e);
  }
  return ops_internal::NewCompact(dtype, shape, /*zeroed=*/true);
}

absl::Status Fill(const Tensor& dst, Scalar value) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(dst, "Fill"));
  STRATA_RETURN_IF_ERROR(RequireWritable(dst, "Fill"));
  const std::vector<int64_t> shape = dst.shape();
  const SimpleDType& d = DTypeOf(dst);
  void* data = dst.carrier()->mutable_data();
  ForEachIndex<1>(shape, {AlignedAccess(dst.layout(), shape)}, {dst.offset()},
                  [&](const std::array<int64_t, 1>& i) {
                    StoreScalar(d, data, i[0], value);
                  });
  dst.carrier()->BumpVersion();
  return absl::OkStatus();
}

absl::Status CopyFrom(const Tensor& dst, const Tensor& src) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(dst, "CopyFrom"));
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(src, "CopyFrom"));
  STRATA_RETURN_IF_ERROR(RequireData(src, "CopyFrom"));
  const std::vector<int64_t> shape = dst.shape();
  STRATA_RETURN_IF_ERROR(RequireBroadcastsTo("CopyFrom", src.shape(), shape));
  STRATA_RETURN_IF_ERROR(RequireWritable(dst, "CopyFrom"));
  if (MayOverlap(dst, src) && !SameView(dst, src)) {
    // Read everything first: copy src to a temporary.
    STRATA_ASSIGN_OR_RETURN(Tensor staged, CompactCopy(src, DTypeOf(src)));
    CopyKernel(dst, shape, AlignedAccess(dst.layout(), shape), staged,
               AlignedAccess(staged.layout(), shape));
  } else {
    CopyKernel(dst, shape, AlignedAccess(dst.layout(), shape), src,
               AlignedAccess(src.layout(), shape));
  }
  dst.carrier()->BumpVersion();
  return absl::OkStatus();
}

bool IsCompactRowMajor(const Tensor& a) {
  if (a.size() <= 1) return true;
  auto modes = TopLevelModes(a.layout());
  std::reverse(modes.begin(), modes.end());
  auto reversed = MakeLayout(modes);
  if (!reversed.ok()) return false;
  const Layout c = Coalesce(*reversed);
  return c.shape().is_leaf() && c.stride().value() == 1;
}

absl::StatusOr<Tensor> Contiguous(const Tensor& a) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(a, "Contiguous"));
  STRATA_RETURN_IF_ERROR(RequireData(a, "Contiguous"));
  if (IsCompactRowMajor(a)) return a;
  return CompactCopy(a, DTypeOf(a));
}

absl::StatusOr<Tensor> Clone(const Tensor& a) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(a, "Clone"));
  STRATA_RETURN_IF_ERROR(RequireData(a, "Clone"));
  return CompactCopy(a, DTypeOf(a));
}

absl::StatusOr<Tensor> Cast(const Tensor& a, const SimpleDType& dtype) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(a, "Cast"));
  STRATA_RETURN_IF_ERROR(RequireScalarType(dtype, "Cast").status());
  STRATA_RETURN_IF_ERROR(RequireData(a, "Cast"));
  return CompactCopy(a, dtype);
}

}  // namespace strata
