#include "dtype/block_scale_rule.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dtype/dtype.h"
#include "dtype/registry.h"
#include "layout/algebra.h"
#include "layout/small_vector.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

// One coalesced piece of a mode of S_0: `extent` steps of `stride` in L_1's
// colexicographic domain.
struct Piece {
  int64_t extent;
  int64_t stride;
};

// What the scale does along one top-level mode of the value shape (NOTE
// [ The block-scaling rule ]).
struct ModeScale {
  int64_t extent = 1;     // N
  int64_t block = 1;      // b: values per scale; >= N for a constant mode
  bool broadcast = true;  // L_0 has stride 0 on every leaf of extent > 1
  bool repeats = false;   // a moving piece of S_0 is followed by a stride 0
  int matched = -1;       // the entry of BlockScaling::blocks it took
};

// Every mode of S_0 and its moving pieces, at most a few per mode.
struct ScaleAnalysis {
  layout_internal::SmallVector<ModeScale, 8> modes;
  layout_internal::SmallVector<Piece, 16> pieces;
  layout_internal::SmallVector<int, 8>
      first_piece;  // per mode, then one past the end
  // Leaves of L_1 that a mode's block absorbed (NOTE [ Ragged blocks ]).
  layout_internal::SmallVector<bool, 16> absorbed;
};

// Appends leaf (e, d) to the coalesced pieces of the mode being read.
using Pieces = layout_internal::SmallVector<Piece, 16>;

void AddLeaf(int64_t e, int64_t d, Pieces* scratch) {
  if (e == 1) return;
  if (!scratch->empty()) {
    Piece& last = scratch->back();
    // extent * stride may pass INT64_MAX where the layout fits; such a
    // product is never a stride of the layout.
    int64_t seam;
    if (CheckedMul(last.extent, last.stride, &seam) && d == seam) {
      last.extent *= e;  // At most the layout's size.
      return;
    }
  }
  scratch->push_back({e, d});
}

// Reads S_0 mode by mode (the tokens of its shape; L_0 has the same leaves):
// each mode's extent, whether L_0 broadcasts it, its shared prefix b0 and its
// moving pieces.
void ReadModes(const Layout& s0, const Layout& l0, ScaleAnalysis* out) {
  const IntTuple& shape = s0.shape();
  const int32_t* tokens = shape.tokens().data();
  const int64_t* extents = shape.leaves().data();
  const int64_t* s_strides = s0.stride().leaves().data();
  const int64_t* l_strides = l0.stride().leaves().data();
  const int rank = shape.is_leaf() ? 1 : tokens[0];
  int token = shape.is_leaf() ? 0 : 1;
  int leaf = 0;
  Pieces scratch;
  for (int i = 0; i < rank; ++i) {
    ModeScale mode;
    scratch.clear();
    int pending = 1;  // Nodes of the mode still to visit.
    while (pending > 0) {
      const int32_t t = tokens[token++];
      --pending;
      if (t != IntTuple::kLeafToken) {
        pending += t;
        continue;
      }
      const int64_t e = extents[leaf];
      mode.extent *= e;  // At most the layout's size.
      mode.broadcast = mode.broadcast && (e <= 1 || l_strides[leaf] == 0);
      AddLeaf(e, s_strides[leaf], &scratch);
      ++leaf;
    }
    size_t k = 0;
    if (!scratch.empty() && scratch[0].stride == 0) {
      mode.block = scratch[0].extent;
      k = 1;
    }
    out->first_piece.push_back(static_cast<int>(out->pieces.size()));
    for (; k < scratch.size(); ++k) {
      if (scratch[k].stride == 0) {
        mode.repeats = true;
        continue;
      }
      out->pieces.push_back(scratch[k]);
    }
    out->modes.push_back(mode);
  }
  out->first_piece.push_back(static_cast<int>(out->pieces.size()));
}

// Leaf j of L_1 (flattened) with its colexicographic weight in L_1's domain;
// weights past INT64_MAX are INT64_MAX (no stride of S_0 equals them).
struct Level1Leaf {
  int64_t extent;
  int64_t stride;
  int64_t weight;
};

layout_internal::SmallVector<Level1Leaf, 16> Level1Leaves(const Layout& l1) {
  layout_internal::SmallVector<Level1Leaf, 16> leaves;
  const auto e = l1.shape().leaves();
  const auto d = l1.stride().leaves();
  int64_t weight = 1;
  for (size_t j = 0; j < e.size(); ++j) {
    leaves.push_back({e[j], d[j], weight});
    if (!CheckedMul(weight, e[j], &weight)) weight = INT64_MAX;
  }
  return leaves;
}

// The first moving piece of each mode absorbs the stride-0 leaves of L_1 it
// starts on (NOTE [ Ragged blocks ]): the mode's block grows by their
// extent, and the piece steps over them.
void AbsorbMergingLeaves(absl::Span<const Level1Leaf> leaves,
                         ScaleAnalysis* a) {
  for (size_t m = 0; m < a->modes.size(); ++m) {
    ModeScale& mode = a->modes[m];
    if (mode.broadcast || a->first_piece[m] == a->first_piece[m + 1]) continue;
    Piece& piece = a->pieces[a->first_piece[m]];
    // A partial merge (a ragged last block) ends the mode: the piece must be
    // its last.
    const bool last = a->first_piece[m] + 1 == a->first_piece[m + 1];
    size_t j = 0;
    while (j < leaves.size() && leaves[j].weight < piece.stride) ++j;
    for (; j < leaves.size() && leaves[j].weight == piece.stride &&
           piece.extent > 1;
         ++j) {
      const Level1Leaf& leaf = leaves[j];
      if (leaf.extent <= 1) continue;
      if (leaf.stride != 0 || a->absorbed[j]) break;
      if (piece.extent % leaf.extent != 0 && !last) break;
      int64_t block;
      if (!CheckedMul(mode.block, leaf.extent, &block)) break;
      mode.block = block;
      a->absorbed[j] = true;
      piece.extent = CeilDiv(piece.extent, leaf.extent);
      int64_t next;
      piece.stride =
          CheckedMul(leaf.weight, leaf.extent, &next) ? next : INT64_MAX;
    }
  }
}

// Whether pieces (extent, |stride|) reach distinct indices: sorted by
// stride, each steps past the farthest index all the smaller ones reach
// together (a mixed radix, which is injective). Otherwise *clash names the
// first piece that does not.
bool Disjoint(layout_internal::SmallVector<Piece, 16>& pieces,
              std::string* clash) {
  // Few pieces: an insertion sort by |stride|.
  for (size_t k = 0; k < pieces.size(); ++k) {
    Piece p = pieces[k];
    p.stride = p.stride < 0 ? -p.stride : p.stride;
    size_t j = k;
    for (; j > 0 && pieces[j - 1].stride > p.stride; --j) {
      pieces[j] = pieces[j - 1];
    }
    pieces[j] = p;
  }
  int64_t reach = 0;  // The farthest index the pieces so far reach.
  for (size_t k = 0; k < pieces.size(); ++k) {
    const Piece& p = pieces[k];
    int64_t span;
    if (k > 0 && p.stride <= reach) {
      *clash = absl::StrCat("(", p.extent, "):(", p.stride,
                            ") steps onto indices up to ", reach,
                            " that smaller strides reach");
      return false;
    }
    if (!CheckedMul(p.stride, p.extent - 1, &span) ||
        !CheckedAdd(reach, span, &reach)) {
      *clash =
          absl::StrCat("(", p.extent, "):(", p.stride, ") reaches past int64");
      return false;
    }
  }
  return true;
}

std::string BlockText(int64_t b) {
  return b == kWholeMode ? std::string("whole") : absl::StrCat(b);
}

// "mode 0 -> (4):(1)" for each mode of S_0, for messages.
std::string ModesText(const Layout& s0) {
  std::vector<std::string> seen;
  for (int i = 0; i < s0.rank(); ++i) {
    const Layout mode = s0.shape().is_leaf() ? s0 : s0.mode(i);
    seen.push_back(absl::StrCat("mode ", i, " -> ", Coalesce(mode).ToString()));
  }
  return absl::StrJoin(seen, "; ");
}

bool AllLeavesZero(const Layout& layout) {
  const auto e = layout.shape().leaves();
  const auto d = layout.stride().leaves();
  for (size_t j = 0; j < e.size(); ++j) {
    if (e[j] > 1 && d[j] != 0) return false;
  }
  return true;
}

}  // namespace

std::string BlockScaling::Describe() const {
  std::string text;
  if (blocks.empty()) {
    text = "one scale for the whole Tensor";
  } else if (blocks.size() == 1 && blocks[0] != kWholeMode) {
    text = absl::StrCat("one scale per block of ", blocks[0], " values along ",
                        chosen_mode ? "one mode" : "the last mode");
  } else if (blocks.size() == 1) {
    text = "one scale along the whole last mode";
  } else {
    text = absl::StrCat("one scale per block of ",
                        absl::StrJoin(blocks, "x",
                                      [](std::string* out, int64_t b) {
                                        out->append(BlockText(b));
                                      }),
                        " values on the last ", blocks.size(), " modes");
  }
  if (!blocks.empty()) {
    absl::StrAppend(&text, other_modes == 1 ? ", 1 on every other mode"
                                            : ", whole on every other mode");
  }
  if (ragged) absl::StrAppend(&text, " (a partial last block allowed)");
  return text;
}

BlockScaleRule::BlockScaleRule(int64_t block_size)
    : BlockScaleRule(BlockScaling{{block_size}, 1, false, true}, false) {}

BlockScaleRule::BlockScaleRule(BlockScaling scaling, bool tensor_scale)
    : scaling_(std::move(scaling)), tensor_scale_(tensor_scale) {}

namespace {

// The rule's whole judgement (NOTE [ The block-scaling rule ]): OkStatus with
// *blocked_mode the mode that took the single entry of a one-mode format (-1
// where none did), or the rule's error.
absl::Status Judge(const BlockScaling& scaling, bool tensor_scale,
                   const RepresentationValidationContext& context,
                   int* blocked_mode) {
  *blocked_mode = -1;
  const std::string& name = context.logical_dtype().name();
  const int needed = tensor_scale ? 3 : 2;
  const auto adjacent = context.adjacent_layouts();
  // A context of fewer levels (one a rule's caller made by hand) has no L_1.
  if (context.num_levels() < needed ||
      static_cast<int>(adjacent.size()) < needed - 1) {
    return ValueErrorCat(
        name, ": block-scaled representations need a scale ", "level",
        tensor_scale ? " and a tensor-scale level" : "", " (", needed,
        " levels); this one has ", context.num_levels());
  }
  const Layout& l0 = context.placement_layout(0);
  // An empty Tensor has no value, hence no block to give a scale to.
  if (l0.size() == 0) return absl::OkStatus();
  const Layout& s0 = adjacent[0];
  const Layout& l1 = context.placement_layout(1);

  ScaleAnalysis a;
  ReadModes(s0, l0, &a);
  const auto leaves = Level1Leaves(l1);
  a.absorbed.assign(leaves.size(), false);
  bool merging = false;
  for (const Level1Leaf& leaf : leaves) {
    merging = merging || (leaf.extent > 1 && leaf.stride == 0);
  }
  if (merging) AbsorbMergingLeaves(leaves, &a);

  const auto refuse = [&](absl::string_view problem) {
    return ValueErrorCat(name, " needs ", scaling.Describe(),
                         " (its block scaling): ", problem,
                         " (S_0 = ", s0.ToString(), ": ", ModesText(s0),
                         "; L_1 = ", l1.ToString(), ")");
  };

  // The mode's block, now that L_1's merges are known; constant modes.
  for (size_t m = 0; m < a.modes.size(); ++m) {
    ModeScale& mode = a.modes[m];
    if (mode.broadcast) continue;
    bool moves = false;
    for (int k = a.first_piece[m]; k < a.first_piece[m + 1]; ++k) {
      moves = moves || a.pieces[k].extent > 1;
    }
    if (!moves || mode.block > mode.extent) mode.block = mode.extent;
    if (mode.repeats) {
      return refuse(absl::StrCat("along mode ", m,
                                 " distinct blocks reach one scale (a stride "
                                 "0 after a moving piece)"));
    }
  }

  // Which modes look like the one block of a one-mode format, for the
  // message MX users know.
  const bool one_block = scaling.blocks.size() == 1 &&
                         scaling.blocks[0] != kWholeMode && !scaling.ragged &&
                         scaling.other_modes == 1;
  const auto count_block_like = [&]() {
    int count = 0;
    for (const ModeScale& mode : a.modes) {
      if (!mode.broadcast && mode.extent > 1 &&
          (mode.block == scaling.blocks[0] ||
           (mode.block == mode.extent && mode.extent == scaling.blocks[0]))) {
        ++count;
      }
    }
    return count;
  };
  const auto refuse_one_block = [&]() {
    return ValueErrorCat(
        name, " needs one scale per aligned block of ", scaling.blocks[0],
        " values along exactly one mode: S_0 coalesced by mode must be (",
        scaling.blocks[0],
        ",...):(0,...) on one mode, but S_0 = ", s0.ToString(), " has ",
        count_block_like(), " such modes (", ModesText(s0), ")");
  };

  // Match the modes to the format's entries: blocked and unit modes first
  // (they fit one kind of entry), then constant ones, largest first.
  layout_internal::SmallVector<bool, 4> used;
  used.assign(scaling.blocks.size(), false);
  layout_internal::SmallVector<int, 8> constants;
  for (size_t m = 0; m < a.modes.size(); ++m) {
    ModeScale& mode = a.modes[m];
    if (mode.broadcast || mode.extent <= 1) continue;
    if (mode.block == mode.extent) {
      constants.push_back(static_cast<int>(m));
      continue;
    }
    if (mode.block == 1 && scaling.other_modes == 1) continue;
    for (size_t k = 0; k < scaling.blocks.size() && mode.matched < 0; ++k) {
      if (!used[k] && scaling.blocks[k] == mode.block) {
        used[k] = true;
        mode.matched = static_cast<int>(k);
      }
    }
    if (mode.matched < 0) {
      if (one_block) return refuse_one_block();
      return refuse(absl::StrCat("mode ", m, " (extent ", mode.extent,
                                 ") has one scale per ", mode.block,
                                 " values, which is no block of the format",
                                 mode.block > 1 ? " left unmatched" : ""));
    }
    if (mode.extent % mode.block != 0 && !scaling.ragged) {
      return refuse(absl::StrCat("mode ", m, " (extent ", mode.extent,
                                 ") ends in a partial block of ",
                                 mode.extent % mode.block, " values"));
    }
  }
  std::sort(constants.begin(), constants.end(), [&](int x, int y) {
    return a.modes[x].extent > a.modes[y].extent;
  });
  for (int m : constants) {
    ModeScale& mode = a.modes[m];
    // The smallest block extent that holds the mode as one block, else a
    // whole entry, else whole other modes.
    int best = -1;
    for (size_t k = 0; k < scaling.blocks.size(); ++k) {
      const int64_t b = scaling.blocks[k];
      if (used[k] || b == kWholeMode) continue;
      const bool fits = b == mode.extent || (b > mode.extent && scaling.ragged);
      if (fits && (best < 0 || b < scaling.blocks[best])) best = k;
    }
    for (size_t k = 0; k < scaling.blocks.size() && best < 0; ++k) {
      if (!used[k] && scaling.blocks[k] == kWholeMode) best = k;
    }
    if (best >= 0) {
      used[best] = true;
      mode.matched = best;
      continue;
    }
    if (scaling.other_modes == kWholeMode) continue;
    if (one_block) return refuse_one_block();
    return refuse(absl::StrCat("mode ", m, " (extent ", mode.extent,
                               ") has one scale along all of it, and no "
                               "block of the format is left for it"));
  }
  for (size_t k = 0; k < scaling.blocks.size(); ++k) {
    const int64_t b = scaling.blocks[k];
    if (used[k] || b == kWholeMode || b == 1 || scaling.ragged) continue;
    // A block of b > 1 along a squeezed mode of extent 1 is partial.
    if (one_block) return refuse_one_block();
    return refuse(absl::StrCat("no mode holds the blocks of ", b, " values"));
  }

  // Distinct blocks reach distinct scales.
  layout_internal::SmallVector<Piece, 16> moving;
  for (size_t m = 0; m < a.modes.size(); ++m) {
    if (a.modes[m].broadcast) continue;
    for (int k = a.first_piece[m]; k < a.first_piece[m + 1]; ++k) {
      if (a.pieces[k].extent > 1) moving.push_back(a.pieces[k]);
    }
  }
  std::string clash;
  if (!Disjoint(moving, &clash)) {
    return refuse(absl::StrCat(
        "two blocks reach one scale coordinate: a moving piece of S_0 ",
        clash));
  }
  layout_internal::SmallVector<Piece, 16> level1;
  for (size_t j = 0; j < leaves.size(); ++j) {
    const Level1Leaf& leaf = leaves[j];
    if (leaf.extent <= 1) continue;
    if (a.absorbed[j]) {
      // No other piece may land on a leaf that merges coordinates.
      for (const Piece& p : moving) {
        const int64_t d = p.stride < 0 ? -p.stride : p.stride;
        int64_t next, reach;
        const bool beyond =
            CheckedMul(leaf.weight, leaf.extent, &next) && d % next == 0;
        if (!beyond && CheckedMul(d, p.extent - 1, &reach) &&
            reach >= leaf.weight) {
          return refuse(
              absl::StrCat("leaf ", j,
                           " of L_1 (stride 0) merges the scales of a mode "
                           "it is not the block of"));
        }
      }
      continue;
    }
    if (leaf.stride == 0) {
      return refuse(absl::StrCat("leaf ", j, " of L_1 (extent ", leaf.extent,
                                 ", stride 0) gives distinct blocks one "
                                 "scale"));
    }
    level1.push_back({leaf.extent, leaf.stride});
  }
  if (!Disjoint(level1, &clash)) {
    return refuse(absl::StrCat(
        "L_1 places two scale coordinates at one carrier index: its leaf ",
        clash));
  }

  if (tensor_scale) {
    const Layout& s1 = adjacent[1];
    const Layout& l2 = context.placement_layout(2);
    if (!AllLeavesZero(s1) && !AllLeavesZero(l2)) {
      return ValueErrorCat(name,
                           " needs one tensor scale at level 2 reached from "
                           "every block scale: S_1 or L_2 must have stride 0 "
                           "on every leaf of extent > 1, but S_1 = ",
                           s1.ToString(), " and L_2 = ", l2.ToString());
    }
  }
  if (scaling.blocks.size() == 1) {
    for (size_t m = 0; m < a.modes.size(); ++m) {
      if (a.modes[m].matched == 0) *blocked_mode = static_cast<int>(m);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status BlockScaleRule::Validate(
    const RepresentationValidationContext& context) const {
  int blocked;
  return Judge(scaling_, tensor_scale_, context, &blocked);
}

bool BlockScaleRule::KeepsVerdictWhenSliced(
    const RepresentationValidationContext& source,
    const ModeSlice& slice) const {
  const int needed = tensor_scale_ ? 3 : 2;
  const auto adjacent = source.adjacent_layouts();
  if (source.num_levels() < needed ||
      static_cast<int>(adjacent.size()) < needed - 1) {
    return false;
  }
  if (slice.count == 0) return true;  // An empty Tensor has no block.
  const Layout& s0 = adjacent[0];
  const Layout& l0 = source.placement_layout(0);
  const IntTuple& shape = s0.shape();
  // Not a validated source (shape(S_0) is shape(L_0)).
  if (shape.leaves().size() != l0.shape().leaves().size()) return false;
  // The mode's leaves, [first, end), read off the shape's tokens as
  // ReadModes does.
  int first = 0, end = 1;
  if (shape.is_leaf()) {
    if (slice.mode != 0) return false;
  } else {
    const auto tokens = shape.tokens();
    if (slice.mode < 0 || slice.mode >= tokens[0]) return false;
    int token = 1, leaf = 0;
    for (int i = 0; i <= slice.mode; ++i) {
      first = leaf;
      for (int pending = 1; pending > 0;) {
        const int32_t t = tokens[token++];
        --pending;
        if (t == IntTuple::kLeafToken) {
          ++leaf;
        } else {
          pending += t;
        }
      }
    }
    end = leaf;
  }
  const int64_t* extents = shape.leaves().data();
  const int64_t* s_strides = s0.stride().leaves().data();
  const int64_t* l_strides = l0.stride().leaves().data();
  // Every leaf of the mode but the last: their extents' product, and whether
  // L_0 broadcasts all of them (reads each one's values from one index).
  int64_t inner = 1;
  bool inner_broadcast = true;
  for (int k = first; k + 1 < end; ++k) {
    inner *= extents[k];
    inner_broadcast = inner_broadcast && (extents[k] <= 1 || l_strides[k] == 0);
  }
  const int64_t extent = end > first ? inner * extents[end - 1] : 1;
  if (slice.start == 0 && slice.step == 1 && slice.count == extent) {
    return true;  // The source itself.
  }
  const Layout& l1 = source.placement_layout(1);
  const auto l1_extents = l1.shape().leaves();
  const auto l1_strides = l1.stride().leaves();
  for (size_t j = 0; j < l1_extents.size(); ++j) {
    if (l1_extents[j] > 1 && l1_strides[j] == 0) return false;
  }
  const bool broadcast =
      inner_broadcast &&
      (end == first || extents[end - 1] <= 1 || l_strides[end - 1] == 0);
  if (broadcast) return true;  // The judgement skips the mode.
  Pieces pieces;
  for (int k = first; k < end; ++k) AddLeaf(extents[k], s_strides[k], &pieces);
  bool moves = false;
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (pieces[k].stride != 0) {
      moves = true;
    } else if (k > 0) {
      return false;  // A repeat, which the source cannot have.
    }
  }
  if (!moves) return false;  // A constant mode: its extent is its block.
  const bool per_value = pieces[0].stride != 0;
  if (per_value && end - first == 1) return true;
  // Whole steps of the last leaf: the block, a prefix of the inner leaves,
  // divides start and count.
  if (slice.step != 1 || inner <= 0 || slice.start % inner != 0 ||
      slice.count % inner != 0) {
    return false;
  }
  // One step of the last leaf leaves the inner leaves alone: where L_0
  // broadcasts all of them (a block whose values L_0 reads from one index),
  // the sliced mode is broadcast, and the judgement skips it and its block.
  return !(slice.count == inner && inner_broadcast);
}

absl::StatusOr<int> BlockScaleRule::BlockedMode(
    const RepresentationValidationContext& context) const {
  int blocked;
  STRATA_RETURN_IF_ERROR(Judge(scaling_, tensor_scale_, context, &blocked));
  if (blocked < 0) {
    return ValueErrorCat(context.logical_dtype().name(),
                         ": no mode of this Tensor holds the blocks (they lie "
                         "along a mode of extent 1, or the Tensor is empty)");
  }
  return blocked;
}

absl::StatusOr<const CompoundDType*> MakeBlockScaledDType(
    std::string name, const SimpleDType* element,
    std::vector<const SimpleDType*> scales, BlockScaling scaling) {
  if (scales.empty() || scales.size() > 2) {
    return ValueErrorCat("block-scaled dtype ", name,
                         " needs one scale dtype, or two (block scale, tensor "
                         "scale); got ",
                         scales.size());
  }
  if (scales.size() == 2 && scales[1] != dtypes::Float32()) {
    return ValueErrorCat("block-scaled dtype ", name,
                         ": the tensor scale must be float32, not ",
                         scales[1] == nullptr ? "null" : scales[1]->name());
  }
  if (scaling.blocks.empty() && scaling.other_modes == 1) {
    return ValueErrorCat("block-scaled dtype ", name,
                         ": no block extent and 1 on every mode is one scale "
                         "per value, not a block format");
  }
  for (int64_t b : scaling.blocks) {
    if (b < 0) {
      return ValueErrorCat("block-scaled dtype ", name, ": block extent ", b,
                           " is negative");
    }
  }
  if (scaling.other_modes != 1 && scaling.other_modes != kWholeMode) {
    return ValueErrorCat("block-scaled dtype ", name, ": other modes are 1 or ",
                         "whole, not ", scaling.other_modes);
  }
  if (scaling.chosen_mode && scaling.blocks.size() != 1) {
    return ValueErrorCat("block-scaled dtype ", name,
                         ": a chosen blocked mode needs exactly one block "
                         "extent, not ",
                         scaling.blocks.size());
  }
  const bool tensor_scale = scales.size() == 2;
  std::vector<const SimpleDType*> schema{element};
  schema.insert(schema.end(), scales.begin(), scales.end());
  return CompoundDType::Create(
      std::move(name), std::move(schema),
      {std::make_shared<BlockScaleRule>(std::move(scaling), tensor_scale)});
}

const BlockScaleRule* FindBlockScaleRule(const CompoundDType& dtype) {
  for (const auto& rule : dtype.rules()) {
    if (const auto* r = dynamic_cast<const BlockScaleRule*>(rule.get())) {
      return r;
    }
  }
  return nullptr;
}

BlockGrid MakeBlockGrid(absl::Span<const int64_t> extents,
                        absl::Span<const int64_t> block_of_mode) {
  const size_t rank = extents.size();
  BlockGrid g;
  g.block.resize(rank);
  g.count.resize(rank);
  g.stride.resize(rank);
  for (size_t m = rank; m-- > 0;) {
    const int64_t n = extents[m], b = block_of_mode[m];
    g.block[m] = std::max<int64_t>(1, b == kWholeMode ? n : std::min(b, n));
    g.count[m] = CeilDiv(n, g.block[m]);
    g.stride[m] = g.size;
    g.size *= g.count[m];  // At most the product of the extents.
  }
  return g;
}

IntTuple ScaleGridMode(int64_t extent, int64_t block) {
  if (block <= 1 || extent == 0) return extent;
  if (block >= extent) return 1;
  if (extent % block == 0) return extent / block;
  const int64_t g = std::gcd(extent, block);
  return IntTuple::Tuple({block / g, CeilDiv(extent, block)});
}

absl::StatusOr<BlockScaledValueLayouts> MakeBlockScaledValueLayouts(
    absl::Span<const int64_t> extents, absl::Span<const int64_t> block_of_mode,
    absl::Span<const int64_t> domain) {
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
    const int64_t n = extents[j];
    const int64_t b = block_of_mode[j];
    if (b == kWholeMode || (b > n && n > 0)) {
      // One scale along the whole mode.
      shape.push_back(n);
      l0_stride.push_back(row_major[j]);
      s0_stride.push_back(0);
    } else if (b > 1) {
      // (b, n/b) (n == b included), or a ragged mode's (g, n/g) (NOTE
      // [ Ragged blocks ]).
      const int64_t g = n % b == 0 ? b : std::gcd(n, b);
      shape.push_back(IntTuple::Tuple({g, n / g}));
      l0_stride.push_back(
          IntTuple::Tuple({row_major[j], times(row_major[j], g)}));
      s0_stride.push_back(IntTuple::Tuple({0, running}));
    } else {
      shape.push_back(n);
      l0_stride.push_back(row_major[j]);
      s0_stride.push_back(running);
    }
    running = times(running, domain[j]);
  }
  BlockScaledValueLayouts out;
  const IntTuple value_shape = IntTuple::Tuple(shape);
  STRATA_ASSIGN_OR_RETURN(
      out.values, Layout::Create(value_shape, IntTuple::Tuple(l0_stride)));
  STRATA_ASSIGN_OR_RETURN(
      out.adjacent, Layout::Create(value_shape, IntTuple::Tuple(s0_stride)));
  return out;
}

absl::StatusOr<RowMajorBlockScaledLayouts> MakeRowMajorBlockScaledLayouts(
    absl::Span<const int64_t> extents,
    absl::Span<const int64_t> block_of_mode) {
  const int64_t rank = static_cast<int64_t>(extents.size());
  const auto times = [](int64_t a, int64_t b) {
    int64_t p;
    return CheckedMul(a, b, &p) ? p : 0;
  };
  std::vector<IntTuple> shape(rank), stride(rank);
  std::vector<int64_t> domain(rank);
  int64_t running = 1;
  bool empty = false;
  for (int64_t j = rank; j-- > 0;) {
    const int64_t b = block_of_mode[j];
    empty = empty || extents[j] == 0;
    // A whole mode has one scale (none where the mode is empty).
    const IntTuple mode = b == kWholeMode ? IntTuple(extents[j] == 0 ? 0 : 1)
                                          : ScaleGridMode(extents[j], b);
    const int64_t count = mode.is_leaf() ? mode.value() : mode.leaves()[1];
    domain[j] =
        mode.is_leaf() ? count : times(mode.leaves()[0], mode.leaves()[1]);
    shape[j] = mode;
    stride[j] =
        mode.is_leaf() ? IntTuple(running) : IntTuple::Tuple({0, running});
    running = times(running, count);
  }
  RowMajorBlockScaledLayouts out;
  out.scale_count = empty ? 0 : running;
  STRATA_ASSIGN_OR_RETURN(out.scales, Layout::Create(IntTuple::Tuple(shape),
                                                     IntTuple::Tuple(stride)));
  STRATA_ASSIGN_OR_RETURN(
      BlockScaledValueLayouts value,
      MakeBlockScaledValueLayouts(extents, block_of_mode, domain));
  out.values = std::move(value.values);
  out.adjacent = std::move(value.adjacent);
  return out;
}

absl::StatusOr<BlockScaledValueLayouts> MakeBlockScaledValueLayouts(
    absl::Span<const int64_t> extents, int64_t blocked_dim, int64_t block,
    absl::Span<const int64_t> scale_domain) {
  std::vector<int64_t> blocks(extents.size(), 1);
  blocks[blocked_dim] = block;
  return MakeBlockScaledValueLayouts(extents, blocks, scale_domain);
}

}  // namespace strata
