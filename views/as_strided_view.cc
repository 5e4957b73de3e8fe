// AsStrided: by leaves where it can, else through the inverse.
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
using views_internal::Named;
using views_internal::NarrowLevels;
using views_internal::Publish;
}  // namespace

namespace {

// NOTE [ AsStrided by leaves ]
// A multi-level AsStrided must find, for each new coordinate, the level-0
// coordinate whose carrier index it names (the general path composes with
// L_0's left inverse, then with L_0 and S_0 jointly). Where the new layout
// walks L_0's own leaves, the answer is plain: the offset's digits in L_0's
// leaves (greedy by decreasing stride, exact when it lands: L_0 is
// injective), and each new leaf (n, d) of extent > 1 either stays (d == 0:
// it reaches one coordinate) or moves one unused leaf of L_0 of stride d by
// 1 from its digit c, with c + n - 1 below its extent -- or, from c == 0, a
// run of L_0's leaves whose strides chain (e_j * s_j is the next one's
// stride), as a whole leaves and a part of the last; the new leaf is then
// refined into the run's leaves, in L_0 and S_0 alike. Distinct new leaves
// move distinct leaves, so no digit carries: the new coordinate's carrier
// index is L_0 of that coordinate, and S_0 reads it there. Anything else
// (negative strides, a leaf moved twice, a stride L_0 lacks, an offset with
// no digits) goes through composition, which gives the same layouts
// (views_test: AsStridedFastPathEqualsComposition).
bool AsStridedByLeaves(const Representation& rep, const Layout& layout,
                       int64_t offset, Representation::ViewDraft* draft,
                       int64_t* level1_base) {
  constexpr int kMaxLeaves = 16;
  const Subtensor& level0 = rep.subtensor(0);
  const Layout& l0 = level0.placement;
  const Layout& s0 = rep.adjacent_layouts()[0];
  const int64_t delta = offset - level0.offset;
  // Raw pointers: a span's operator[] checks its bound on every access.
  const int64_t* e = l0.shape().leaves().data();
  const int64_t* s = l0.stride().leaves().data();
  const int64_t* t = s0.stride().leaves().data();
  const int m = l0.shape().num_leaves();
  if (delta < 0 || m > kMaxLeaves) return false;
  // The leaves that move, by decreasing stride.
  int order[kMaxLeaves];
  int moving = 0;
  for (int j = 0; j < m; ++j) {
    if (e[j] <= 1) continue;
    if (s[j] <= 0) return false;
    int at = moving++;
    while (at > 0 && s[order[at - 1]] < s[j]) {
      order[at] = order[at - 1];
      --at;
    }
    order[at] = j;
  }
  int64_t digit[kMaxLeaves] = {};
  int64_t rest = delta;
  for (int i = 0; i < moving; ++i) {
    const int j = order[i];
    const int64_t q = rest / s[j];
    if (q >= e[j]) return false;
    digit[j] = q;
    rest -= q * s[j];  // q * s[j] <= rest.
  }
  if (rest != 0) return false;
  // The new leaves, each as its pieces: (extent, L_0 stride, S_0 stride).
  // Each piece that moves lies on its own leaf of L_0 (`used`), so there are
  // at most m of them, and one more per new leaf that does not move.
  const int64_t* n = layout.shape().leaves().data();
  const int64_t* d = layout.stride().leaves().data();
  const int new_leaves = layout.shape().num_leaves();
  if (new_leaves > kMaxLeaves) return false;
  bool used[kMaxLeaves] = {};
  int counts[kMaxLeaves];
  constexpr int kMaxPieces = 2 * kMaxLeaves;
  int64_t extents[kMaxPieces], l_strides[kMaxPieces], s_strides[kMaxPieces];
  int num_pieces = 0;
  auto find = [&](int64_t stride) {
    for (int j = 0; j < m; ++j) {
      if (e[j] > 1 && !used[j] && s[j] == stride) return j;
    }
    return -1;
  };
  for (int k = 0; k < new_leaves; ++k) {
    if (n[k] == 1 || d[k] == 0) {
      // One coordinate, or the same one n times: stride 0 in both (an
      // extent-1 leaf's stride is 0, as composition writes it).
      counts[k] = 1;
      extents[num_pieces] = n[k];
      l_strides[num_pieces] = 0;
      s_strides[num_pieces] = 0;
      ++num_pieces;
      continue;
    }
    int j = d[k] > 0 ? find(d[k]) : -1;
    if (j < 0) return false;
    int64_t need = n[k];
    int pieces = 0;
    int previous = -1;  // The leaf of L_0 the last piece moves.
    // A piece on the next leaf of L_0 (extent-1 leaves skipped) whose strides
    // chain from the previous piece's in L_0 and S_0 alike merges with it:
    // composition coalesces those leaves jointly.
    auto add_piece = [&](int64_t extent, int64_t l_stride, int64_t s_stride) {
      int next_leaf = previous + 1;
      while (previous >= 0 && next_leaf < m && e[next_leaf] == 1) ++next_leaf;
      const bool neighbour = previous >= 0 && next_leaf == j;
      previous = j;
      int64_t l_seam, s_seam;
      const int last = num_pieces - 1;
      if (neighbour && CheckedMul(extents[last], l_strides[last], &l_seam) &&
          l_seam == l_stride &&
          CheckedMul(extents[last], s_strides[last], &s_seam) &&
          s_seam == s_stride) {
        extents[last] *= extent;  // At most n[k].
        return;
      }
      extents[num_pieces] = extent;
      l_strides[num_pieces] = l_stride;
      s_strides[num_pieces] = s_stride;
      ++num_pieces;
      ++pieces;
    };
    while (true) {
      used[j] = true;
      if (need - 1 < e[j] - digit[j]) {
        add_piece(need, s[j], t[j]);
        break;
      }
      if (digit[j] != 0 || need % e[j] != 0) return false;
      add_piece(e[j], s[j], t[j]);
      need /= e[j];
      int64_t next;
      if (!CheckedMul(e[j], s[j], &next)) return false;
      j = find(next);
      if (j < 0) return false;
    }
    counts[k] = pieces;
  }
  // S_0 at the offset's coordinate: a value S_0 reaches, so no overflow.
  int64_t base = 0;
  for (int j = 0; j < m; ++j) base += digit[j] * t[j];
  *level1_base = base;
  // The new L_0 reaches what `layout` reaches (a leaf split into pieces
  // whose strides chain is the same function), so it has its bounds. S_0's
  // are the sums of its pieces' parts (NOTE [ Layout bounds ] in
  // layout/layout.cc), each at most S_0's part on the leaf of L_0 the piece
  // lies on, a different leaf for every piece that moves: no overflow.
  LayoutAssembler::DerivedBounds bounds = {layout.size(), layout.max_index(),
                                           layout.min_index()};
  for (int p = 0; p < num_pieces; ++p) {
    const int64_t part = (extents[p] - 1) * s_strides[p];
    (part >= 0 ? bounds.twin_max_index : bounds.twin_min_index) += part;
  }
  // The new L_0, its shape refined where pieces split a leaf (a one-mode
  // layout keeps one mode, as composition's results do); S_0 takes that
  // shape with its own strides.
  LayoutAssembler::WithRefinedLeaves(
      layout, absl::MakeConstSpan(counts, new_leaves),
      absl::MakeConstSpan(extents, num_pieces),
      absl::MakeConstSpan(l_strides, num_pieces),
      absl::MakeConstSpan(s_strides, num_pieces), bounds, &draft->placement(0),
      &draft->adjacent(0));
  return true;
}

}  // namespace

static absl::StatusOr<Tensor> AsStridedImpl(const Tensor& tensor,
                                            const Layout& layout,
                                            int64_t offset, bool by_leaves) {
  if (offset < 0) {
    return ValueErrorCat("AsStrided: offset ", offset,
                         " is negative; Tensor offsets must be non-negative");
  }
  const Representation& rep = TensorAccess::representation(tensor);
  if (rep.num_levels() == 1) {
    // The given layout is L_0 as it is, checked as Create checks it.
    STRATA_ASSIGN_OR_RETURN(
        auto view,
        Representation::OneLevelViewWithPlacement(rep, offset, layout));
    return MakeTensor(std::move(view));
  }
  Representation::ViewDraft draft(rep);
  draft.offset(0) = offset;
  if (layout.size() == 0) {
    // The given layout is L_0 as it is; every other path writes its own
    // (refined where S_0 splits a leaf).
    draft.placement(0) = layout;
    STRATA_ASSIGN_OR_RETURN(
        draft.adjacent(0),
        Layout::Create(layout.shape(),
                       layout.shape().TransformLeaves(
                           [](size_t, int64_t) { return int64_t{0}; })));
    return Publish(draft);
  }
  // Map each new coordinate back to a source coordinate through L_0's left
  // inverse.
  const Subtensor& level0 = rep.subtensor(0);
  // An empty Tensor reaches no carrier index: a view with elements would
  // reach some that it does not (the leaf-wise path below reads digits of
  // L_0's leaves of positive extent, and would place them).
  if (level0.placement.size() == 0) {
    return ValueErrorCat(
        "AsStrided: ", layout.ToString(), " at offset ", offset, " has ",
        layout.size(), " elements, but level 0 (", level0.placement.ToString(),
        ") is empty and reaches no carrier index");
  }
  const int64_t delta = offset - level0.offset;
  // LeftInverse is only a quasi-inverse where L_0 has stride-0 modes; a
  // carrier index would then name several source coordinates, whose deeper
  // levels may differ.
  const auto l0_extents = level0.placement.shape().leaves();
  const auto l0_strides = level0.placement.stride().leaves();
  for (size_t k = 0; k < l0_extents.size(); ++k) {
    if (l0_extents[k] > 1 && l0_strides[k] == 0) {
      return ValueErrorCat(
          "AsStrided: a multi-subtensor Tensor needs an injective L_0: ",
          level0.placement.ToString(), " has a leaf of extent ", l0_extents[k],
          " with stride 0");
    }
  }
  if (by_leaves) {
    int64_t level1_base;
    if (AsStridedByLeaves(rep, layout, offset, &draft, &level1_base)) {
      STRATA_RETURN_IF_ERROR(NarrowLevels(rep, level1_base, &draft));
      return Publish(draft);
    }
  }
  auto inverse = LeftInverse(level0.placement);
  if (!inverse.ok()) {
    return ValueErrorCat(
        "AsStrided: a multi-subtensor Tensor needs an injective "
        "L_0: ",
        inverse.status().message());
  }
  auto unreached = [&](absl::string_view why) {
    return ValueErrorCat("AsStrided: ", layout.ToString(), " at offset ",
                         offset, " reaches carrier indices that level 0 (",
                         level0.placement.ToString(), " at offset ",
                         level0.offset, ") does not: ", why);
  };
  if (delta < 0) return unreached("the offset precedes level 0's offset");
  auto back = ComposeJointly({*inverse}, delta, layout);
  if (!back.ok()) return unreached(back.status().message());
  const int64_t source_start = back->bases[0];
  // The inverse sends indices L_0 does not reach to coordinates that may lie
  // beyond L_0's domain, where composition extends L_0 along its last mode and
  // can land on the index again (L_0 = (2,2):(4,1) sends 2 to coordinate 4,
  // extended to 2): every source coordinate must be one of L_0's.
  if (int64_t last;
      back->results[0].min_index() < 0 ||
      !CheckedAdd(source_start, back->results[0].max_index(), &last) ||
      last >= level0.placement.size()) {
    return unreached("they map outside level 0's coordinates");
  }
  auto forward = ComposeJointly({level0.placement, rep.adjacent_layouts()[0]},
                                source_start, back->results[0]);
  if (!forward.ok()) return unreached(forward.status().message());
  if (forward->bases[0] != delta ||
      Coalesce(forward->results[0]) != Coalesce(layout)) {
    return unreached("they are not in the image of L_0");
  }
  // The layout, refined like S_0's image, keeps its modes: composition
  // refines an integer layout 6:1 into (2,3):(1,2) and returns a one-mode
  // tuple's mode, either of which would change the view's rank.
  auto keep_modes = [&](const Layout& x) -> absl::StatusOr<Layout> {
    auto rank = [](const Layout& l) {
      return l.shape().is_leaf() ? 1 : l.shape().rank();
    };
    if (rank(x) == rank(layout)) return x;
    if (rank(layout) == 1) return MakeLayout({x});
    return ValueErrorCat("AsStrided: composition changed the rank of ",
                         layout.ToString(), " to that of ", x.ToString());
  };
  STRATA_ASSIGN_OR_RETURN(draft.placement(0), keep_modes(forward->results[0]));
  STRATA_ASSIGN_OR_RETURN(draft.adjacent(0), keep_modes(forward->results[1]));
  STRATA_RETURN_IF_ERROR(NarrowLevels(rep, forward->bases[1], &draft));
  return Publish(draft);
}

absl::StatusOr<Tensor> AsStrided(const Tensor& tensor, const Layout& layout,
                                 int64_t offset) {
  absl::StatusOr<Tensor> result =
      AsStridedImpl(tensor, layout, offset, /*by_leaves=*/true);
  Named("AsStrided", &result);
  return result;
}

namespace views_internal {

absl::StatusOr<Tensor> AsStridedByComposition(const Tensor& tensor,
                                              const Layout& layout,
                                              int64_t offset) {
  return AsStridedImpl(tensor, layout, offset, /*by_leaves=*/false);
}

}  // namespace views_internal

}  // namespace strata
