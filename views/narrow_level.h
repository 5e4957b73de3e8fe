// The narrowing of one deeper level (NOTE [ Boxes of a level's leaf grid ]),
// shared by Slice and AsStrided and tested on its own against a brute-force
// search for a box.
#ifndef STRATA_VIEWS_NARROW_LEVEL_H_
#define STRATA_VIEWS_NARROW_LEVEL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "layout/layout.h"
#include "layout/small_vector.h"

namespace strata {
namespace views_internal {

// NOTE [ Boxes of a level's leaf grid ]
//
// A view reaches level i through `reached`, a layout over the view's new
// level-(i-1) shape whose values are level-i linear indices relative to
// `base`. Read in the level placement's leaf coordinates (colexicographic, as
// a layout reads its domain), those indices must fit a box: per leaf a range
// {d_a + g_a * j : j < n_a} that starts at base's own digits d_a, holds every
// reached coordinate (padding may stay inside) and re-expresses the reached
// indices as a layout in the box's colexicographic order. The box is the
// level's new placement: leaf a keeps its place in the shape, with extent n_a
// and stride g_a times its stride, and d_a times its stride moves into the
// offset.
//
// Reached indices are base + sum_k c_k t_k over the leaves (n_k, t_k) of
// `reached`. Their digits are the digit-wise sums of base's and the t_k's
// exactly when no leaf overflows: d_a + sum_k (n_k - 1) digit_a(t_k) < e_a.
// Then each leaf's range follows from the digits (g_a is the gcd of the
// digits that move, n_a reaches their sum), and in the box the index is
// sum_k c_k sum_a (digit_a(t_k) / g_a) * box_weight_a, a layout.
//
// Where a leaf overflows, coordinates carry into the next leaf, and a layout
// can carry with them only if the box covers that leaf seamlessly: steps of
// g_a dividing e_a from d_a < g_a, and the next leaf stepped by 1 -- then the
// two leaves read like one of extent e_a * e_(a+1). So overflowing leaves are
// merged with the next one, and the digits taken again, until none overflows
// (the swizzled 128x4 scale layout: a 128-row slice merges the leaves 32 and 4
// of its row mode, as it covers a whole tile). A merged run of leaves
// a..b is admitted iff d_a < g_a = gcd(e_a, its moving digits) and d is 0 on
// every leaf strictly inside; its box is whole there, and leaf b is stepped
// by 1 up to the digit of the largest index reached. Otherwise no box holds
// the reached coordinates: a slice that starts inside a 128-row tile and
// crosses into the next wraps leaf 1 of extent 4 from a non-zero coordinate.
//
// Cost: O(leaves(placement)^2 * leaves(reached)), never O(elements).

// The box in the level's original leaf coordinates: start, step and extent
// per leaf of the level's placement.
struct LevelBox {
  layout_internal::SmallVector<int64_t, 8> start, step, extent;
  // What the box adds to the level's offset.
  int64_t offset_shift = 0;
  // Whether the box is the whole level from index 0 (nothing changes).
  bool whole = false;
};

// The views' path: finds the box of `placement`'s leaf grid that `reached`
// reaches from `base`, writes it into `*box`, `placement` narrowed to it into
// `*new_placement` and `reached` re-expressed into it into `*new_adjacent`.
// Where the box is whole, the two layouts are written only with
// `write_whole`. `new_adjacent` may be `&reached` (it is read first);
// `new_placement` must not be `&placement`. Errors are ValueErrors that say
// why no box exists (the caller names the level); the layouts are then
// unspecified.
absl::Status NarrowLevelInto(const Layout& placement, int64_t base,
                             const Layout& reached, bool write_whole,
                             LevelBox* box, Layout* new_placement,
                             Layout* new_adjacent);

// NarrowLevelInto as one value, for tests.
struct NarrowedLevel : LevelBox {
  // The level's placement: `placement` narrowed to the box.
  Layout placement;
  // The new adjacent layout into the box: `reached` re-expressed.
  Layout adjacent;
};
absl::StatusOr<NarrowedLevel> NarrowLevel(const Layout& placement, int64_t base,
                                          const Layout& reached);

}  // namespace views_internal
}  // namespace strata

#endif  // STRATA_VIEWS_NARROW_LEVEL_H_
