// NOTE [ The block-scaling rule ]
// A block-scaled dtype stores element codes at level 0 and scales at level 1
// (and, for the formats with a tensor scale, one value at level 2); value =
// element x scale (x tensor scale). A block is a box of the value shape:
// along each top-level mode m the format gives a block extent b_m, or `whole`
// (the scale does not vary along m). The scale of value coordinate x is the
// one of block (floor(x_m / b_m) for each blocked mode m). A format lists the
// extents of its blocked modes (`blocks`: {32} for mxfp8_e4m3, {128, 128} for
// fp8_e4m3_block128x128, {whole} for the rowwise format) and what every other
// mode is (`other_modes`: 1, or whole for the tensorwise format).
//
// The rule judges the frozen context alone, in O(rank), and takes no position
// for granted: views permute, squeeze and broadcast modes, so it asks of each
// top-level mode of the value shape what the scale does along it, and then
// whether the modes can be matched to the format's blocks:
//   - A mode L_0 broadcasts (every leaf of extent > 1 has stride 0) is
//     repeated data; the scale may do anything along it.
//   - Otherwise the scale index reached along the mode is L_1 o S_0 on it.
//     Coalesced, S_0's mode is (b0, e, ...):(0, d, ...): b0 values share a
//     scale coordinate, then every step moves it. Where the first moving
//     piece lands on a stride-0 leaf of L_1 (weight d in L_1's colexicographic
//     domain), that leaf merges its E coordinates into one scale too, so the
//     block is b0 * E; this is how a ragged mode is a layout (NOTE [ Ragged
//     blocks ]). The mode's block b is that product, or the extent N where
//     the scale never moves (a constant mode).
//   - A mode with 1 < b < N must be a blocked mode of extent b, and N a
//     multiple of b unless the format is ragged; a mode with b = 1 (and
//     N > 1) one of the other modes with other_modes = 1; a constant mode
//     (b = N > 1) a whole mode, or a blocked mode of extent >= N (one block;
//     a partial one only where the format is ragged). Modes of extent 1 are
//     anything. A blocked extent no mode takes is an extent-1 mode that a view
//     squeezed: allowed where a partial block is (whole, ragged).
//   - Distinct blocks reach distinct scales: after each mode's shared prefix,
//     S_0's pieces address disjoint ranges of L_1's domain (sorted by stride,
//     each starts past the last), none lands on a leaf that merged another
//     mode's coordinates, and L_1 maps its remaining leaves injectively. A
//     stride-0 leaf of L_1 of extent > 1 that no mode's block absorbs would
//     give two blocks one scale, and is refused.
//   - A tensor scale (level 2) is one value reached from every block scale:
//     S_1 has stride 0 on every leaf of extent > 1, or L_2 does.
// An empty Tensor (L_0 of size 0) has no block and validates whatever S_0 is.
// Refusals name the dtype, the format's blocks, and what each mode of S_0
// does instead. A slice of a ragged format that lies inside one block, or
// ends inside one, is admitted: its values still reach their own scales, and
// it is a ragged Tensor with a partial last block (the frozen context cannot
// tell it from one quantized so); one that starts inside a block and crosses
// into the next is refused (by the rule, or by level 1's narrowing).
//
// NOTE [ Ragged blocks ]
// Along a mode of extent N that the block b does not divide (DeepSeek-V3's
// 576 rows with 128-row blocks: 4.5 blocks), let g = gcd(N, b): the values
// are (g, N/g) and S_0's mode (g, N/g):(0, w) gives every g values one
// level-1 coordinate, into a level-1 mode (b/g, ceil(N/b)):(0, W) whose
// stride-0 leaf merges b/g of them: value x reaches scale floor(x / b), and
// the last block is partial. L_1's domain covers b/g * ceil(N/b) >= N/g
// coordinates; the ones past N/g are reached by no value.
#ifndef STRATA_DTYPE_BLOCK_SCALE_RULE_H_
#define STRATA_DTYPE_BLOCK_SCALE_RULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dtype/representation_rule.h"
#include "layout/layout.h"

namespace strata {

class CompoundDType;
class SimpleDType;

// A block extent that spans its whole mode.
inline constexpr int64_t kWholeMode = 0;

// How a block-scaled format groups values under one scale.
struct BlockScaling {
  // The block extents of the blocked modes (each > 0, or kWholeMode). When a
  // Tensor is quantized, they are its last modes, in order; views may move
  // them anywhere.
  std::vector<int64_t> blocks;
  // What every other mode is: 1 (each coordinate its own scale) or
  // kWholeMode.
  int64_t other_modes = 1;
  // Whether a block extent may leave a partial last block (NOTE [ Ragged
  // blocks ]).
  bool ragged = false;
  // For a format of one blocked mode: whether the quantizer's caller chooses
  // that mode (BLOCKED_MODE), rather than the last mode.
  bool chosen_mode = false;

  // "32 along one mode", "128 on each of the last two modes, 1 on the
  // others", ...: the format's blocks in words, for messages.
  std::string Describe() const;
};

// The rule of a block-scaled format (NOTE [ The block-scaling rule ]).
class BlockScaleRule final : public RepresentationRule {
 public:
  // One blocked mode of `block_size` values, every other mode 1 (the OCP MX
  // formats, nvfp4, q8_0, q4_0).
  explicit BlockScaleRule(int64_t block_size);
  BlockScaleRule(BlockScaling scaling, bool tensor_scale);
  absl::string_view name() const override { return "block_scale"; }

  const BlockScaling& scaling() const { return scaling_; }
  // Whether the format has a third level holding one tensor scale.
  bool tensor_scale() const { return tensor_scale_; }
  // The extent of the one blocked mode, or 0 for a format of any other
  // shape.
  int64_t block_size() const {
    return scaling_.blocks.size() == 1 ? scaling_.blocks[0] : 0;
  }

  // Errors (ValueError): the Tensor is not empty and its scales are not the
  // format's blocks as NOTE [ The block-scaling rule ] says; the message
  // names the dtype, the blocks and what S_0 does instead. A context without
  // the levels the format needs is a ValueError too.
  absl::Status Validate(
      const RepresentationValidationContext& context) const override;
  // True (NOTE [ Verdicts that views keep ] in representation_rule.h): the
  // judgement reads each top-level mode of (L_0, S_0) on its own, skips the
  // modes L_0 broadcasts (extent 1 included), and then depends on the modes
  // only as a collection -- matching them to the format's blocks, and the
  // disjointness of their moving pieces, ignore their order -- and on L_1
  // and the levels below, which such views keep.
  bool KeepsVerdictWhenModesRearrange() const override { return true; }
  // NOTE [ Slices that keep the block-scaling verdict ]
  // True for a slice (NOTE [ Verdicts that slices keep ] in
  // representation_rule.h) that is empty, is the whole mode, or, where L_1
  // has no leaf of stride 0 (no ragged block merges scales), is of a mode
  // that L_0 broadcasts, of a mode with one scale per value when the mode is
  // one leaf (any start and step) or the slice takes whole steps of its last
  // leaf, or of a blocked mode by whole steps of its last leaf (whole blocks,
  // as the block is a prefix of the inner leaves) -- but not one step where
  // L_0 broadcasts every inner leaf: that slice's mode is broadcast, which
  // the judgement skips, so its block is lost. Why the verdict stays:
  // - every mode but the sliced one is read as before, and the sliced one
  //   keeps its block (its stride-0 prefix is untouched) or becomes one
  //   block (count == block: a constant mode, which takes the entry the
  //   blocked mode left, as constants are matched after blocked modes);
  // - the sliced piece (count):(step * d) reaches no farther than (n):(d)
  //   and steps below every larger stride, so the moving pieces still step
  //   past what the smaller ones reach, in L_1's coordinates;
  // - narrowing maps L_1's coordinates into the box monotonically (the box
  //   reads its leaves colexicographically, as L_1 does), so that order,
  //   and S_0's zero and nonzero strides, carry into the box; and L_1's
  //   leaves become (n_a):(g_a * t_a) with (n_a - 1) * g_a < e_a, which
  //   keeps them below every larger stride and reaching no farther;
  // - L_2 or S_1 keeps its stride 0 on every leaf.
  // block_scaled_family_test checks this against the rule over random
  // slices of every format, and debug builds check every slice.
  bool KeepsVerdictWhenSliced(const RepresentationValidationContext& source,
                              const ModeSlice& slice) const override;

  // For a format of one blocked mode: the top-level mode of the value shape
  // that holds the blocks, or the rule's error. A Tensor whose blocks lie
  // along a squeezed mode has none: ValueError.
  absl::StatusOr<int> BlockedMode(
      const RepresentationValidationContext& context) const;

 private:
  BlockScaling scaling_;
  bool tensor_scale_;
};

// The one public factory of block-scaled dtypes: a new, unregistered
// CompoundDType named `name` whose storage schema is (element, scales...)
// and whose rule is BlockScaleRule(scaling, scales.size() == 2). The
// built-ins (dtype/registry.h) are made by it.
// Errors (ValueError): what CompoundDType::Create refuses; one or more than
// two scale dtypes; a tensor scale that is not float32; no block extent and
// other_modes 1 (one scale per value is no block format); a negative block
// extent; other_modes neither 1 nor kWholeMode; chosen_mode with other than
// one blocked mode.
absl::StatusOr<const CompoundDType*> MakeBlockScaledDType(
    std::string name, const SimpleDType* element,
    std::vector<const SimpleDType*> scales, BlockScaling scaling);

// The block-scaling rule of `dtype`, or nullptr when it has none.
const BlockScaleRule* FindBlockScaleRule(const CompoundDType& dtype);

// The value-side layouts that QuantizeBlockScaled and the checkpoint readers
// give a block-scaled Tensor of `extents`, with `block_of_mode[m]` values per
// scale along mode m (1 for a mode where each coordinate has its own scale;
// the extent, or more, for one scale along the whole mode).
//   L_0: row-major over `extents`; a mode of block 1 < b < N is written (b,
//     N/b), or for a ragged one (g, N/g) with g = gcd(N, b).
//   S_0: one scale coordinate per block into a level-1 domain whose mode m
//     has `domain[m]` coordinates (colexicographic weights): stride 0 across
//     a block, and across a ragged mode's g values.
//   level1_modes: mode m of L_1's shape for a row-major scale grid, before
//     strides: the number of blocks ceil(N/b), or (b/g, ceil(N/b)) for a
//     ragged mode (NOTE [ Ragged blocks ]); and the entries of `domain` that
//     this shape has.
// A product of extents that overflows has a zero extent beyond it, so the
// Tensor is empty and that stride is never used: 0. Preconditions: equal
// ranks, every block >= 1. Errors: those of Layout::Create.
struct BlockScaledValueLayouts {
  Layout values;    // L_0
  Layout adjacent;  // S_0
};
absl::StatusOr<BlockScaledValueLayouts> MakeBlockScaledValueLayouts(
    absl::Span<const int64_t> extents, absl::Span<const int64_t> block_of_mode,
    absl::Span<const int64_t> domain);

// The level-1 shape of mode m for `extent` values in blocks of `block` (see
// above): ceil(N/b) blocks, as (b/g, ceil(N/b)) where b does not divide N.
IntTuple ScaleGridMode(int64_t extent, int64_t block);

// Every level-0/1 layout of a block-scaled Tensor of `extents` whose scales
// are row-major over the block grid (ceil(N/b) blocks per mode; 1 for a
// whole mode, kWholeMode in `block_of_mode`): L_0 and S_0 as above, L_1 over
// the grid with a ragged mode's merging leaf of stride 0, and the number of
// scales (0 for an empty Tensor). What QuantizeBlockScaled and the checkpoint
// readers build. Errors: those of Layout::Create.
struct RowMajorBlockScaledLayouts {
  Layout values;    // L_0
  Layout adjacent;  // S_0
  Layout scales;    // L_1
  int64_t scale_count = 0;
};
absl::StatusOr<RowMajorBlockScaledLayouts> MakeRowMajorBlockScaledLayouts(
    absl::Span<const int64_t> extents, absl::Span<const int64_t> block_of_mode);

// The blocks of a Tensor of `extents` (with `block_of_mode[m]` values per
// block along mode m, kWholeMode for one block along the whole mode) as a
// row-major grid: per mode the values a block spans (at most the extent, at
// least 1), the number of blocks ceil(N / b) and the grid's stride; size is
// the number of blocks (0 for an empty Tensor). The block grid the quantizer
// and the convention writer walk; the extents' product must fit (a Tensor's
// does).
struct BlockGrid {
  std::vector<int64_t> block, count, stride;
  int64_t size = 1;
};
BlockGrid MakeBlockGrid(absl::Span<const int64_t> extents,
                        absl::Span<const int64_t> block_of_mode);

// The one-blocked-mode form of MakeBlockScaledValueLayouts: blocks of `block`
// along `blocked_dim`, 1 on the other modes.
absl::StatusOr<BlockScaledValueLayouts> MakeBlockScaledValueLayouts(
    absl::Span<const int64_t> extents, int64_t blocked_dim, int64_t block,
    absl::Span<const int64_t> scale_domain);

}  // namespace strata

#endif  // STRATA_DTYPE_BLOCK_SCALE_RULE_H_
