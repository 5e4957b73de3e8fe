// The values of a block-scaled Tensor (../shared/design/values.md section 1):
// Dequantize, DequantizeInto, and the levels of a Tensor as one-level views.
//
// NOTE [ Codecs beside quantization ]
// The spec's generic operations (coordinate access, arithmetic, movement,
// scatter, backward, DLPack export) refuse a multi-subtensor Tensor, and keep
// doing so. Dequantize and Levels are not generic operations: like
// QuantizeBlockScaled and the checkpoint readers they are the block-scaled
// family's own codec, dispatched on the format the dtype declares (its
// BlockScaleRule). So they live here, beside ops/quantize.h, and not behind
// ops/ops.h; a multi-subtensor Tensor of any other compound dtype gets the
// one-subtensor-required error from them before any effect.
#ifndef STRATA_OPS_DEQUANTIZE_H_
#define STRATA_OPS_DEQUANTIZE_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "dtype/dtype.h"

namespace strata {

// NOTE [ Dequantize arithmetic ]
// Per value (values.md section 1): the element code and every scale decode
// exactly to float32 (e8m0 e is 2^(e-127), 255 NaN; e4m3 0x7F/0xFF NaN;
// float16 and bfloat16 widen exactly; q4_0's uint4 q is q - 8, the format's
// zero point; int8 is its integer); the product element x block scale is
// rounded once to float32 (nearest even); for nvfp4_ts that product times g,
// for nvfp4_ts_recip divided by g' (a user-made format with a tensor scale
// multiplies, as nvfp4_ts), rounded once; then rounded (nearest even,
// overflow to infinity) to the output dtype. A NaN scale makes its block
// NaN (NaN x anything is NaN). GGUF MXFP4 keeps the OCP meaning: ggml reads
// e = 255 as 2^128 and nibble 8 (-0.0) as +0.0 through its doubled table;
// Strata reads them as NaN and -0.0, as OCP MX and gpt-oss's checkpoints do.
// This is DeepSeek-V3's weight_dequant (a float32 product, then the store's
// cast to bfloat16), ggml's dequantize_row_q8_0/_q4_0 (exact in float32) and
// OCP MX.
//
// The walk: one pass over the logical coordinates in row-major order, each
// value's code read through L_0, its scale coordinate through S_0; a scale
// is decoded (through L_1, and S_1, L_2 for a tensor scale) only where the
// scale coordinate changes from the previous value's, so once per block
// along the walk (once per block row for 2-D blocks). No allocation beyond
// the output and the offset tables of modes that do not coalesce.

// The values of `t` as a new compact row-major host Tensor of `to` (float32,
// bfloat16 or float16) and `t`'s logical shape. `t` is a Tensor of a
// block-scaled dtype (a built-in or one made by MakeBlockScaledDType) through
// any admitted view, with any scale layout, over any carrier class holding
// host data; or a one-level Tensor of a float or integer dtype (Cast).
// Errors, before anything is allocated: TypeError for `to` not one of the
// three; OneSubtensorRequired for a multi-subtensor Tensor whose dtype is not
// of the block-scaled family; ValueError for a level whose carrier holds no
// host data, values unaligned to their width, or a mode whose walk needs an
// offset table beyond the budget (ops/internal/checks.cc); what Cast refuses
// for a one-level Tensor.
absl::StatusOr<Tensor> Dequantize(const Tensor& t, const SimpleDType& to);

// Dequantize written into `out`: any one-level writable Tensor of `t`'s
// logical shape and a float dtype (float32, bfloat16, float16, float64),
// whatever its strides. Errors, with nothing written: those of Dequantize;
// ValueError for a shape that differs, an `out` that is not writable (read
// only, or reaching a value twice), or one whose bytes overlap a level of
// `t`; TypeError for an `out` of another dtype; OneSubtensorRequired for a
// multi-subtensor `out`. Bumps out's carrier version once.
absl::Status DequantizeInto(const Tensor& out, const Tensor& t);

// The levels of `t` as one-level Tensors, codes first, then the scales (and
// the tensor scale): level k over level k's carrier, offset and placement,
// its logical dtype the level's storage dtype (a view: nothing copied, the
// same carrier objects). A one-level Tensor gives itself. Errors:
// OneSubtensorRequired for a multi-subtensor Tensor of a dtype outside the
// block-scaled family.
absl::StatusOr<std::vector<Tensor>> Levels(const Tensor& t);

// The memory of one-level `level` as a one-level uint8 Tensor, for frameworks
// without its dtype (torch 1.13 has no float8 or float4): the last dim's
// extent times the value's bytes (halved for 4-bit values), every other
// stride in bytes. It is a view of the same bytes over an external carrier
// that holds `level`'s carrier alive, read-only where that one is, at that
// one's version. A mode's broadcast leaves (stride 0: the merging leaf of a
// ragged 128x128 scale grid) reach no other byte and are left out: the
// level's distinct memory. Errors (ValueError): a multi-subtensor Tensor; a
// carrier without host data; a mode that is not one stride once they are,
// a last mode that is not unit stride; a 4-bit level whose rows start or end
// mid-byte.
absl::StatusOr<Tensor> LevelBytes(const Tensor& level);

}  // namespace strata

#endif  // STRATA_OPS_DEQUANTIZE_H_
