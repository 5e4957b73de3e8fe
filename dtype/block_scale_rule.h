// NOTE [ The block-scaling rule ]
// A block-scaled dtype (mxfp8_e4m3, mxfp4: block 32; nvfp4: block 16) stores
// values at level 0 and one scale per block at level 1. Its rule checks, from
// the frozen context alone, that S_0 gives one scale index to each aligned run
// of B consecutive coordinates along exactly one top-level mode (the blocked
// mode): coalesced, that mode of S_0 is (B, ...):(0, ...) with every later
// stride non-zero, while L_0 really varies along it (a broadcast mode, stride 0
// in L_0 too, is never the blocked mode). Any other structure of S_0 (broadcast
// modes, any order of the other modes) is allowed. Because views move S_0 with
// L_0, a permuted or broadcast block-scaled Tensor still validates; a slice
// that cuts a block fails here. An empty Tensor (L_0 of size 0) has no block
// and validates whatever S_0 is.
//
// NVFP4's per-tensor second-level scale is out of scope: Strata represents the
// two levels (e2m1 values, e4m3 block scales) only.
#ifndef STRATA_DTYPE_BLOCK_SCALE_RULE_H_
#define STRATA_DTYPE_BLOCK_SCALE_RULE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dtype/representation_rule.h"
#include "layout/layout.h"

namespace strata {

class BlockScaleRule final : public RepresentationRule {
 public:
  explicit BlockScaleRule(int64_t block_size) : block_size_(block_size) {}
  absl::string_view name() const override { return "block_scale"; }
  int64_t block_size() const { return block_size_; }

  // Errors (ValueError): the Tensor is not empty and no top-level mode, or
  // more than one, is blocked as above; the message names the dtype, the block
  // size and what S_0 does instead.
  absl::Status Validate(
      const RepresentationValidationContext& context) const override;

  // The blocked top-level mode of S_0 (index), or the rule's error.
  absl::StatusOr<int> BlockedMode(
      const RepresentationValidationContext& context) const;

 private:
  int64_t block_size_;
};

// The value-side layouts that QuantizeBlockScaled and the safetensors reader
// give a block-scaled Tensor of `extents` with blocks of `block` along
// `blocked_dim`: L_0 row-major over `extents` with the blocked mode written
// (block, n/block), and S_0 one scale per block into a level-1 domain of
// `scale_domain` extents (colexicographic weights, the blocked mode's entry
// counting blocks). A product of extents that overflows has a zero extent
// beyond it, so the Tensor is empty and that stride is never used: 0.
// Preconditions: equal ranks, blocked_dim in range, extents[blocked_dim] a
// multiple of block. Errors: those of Layout::Create.
struct BlockScaledValueLayouts {
  Layout values;    // L_0
  Layout adjacent;  // S_0
};
absl::StatusOr<BlockScaledValueLayouts> MakeBlockScaledValueLayouts(
    absl::Span<const int64_t> extents, int64_t blocked_dim, int64_t block,
    absl::Span<const int64_t> scale_domain);

}  // namespace strata

#endif  // STRATA_DTYPE_BLOCK_SCALE_RULE_H_
