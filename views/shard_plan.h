// Shard planning: which tensor-parallel / expert-parallel splits of a Tensor
// along one dim are exact views (../shared/design/formats.md section 5).
//
// NOTE [ The shard granule ]
// A part of a split is a union of consecutive granules, [a*G, min(b*G, N)),
// so the granule G is the smallest positive g for which EVERY such union is
// an admitted view (Slice), not only the single granules: for the 128x4
// swizzle a single row is a view (level 1 narrows to a box of its leaf
// grid), but rows [96, 160) cross a 128-row tile from inside it and are not,
// so the granule of its row mode is 128, as formats.md gives it; and only a
// granule closed under unions makes `pad` (an even split of granules) exact.
// G is computed from the layouts in O(rank):
//   - level 0: a union of g-ranges of dim d is a box of its L_0 mode's leaf
//     grid for every (a, b) iff g is a multiple of P, the product of the
//     mode's non-unit leaves but the last;
//   - level 1: S_0 maps the mode's last leaf (extent e, stride w) onto L_1's
//     leaf grid from the leaf of colexicographic weight w on; the c = g / P
//     steps of a granule must be a multiple of Q, the product of the leaves
//     that e steps cross below the last one it reaches (the 128-row tile
//     (32,4,..) of the swizzle: Q = 128; a ragged mode's merging leaf: 2);
//   - the rule: a non-ragged format's block b along d divides g;
// so G = min(lcm(P * Q, b), N) (1 where N <= 1; a dim L_0 broadcasts holds
// no block). A mode whose last leaf's stride is no leaf weight of L_1 (a
// layout a text can hold but no Strata reader or view makes) takes the
// smallest multiple of P * Q whose unions are views, searched where the dim
// holds at most 64 such multiples, else N (one part: always a view). The tests
// prove G equal to a brute-force search over every union on random Tensors of
// every format, views of them included.
#ifndef STRATA_VIEWS_SHARD_PLAN_H_
#define STRATA_VIEWS_SHARD_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace strata {

// The granule of dim `dim` (NOTE [ The shard granule ]). Errors (ValueError):
// a dim out of range.
absl::StatusOr<int64_t> ShardGranule(const Tensor& tensor, int64_t dim);

// The most parts one plan builds.
inline constexpr int64_t kMaxShardParts = int64_t{1} << 20;

struct ShardPart {
  int64_t begin = 0, end = 0;   // [begin, end) along the dim.
  absl::StatusOr<Tensor> view;  // Slice(tensor, dim, begin, end), or why not.
};

struct ShardPlan {
  int64_t granule = 1;
  int64_t extent = 0;  // N.
  std::vector<ShardPart> parts;
  // The smallest M >= N, a multiple of parts * granule: the extent for which
  // an even split would be exact (N when it already is).
  int64_t pad = 0;
};

// Splits dim `dim` into `parts` contiguous ranges as even as possible in
// multiples of the granule (sizes differ by at most one granule; the first
// ones take the extra granules, so the last may be shorter). Errors
// (ValueError): a dim out of range; parts < 1; more parts than ceil(N / G)
// granules (the message names G and N); a pad that overflows int64.
// ResourceExhaustedError: more than kMaxShardParts parts (each is a view the
// plan holds).
absl::StatusOr<ShardPlan> PlanShards(const Tensor& tensor, int64_t dim,
                                     int64_t parts);

}  // namespace strata

#endif  // STRATA_VIEWS_SHARD_PLAN_H_
