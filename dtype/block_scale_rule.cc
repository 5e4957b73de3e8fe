#include "dtype/block_scale_rule.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/errors.h"
#include "core/status_macros.h"
#include "dtype/dtype.h"
#include "layout/algebra.h"
#include "layout/checked_math.h"

namespace strata {
namespace {

// A mode's leaves of `layout` (a coalesced view, computed in place): the first
// non-trivial (extent, stride) pair after merging, and whether every later
// stride is non-zero.
struct ModeShape {
  int64_t first_extent = 1;
  int64_t first_stride = 0;
  bool later_nonzero = true;
};

// The mode is leaves [leaf_begin, leaf_end) of `layout`.
ModeShape Inspect(const Layout& layout, int leaf_begin, int leaf_end) {
  ModeShape m;
  const auto extents = layout.shape().leaves();
  const auto strides = layout.stride().leaves();
  int64_t extent = 0, stride = 0;  // The coalesced leaf being built.
  int pieces = 0;
  auto flush = [&]() {
    if (pieces == 0) {
      m.first_extent = extent;
      m.first_stride = stride;
    } else if (stride == 0) {
      m.later_nonzero = false;
    }
    ++pieces;
  };
  for (int k = leaf_begin; k < leaf_end; ++k) {
    if (extents[k] == 1) continue;
    // extent * stride may pass INT64_MAX (extent 2, stride 2^62) where the
    // layout itself fits; such a product is never a stride of the layout.
    int64_t seam;
    if (extent != 0 && CheckedMul(extent, stride, &seam) &&
        strides[k] == seam) {
      extent *= extents[k];  // At most the layout's size.
      continue;
    }
    if (extent != 0) flush();
    extent = extents[k];
    stride = strides[k];
  }
  if (extent != 0) flush();
  return m;
}

}  // namespace

namespace {

// How many top-level modes of S_0 are blocks of `block` values that L_0 does
// not broadcast; *blocked is the last of them. The modes are walked in the
// tokens (no element table: this runs in every view of a block-scaled
// Tensor).
int CountBlockedModes(const Layout& s0, const Layout& l0, int64_t block,
                      int* blocked) {
  // Raw pointers and locals: a store through `blocked` may alias the sizes
  // of the layouts' small vectors, which every access would then reload.
  const IntTuple& shape = s0.shape();
  const int32_t* tokens = shape.tokens().data();
  const int64_t* s0_extents = shape.leaves().data();
  const int64_t* s0_strides = s0.stride().leaves().data();
  const int rank = shape.is_leaf() ? 1 : tokens[0];
  int token = shape.is_leaf() ? 0 : 1;
  int leaf_end = 0;
  int count = 0;
  int last_blocked = -1;
  const int64_t* l0_strides = l0.stride().leaves().data();
  for (int i = 0; i < rank; ++i) {
    const int leaf_begin = leaf_end;
    if (tokens[token] == IntTuple::kLeafToken) {
      // An integer mode (most modes): a block where it is (block):(0) and L_0
      // does not broadcast it; Inspect and the loops below say the same.
      ++token;
      ++leaf_end;
      if (block > 1 && s0_extents[leaf_begin] == block &&
          s0_strides[leaf_begin] == 0 && l0_strides[leaf_begin] != 0) {
        last_blocked = i;
        ++count;
      }
      continue;
    }
    token = shape.SubtreeEnd(token, &leaf_end);
    // Coalescing keeps the stride of a mode's first leaf of extent > 1: where
    // it is not 0, the mode is not a block (most modes, found in O(1)).
    int k = leaf_begin;
    while (k < leaf_end && s0_extents[k] == 1) ++k;
    if (k < leaf_end && s0_extents[k] > 0 && s0_strides[k] != 0) continue;
    const ModeShape s = Inspect(s0, leaf_begin, leaf_end);
    if (s.first_extent != block || s.first_stride != 0 || !s.later_nonzero)
      continue;
    // L_0 has S_0's shape: the same leaves make the same mode, a broadcast
    // where every leaf of extent > 1 has stride 0.
    bool broadcast = true;
    for (int leaf = leaf_begin; leaf < leaf_end && broadcast; ++leaf) {
      broadcast = s0_extents[leaf] == 1 || l0_strides[leaf] == 0;
    }
    if (broadcast) continue;
    last_blocked = i;
    ++count;
  }
  if (count > 0) *blocked = last_blocked;
  return count;
}

}  // namespace

absl::StatusOr<int> BlockScaleRule::BlockedMode(
    const RepresentationValidationContext& context) const {
  const auto adjacent = context.adjacent_layouts();
  if (adjacent.empty()) {
    return ValueErrorCat(context.logical_dtype().name(),
                         ": block-scaled representations need a scale level");
  }
  const Layout& s0 = adjacent[0];
  int blocked = -1;
  const int count =
      CountBlockedModes(s0, context.placement_layout(0), block_size_, &blocked);
  if (count == 1) return blocked;
  // Only now, for the message: what each mode of S_0 does instead.
  const int rank = s0.rank();
  std::vector<std::string> seen;
  for (int i = 0; i < rank; ++i) {
    const Layout mode = s0.shape().is_leaf() ? s0 : s0.mode(i);
    seen.push_back(absl::StrCat("mode ", i, " -> ", Coalesce(mode).ToString()));
  }
  return ValueErrorCat(
      context.logical_dtype().name(), " needs one scale per aligned block of ",
      block_size_,
      " values along exactly one mode: S_0 coalesced by mode must be (",
      block_size_, ",...):(0,...) on one mode, but S_0 = ", s0.ToString(),
      " has ", count, " such modes (", absl::StrJoin(seen, "; "), ")");
}

absl::Status BlockScaleRule::Validate(
    const RepresentationValidationContext& context) const {
  // An empty Tensor has no value, hence no block to give a scale to.
  if (context.num_levels() > 0 && context.placement_layout(0).size() == 0) {
    return absl::OkStatus();
  }
  // The success path builds no StatusOr; BlockedMode gives the message.
  const auto adjacent = context.adjacent_layouts();
  int blocked;
  if (!adjacent.empty() &&
      CountBlockedModes(adjacent[0], context.placement_layout(0), block_size_,
                        &blocked) == 1) {
    return absl::OkStatus();
  }
  return BlockedMode(context).status();
}

absl::StatusOr<BlockScaledValueLayouts> MakeBlockScaledValueLayouts(
    absl::Span<const int64_t> extents, int64_t blocked_dim, int64_t block,
    absl::Span<const int64_t> scale_domain) {
  const int64_t rank = static_cast<int64_t>(extents.size());
  const auto times = [](int64_t a, int64_t b) {
    int64_t p;
    return CheckedMul(a, b, &p) ? p : 0;
  };
  std::vector<int64_t> row_major(rank);
  int64_t running = 1;
  for (int64_t j = rank; j-- > 0;) {
    row_major[j] = running;
    running = times(running, extents[j]);
  }
  std::vector<IntTuple> shape, l0_stride, s0_stride;
  running = 1;
  for (int64_t j = 0; j < rank; ++j) {
    if (j == blocked_dim) {
      shape.push_back(IntTuple::Tuple({block, extents[j] / block}));
      l0_stride.push_back(
          IntTuple::Tuple({row_major[j], times(row_major[j], block)}));
      s0_stride.push_back(IntTuple::Tuple({0, running}));
    } else {
      shape.push_back(extents[j]);
      l0_stride.push_back(row_major[j]);
      s0_stride.push_back(running);
    }
    running = times(running, scale_domain[j]);
  }
  BlockScaledValueLayouts out;
  const IntTuple value_shape = IntTuple::Tuple(shape);
  STRATA_ASSIGN_OR_RETURN(
      out.values, Layout::Create(value_shape, IntTuple::Tuple(l0_stride)));
  STRATA_ASSIGN_OR_RETURN(
      out.adjacent, Layout::Create(value_shape, IntTuple::Tuple(s0_stride)));
  return out;
}

}  // namespace strata
