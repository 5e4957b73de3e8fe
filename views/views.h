// Pure layout views of Tensors: no data moves, each result is a fresh
// representation validated by the framework-owned factory (including the
// dtype's rules), in O(rank).
//
// Tensor-level conventions follow NumPy/PyTorch/JAX on the dims of a Tensor:
// the top-level modes of L_0 (a hierarchical mode moves as one dim; an integer
// layout is one dim; "()" is rank 0): row-major reshape, JAX's
// broadcast_in_dim, storage-relative as_strided. Vocabulary: Tensor-level APIs
// and their errors say "dim" (and "shape" for the dims' extents: a
// std::vector<int64_t> from Tensor::shape(), an absl::Span<const int64_t> as
// an argument); the layout algebra below them says "mode". Every error of
// a view begins with the view's name ("Slice: ...").
//
// NOTE [ The view invariant ]
// A view is a map sigma from new logical coordinates to source coordinates. On
// a multi-subtensor Tensor it is correct iff for every new coordinate c the
// carrier index reached at every level (through placements and adjacent
// layouts) equals the one reached from sigma(c) in the source. Offset-free
// views (permute, squeeze, unsqueeze, broadcast_to, broadcast_in_dim, reshape)
// transform L_0 and S_0 alike and keep deeper levels. A slice (and as_strided)
// moves the start's image at each deeper level into that level's offset and
// narrows its placement to the box still reached; where the reached set is not
// exactly such a box the view fails with a ValueError naming the level.
#ifndef STRATA_VIEWS_VIEWS_H_
#define STRATA_VIEWS_VIEWS_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"

namespace strata {

// Reorders the dims: dim i of the result is dim perm[i] of the source. Errors
// (ValueError): perm repeats or misses a dim, or has the wrong length.
absl::StatusOr<Tensor> Permute(const Tensor& tensor,
                               absl::Span<const int64_t> perm);

// Elements start, start + step, ... (< stop) of dim `dim`.
// Errors (ValueError): dim out of range, step <= 0, start < 0, start > stop,
// stop above the extent; a hierarchical dim whose sliced elements are not a
// layout; on a multi-subtensor Tensor, a deeper level whose reached set is not
// a box (and the dtype's rules, e.g. a block-scaled slice that cuts a block).
absl::StatusOr<Tensor> Slice(const Tensor& tensor, int64_t dim, int64_t start,
                             int64_t stop, int64_t step = 1);

// The same elements in row-major (C) order with dim extents `shape`. A view
// whenever some layout expresses it. Errors (ValueError): sizes differ, a
// negative extent, or no layout expresses the result (the message names the
// coalesced modes that block it).
absl::StatusOr<Tensor> Reshape(const Tensor& tensor,
                               absl::Span<const int64_t> shape);

// PyTorch's as_strided: the new placement `layout` at absolute carrier index
// `offset` of subtensor zero's carrier. On a multi-subtensor Tensor the new
// coordinates are mapped back through the left inverse of L_0 and every carrier
// index must be one L_0 reaches. Errors (ValueError): negative offset, a
// placement exceeding the carrier; for several levels: L_0 not injective, or
// the new layout reaching indices L_0 does not reach.
absl::StatusOr<Tensor> AsStrided(const Tensor& tensor, const Layout& layout,
                                 int64_t offset);

// NumPy broadcasting to the dim extents `shape` (trailing dims align; a dim of
// extent 1 broadcasts with stride 0; new leading dims have stride 0).
// Errors (ValueError): fewer target dims than the Tensor's rank, a non-1
// extent that differs from its target, a negative extent.
absl::StatusOr<Tensor> BroadcastTo(const Tensor& tensor,
                                   absl::Span<const int64_t> shape);

// JAX's broadcast_in_dim: source dim i becomes dim dims[i] of `shape`, dims
// strictly increasing; every other dim is new (stride 0). Errors (ValueError):
// dims of the wrong length, not strictly increasing or out of range; a source
// extent that is neither 1 nor its target extent.
absl::StatusOr<Tensor> BroadcastInDim(const Tensor& tensor,
                                      absl::Span<const int64_t> shape,
                                      absl::Span<const int64_t> dims);

// Removes dim `dim` (or every dim of extent 1 when dim is empty).
// Errors (ValueError): dim out of range, or its extent is not 1.
absl::StatusOr<Tensor> Squeeze(const Tensor& tensor,
                               std::optional<int64_t> dim = std::nullopt);

// Inserts a dim of extent 1 before position dim (0 <= dim <= rank).
absl::StatusOr<Tensor> Unsqueeze(const Tensor& tensor, int64_t dim);

}  // namespace strata

#endif  // STRATA_VIEWS_VIEWS_H_
