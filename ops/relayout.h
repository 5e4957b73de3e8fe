// Relayout (../shared/design/values.md section 2): the same block-scaled
// Tensor with its scales in another layout, row-major over the block grid or
// in the 128x4 tiles (ScaleLayout in ops/quantize.h), its codes untouched.
//
// NOTE [ Relayout without copying codes ]
// The result's level 0 is the source's: the same carrier, offset and
// placement, so no code byte is read or written. Only the scales move: a new
// scale carrier in the asked layout (the tiles' padding 0), a new L_1, and an
// S_0 that reaches it from the source's own L_0 shape (the asked layout's
// S_0 for a compact Tensor of the source's logical shape, composed with a
// compact layout of each of L_0's modes so that the two stay congruent). The
// blocks are read off the source's S_0: along each mode, the first run of
// one scale coordinate is the block (the whole extent where it never
// changes). A tensor scale (level 2) is shared too. The cost is the scales':
// one read and one write per block, plus O(extent) per mode. A slice of a
// ragged Tensor whose L_0 modes cannot address a fresh grid's S_0 keeps its
// S_0 and L_1 when row-major is asked and its scales are row-major already
// (NOTE [ Keeping a ragged slice's grid ] in relayout.cc): its scale carrier
// is copied.
//
// The spec's one-carrier-class rule asks the new scale carrier to be of the
// codes' class, and it is made anew in that class: a host carrier beside
// host codes; beside a mapped checkpoint, a mapped carrier over a private
// anonymous mapping (NOTE [ Anonymous mapped carriers ] in
// carrier/mapped_carrier.h), so the weight stays mapped and a dump carries
// the new scales' bytes; beside a DLPack import, an external carrier over
// memory Strata owns. Only a class Strata cannot make (a user's registered
// class) copies the codes and the tensor scale into host carriers as well,
// bytes for bytes, so that the result is host throughout.
#ifndef STRATA_OPS_RELAYOUT_H_
#define STRATA_OPS_RELAYOUT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/quantize.h"

namespace strata {

// `t` (a block-scaled Tensor through any admitted view) with its scales in
// `scale_layout`. Errors, before anything is allocated:
// OneSubtensorRequired for a Tensor that is not of the block-scaled family
// or has one level; ValueError for a scale level without host data or of a
// width that is not whole bytes, a scale layout that is not one of the
// enumerators, and for kSwizzled128x4 what QuantizeBlockScaled refuses (a
// format other than the 1-D ones with float8 scales, rank below 2, blocks not
// along one of the last two dims, a blocked extent the block does not divide,
// sizes that overflow); what Representation::Create refuses of the result.
absl::StatusOr<Tensor> Relayout(const Tensor& t, ScaleLayout scale_layout);

// Per mode of `t`'s logical shape, how many consecutive values share one
// scale along it (the first run of one scale through L_1 o S_0, with the
// other modes at 0; the whole extent where the scale never changes).
// Errors: OneSubtensorRequired for a Tensor outside the block-scaled family.
absl::StatusOr<std::vector<int64_t>> ScaleBlocks(const Tensor& t);

}  // namespace strata

#endif  // STRATA_OPS_RELAYOUT_H_
