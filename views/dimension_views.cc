// The views that map modes one to one: Permute, Squeeze, Unsqueeze.
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
using views_internal::CheckDim;
using views_internal::MapModes;
using views_internal::Named;
}  // namespace

static absl::StatusOr<Tensor> PermuteImpl(const Tensor& tensor,
                                          absl::Span<const int64_t> perm) {
  return MapModes</*kBroadcasts=*/false>(
      tensor, [&](absl::Span<const int64_t> in, auto& specs) -> absl::Status {
        const int64_t rank = in.size();
        bool valid = static_cast<int64_t>(perm.size()) == rank;
        // Which modes were named: bits of a word up to rank 64 (a vector
        // beyond, allocated only there).
        uint64_t seen_bits = 0;
        std::unique_ptr<bool[]> seen_beyond;
        if (rank > 64) seen_beyond = std::make_unique<bool[]>(rank);
        specs.Start(valid ? rank : 0);
        for (int64_t p : perm) {
          valid = valid && p >= 0 && p < rank;
          if (!valid) break;
          if (rank <= 64) {
            valid = (seen_bits >> p & 1) == 0;
            seen_bits |= uint64_t{1} << p;
          } else {
            valid = !seen_beyond[p];
            seen_beyond[p] = true;
          }
          if (!valid) break;
          specs.Append({p, 0});
        }
        specs.Finish();
        if (!valid) {
          return ValueErrorCat("Permute: (", absl::StrJoin(perm, ","),
                               ") is not a permutation of the ", rank,
                               " modes");
        }
        return absl::OkStatus();
      });
}

absl::StatusOr<Tensor> Permute(const Tensor& tensor,
                               absl::Span<const int64_t> perm) {
  absl::StatusOr<Tensor> result = PermuteImpl(tensor, perm);
  Named("Permute", &result);
  return result;
}

static absl::StatusOr<Tensor> SqueezeImpl(const Tensor& tensor,
                                          std::optional<int64_t> dim) {
  return MapModes</*kBroadcasts=*/false>(
      tensor, [&](absl::Span<const int64_t> in, auto& specs) -> absl::Status {
        if (dim.has_value()) {
          STRATA_RETURN_IF_ERROR(CheckDim("Squeeze", *dim, in.size()));
          if (in[*dim] != 1) {
            return ValueErrorCat("Squeeze: dim ", *dim, " has extent ",
                                 in[*dim],
                                 "; only a dim of extent 1 can be removed");
          }
        }
        specs.Start(in.size());
        for (size_t i = 0; i < in.size(); ++i) {
          const bool drop =
              dim.has_value() ? static_cast<int64_t>(i) == *dim : in[i] == 1;
          if (!drop) specs.Append({static_cast<int64_t>(i), 0});
        }
        specs.Finish();
        return absl::OkStatus();
      });
}

absl::StatusOr<Tensor> Squeeze(const Tensor& tensor,
                               std::optional<int64_t> dim) {
  absl::StatusOr<Tensor> result = SqueezeImpl(tensor, dim);
  Named("Squeeze", &result);
  return result;
}

static absl::StatusOr<Tensor> UnsqueezeImpl(const Tensor& tensor, int64_t dim) {
  return MapModes</*kBroadcasts=*/false>(
      tensor, [&](absl::Span<const int64_t> in, auto& specs) -> absl::Status {
        const int64_t rank = in.size();
        if (dim < 0 || dim > rank) {
          return ValueErrorCat("Unsqueeze: position ", dim,
                               " is out of range [0, ", rank, "]");
        }
        specs.Start(rank + 1);
        for (int64_t i = 0; i < rank; ++i) {
          if (i == dim) specs.Append({-1, 1});
          specs.Append({i, 0});
        }
        if (dim == rank) specs.Append({-1, 1});
        specs.Finish();
        return absl::OkStatus();
      });
}

absl::StatusOr<Tensor> Unsqueeze(const Tensor& tensor, int64_t dim) {
  absl::StatusOr<Tensor> result = UnsqueezeImpl(tensor, dim);
  Named("Unsqueeze", &result);
  return result;
}

}  // namespace strata
