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

// One mode of a layout read leaf by leaf, coalesced as it goes: the first
// non-trivial (extent, stride) pair after merging, and whether every later
// stride is non-zero.
class CoalescedMode {
 public:
  void Add(int64_t e, int64_t d) {
    if (e == 1) return;
    // extent * stride may pass INT64_MAX (extent 2, stride 2^62) where the
    // layout itself fits; such a product is never a stride of the layout.
    int64_t seam;
    if (extent_ != 0 && CheckedMul(extent_, stride_, &seam) && d == seam) {
      extent_ *= e;  // At most the layout's size.
      return;
    }
    if (extent_ != 0) Flush();
    extent_ = e;
    stride_ = d;
  }
  // Ends the mode: the leaf being built is its last piece.
  void Finish() {
    if (extent_ != 0) Flush();
    extent_ = 0;
  }
  // Whether the finished mode coalesces to (block,...):(0,...), its later
  // strides non-zero.
  bool IsBlockOf(int64_t block) const {
    return first_extent_ == block && first_stride_ == 0 && later_nonzero_;
  }

 private:
  void Flush() {
    if (pieces_ == 0) {
      first_extent_ = extent_;
      first_stride_ = stride_;
    } else if (stride_ == 0) {
      later_nonzero_ = false;
    }
    ++pieces_;
  }
  int64_t extent_ = 0;  // The coalesced leaf being built.
  int64_t stride_ = 0;
  int pieces_ = 0;
  int64_t first_extent_ = 1;
  int64_t first_stride_ = 0;
  bool later_nonzero_ = true;
};

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
  // L_0 has S_0's shape: the same leaves make the same mode.
  const int64_t* l0_strides = l0.stride().leaves().data();
  const int rank = shape.is_leaf() ? 1 : tokens[0];
  int token = shape.is_leaf() ? 0 : 1;
  int leaf = 0;
  int count = 0;
  int last_blocked = -1;
  for (int i = 0; i < rank; ++i) {
    if (tokens[token] == IntTuple::kLeafToken) {
      // An integer mode (most modes), as CoalescedMode reads it: extent 1
      // adds nothing and L_0 broadcasts it; extent 0 leaves the mode 1:0; any
      // other extent e with stride 0 is (e):(0). A block where that is
      // (block):(0) and L_0 does not broadcast it.
      const int64_t e = s0_extents[leaf];
      const bool block_shaped =
          e == 0 ? block == 1 : e > 1 && e == block && s0_strides[leaf] == 0;
      if (block_shaped && l0_strides[leaf] != 0) {
        last_blocked = i;
        ++count;
      }
      ++token;
      ++leaf;
      continue;
    }
    // A hierarchical mode, in one walk of its tokens: its leaves coalesced
    // as they pass, and whether L_0 broadcasts it (every leaf of extent > 1
    // of stride 0).
    CoalescedMode mode;
    bool broadcast = true;
    int pending = 1;  // Nodes of the mode still to visit.
    while (pending > 0) {
      const int32_t t = tokens[token++];
      --pending;
      if (t != IntTuple::kLeafToken) {
        pending += t;
        continue;
      }
      const int64_t e = s0_extents[leaf];
      broadcast = broadcast && (e == 1 || l0_strides[leaf] == 0);
      mode.Add(e, s0_strides[leaf]);
      ++leaf;
    }
    mode.Finish();
    if (mode.IsBlockOf(block) && !broadcast) {
      last_blocked = i;
      ++count;
    }
  }
  if (count > 0) *blocked = last_blocked;
  return count;
}

}  // namespace

absl::StatusOr<int> BlockScaleRule::BlockedMode(
    const RepresentationValidationContext& context) const {
  const auto adjacent = context.adjacent_layouts();
  // A context of no level (one a rule's caller made by hand) has no L_0.
  if (adjacent.empty() || context.num_levels() == 0) {
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
  // The success path builds no StatusOr; BlockedMode gives the message.
  if (context.num_levels() > 0) {
    const Layout& l0 = context.placement_layout(0);
    // An empty Tensor has no value, hence no block to give a scale to.
    if (l0.size() == 0) return absl::OkStatus();
    const auto adjacent = context.adjacent_layouts();
    int blocked;
    if (!adjacent.empty() &&
        CountBlockedModes(adjacent[0], l0, block_size_, &blocked) == 1) {
      return absl::OkStatus();
    }
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
