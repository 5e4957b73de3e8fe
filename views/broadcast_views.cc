// The broadcasting views: BroadcastTo, BroadcastInDim.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "layout/algebra.h"
#include "layout/small_vector.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"
#include "views/internal/common.h"
#include "views/narrow_level.h"
#include "views/view_paths.h"
#include "views/views.h"

namespace strata {
namespace {
using views_internal::CheckTargetExtents;
using views_internal::IsFlat;
using views_internal::MapModes;
using views_internal::Named;
using views_internal::OneLevelFlatTensor;

// NOTE [ A flat broadcast in one pass ]
// BroadcastTo of a one-level flat Tensor (the common case: NOTE [ One-level
// flat views ] in core/representation.cc) writes each target mode's extent
// and stride, checks it and multiplies the size in one pass over the target,
// with no mode specs: through MapModes' specs, its lambda and its writer, it
// cost 20 ns more than an Unsqueeze. Where anything is wrong (a negative
// extent, an extent that cannot broadcast, a size that overflows) it returns
// false, and MapModes' path decides and reports, in its order and with its
// messages. It admits exactly what that path admits, with the same layout
// (views_test: OneLevelFlatViewsWriteTheLayoutCreateBuilds).
//
// `in` and `in_strides` are the source's `rank` modes (its leaves); `target`
// has at most LayoutAssembler::kFlatBuffer extents; `extents` and `strides`
// receive target.size() modes; `*size`, where it admits them, the view's size,
// computed as Layout::Create computes it (the product of the positive extents,
// 0 where one is 0).
bool BroadcastFlat(const int64_t* in, const int64_t* in_strides, int rank,
                   absl::Span<const int64_t> target, int64_t* extents,
                   int64_t* strides, int64_t* size) {
  const int m = static_cast<int>(target.size());
  if (m < rank) return false;
  const int lead = m - rank;
  views_internal::LeafProduct product;
  bool refused = false;
  for (int p = 0; p < m; ++p) {
    const int64_t extent = target[p];
    const int source = p - lead;
    int64_t stride = 0;  // A new mode, or one of extent 1 widened.
    if (source >= 0) {
      const int64_t from = in[source];
      if (from == extent) {
        stride = in_strides[source];
      } else {
        refused |= from != 1;
      }
    }
    refused |= extent < 0;
    product.Multiply(extent);
    extents[p] = extent;
    strides[p] = stride;
  }
  if (refused || product.overflows()) return false;
  *size = product.size();
  return true;
}

}  // namespace

static absl::StatusOr<Tensor> BroadcastToImpl(
    const Tensor& tensor, absl::Span<const int64_t> shape_extents) {
  const Representation& rep = TensorAccess::representation(tensor);
  const Layout& l0 = rep.subtensor(0).placement;
  constexpr int kFlat = LayoutAssembler::kFlatBuffer;
  if (rep.num_levels() == 1 && shape_extents.size() <= kFlat &&
      IsFlat(l0.shape())) {
    // Whole buffers: FlatLayout copies them whole.
    int64_t extents[kFlat] = {};
    int64_t strides[kFlat] = {};
    int64_t size;
    if (BroadcastFlat(l0.shape().leaves().data(), l0.stride().leaves().data(),
                      l0.shape().num_leaves(), shape_extents, extents, strides,
                      &size)) {
      return OneLevelFlatTensor(
          rep, rep.subtensor(0).offset, static_cast<int>(shape_extents.size()),
          extents, strides,
          LayoutAssembler::DerivedBounds::KeepingReach(size, l0, nullptr));
    }
  }
  const auto shape = [&] { return IntTuple::Flat(shape_extents); };
  STRATA_RETURN_IF_ERROR(CheckTargetExtents("BroadcastTo", shape_extents));
  const absl::Span<const int64_t> target = shape_extents;
  return MapModes</*kBroadcasts=*/true>(
      tensor, [&](absl::Span<const int64_t> in, auto& specs) -> absl::Status {
        const int64_t rank = in.size();
        if (static_cast<int64_t>(target.size()) < rank) {
          return ValueErrorCat("BroadcastTo: shape ", shape().ToString(),
                               " has ", target.size(),
                               " modes, fewer than the Tensor's ", rank);
        }
        const int64_t lead = target.size() - rank;
        specs.Start(target.size());
        for (int64_t p = 0; p < static_cast<int64_t>(target.size()); ++p) {
          const int64_t source = p - lead;
          if (source < 0 || (in[source] == 1 && target[p] != 1)) {
            specs.Append({-1, target[p]});
          } else if (in[source] == target[p]) {
            specs.Append({static_cast<int64_t>(source), 0});
          } else {
            return ValueErrorCat("BroadcastTo: dim ", source, " of extent ",
                                 in[source], " cannot broadcast to extent ",
                                 target[p]);
          }
        }
        specs.Finish();
        return absl::OkStatus();
      });
}

absl::StatusOr<Tensor> BroadcastTo(const Tensor& tensor,
                                   absl::Span<const int64_t> shape) {
  absl::StatusOr<Tensor> result = BroadcastToImpl(tensor, shape);
  Named("BroadcastTo", &result);
  return result;
}

static absl::StatusOr<Tensor> BroadcastInDimImpl(
    const Tensor& tensor, absl::Span<const int64_t> shape_extents,
    absl::Span<const int64_t> dims) {
  const IntTuple shape = IntTuple::Flat(shape_extents);
  STRATA_RETURN_IF_ERROR(CheckTargetExtents("BroadcastInDim", shape_extents));
  const absl::Span<const int64_t> target = shape_extents;
  return MapModes</*kBroadcasts=*/true>(
      tensor, [&](absl::Span<const int64_t> in, auto& specs) -> absl::Status {
        const int64_t rank = in.size();
        bool valid = static_cast<int64_t>(dims.size()) == rank;
        for (size_t i = 0; valid && i < dims.size(); ++i) {
          valid = dims[i] >= 0 &&
                  dims[i] < static_cast<int64_t>(target.size()) &&
                  (i == 0 || dims[i] > dims[i - 1]);
        }
        if (!valid) {
          return ValueErrorCat("BroadcastInDim: dims (",
                               absl::StrJoin(dims, ","), ") must be ", rank,
                               " strictly increasing positions in shape ",
                               shape.ToString());
        }
        size_t source = 0;
        specs.Start(target.size());
        for (int64_t p = 0; p < static_cast<int64_t>(target.size()); ++p) {
          if (source < dims.size() && dims[source] == p) {
            if (in[source] == target[p]) {
              specs.Append({static_cast<int64_t>(source), 0});
            } else if (in[source] == 1) {
              specs.Append({-1, target[p]});
            } else {
              return ValueErrorCat("BroadcastInDim: dim ", source,
                                   " of extent ", in[source],
                                   " cannot broadcast to extent ", target[p]);
            }
            ++source;
          } else {
            specs.Append({-1, target[p]});
          }
        }
        specs.Finish();
        return absl::OkStatus();
      });
}

absl::StatusOr<Tensor> BroadcastInDim(const Tensor& tensor,
                                      absl::Span<const int64_t> shape,
                                      absl::Span<const int64_t> dims) {
  absl::StatusOr<Tensor> result = BroadcastInDimImpl(tensor, shape, dims);
  Named("BroadcastInDim", &result);
  return result;
}

}  // namespace strata
