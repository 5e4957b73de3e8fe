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
using views_internal::MapModes;
using views_internal::Named;
}  // namespace

static absl::StatusOr<Tensor> BroadcastToImpl(
    const Tensor& tensor, absl::Span<const int64_t> shape_extents) {
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
