// The element arithmetic of the block-scaled family beyond the 1-D MX
// kernels (../shared/design/formats.md section 2), over a row-major float32
// array.
//
// NOTE [ The family's quantization arithmetic ]
// Everything is float32 with round-to-nearest-even, each operation as
// formats.md writes it, left to right; amax is the largest |x| of the block
// by bit pattern, so a NaN in a block makes its amax NaN and that NaN flows
// through the arithmetic as written (formats.md is silent on NaN; this is
// what DeepSeek's act_quant and a float32 reading of the recipes do):
//   fp8_e4m3_*: s = amax / 448 (1 where amax is 0); code = e4m3(x / s).
//   nvfp4_ts: g = amax_tensor / 2688 (1 where amax_tensor is 0);
//     s_b = e4m3(amax_b / (6 * g)); code = e2m1(x / (float(s_b) * g)), the
//     signed zero of x where s_b is 0.
//   nvfp4_ts_recip: g' = 2688 / amax_tensor (1 where 0);
//     s_b = e4m3(amax_b * g' / 6); code = e2m1(x * g' / float(s_b)).
//   fp8_e4m3_block128x128_ue8m0 (DeepGEMM's per_block_cast_to_fp8 with
//     use_ue8m0): amax clamped to >= 1e-4; sf = amax / 448, raised to a
//     power of two by its bits (the exponent field, plus one where the
//     mantissa is not zero; the biased exponent clamped to [1, 254]; never
//     log2); the stored e8m0 is that biased exponent; code = e4m3(x / sf),
//     which is x * (1 / sf) exactly (sf is a power of two).
//   q8_0 (ggml's quantize_row_q8_0_ref): d = amax / 127, id = 1/d (0 where d
//     is 0), q = round half away from zero (x * id); stored float16(d). A NaN
//     x * id is q = 0, and one past +-127 (1/d overflowed) is clamped (C
//     leaves both casts undefined).
//   q4_0 (ggml's quantize_row_q4_0_ref): v = the x of largest |x|, the first
//     on ties (NaN never replaces); d = v / -8, id = 1/d (0 where 0),
//     q = min(15, trunc(x * id + 8.5)); stored float16(d). A NaN sum is q = 8
//     (zero), and one below 0 (1/d overflowed) is 0.
// e4m3 saturates to +-448 (infinities too), NaN 0x7F with its sign; e2m1
// saturates to +-6, NaN is 0; negatives that round to zero keep the sign
// bit.
#ifndef STRATA_OPS_INTERNAL_QUANTIZE_FAMILY_H_
#define STRATA_OPS_INTERNAL_QUANTIZE_FAMILY_H_

#include <cstdint>

#include "absl/types/span.h"

namespace strata {
namespace ops_internal {

enum class FamilyRecipe : int {
  kFP8,
  kFP8UE8M0,
  kNVFP4TS,
  kNVFP4TSRecip,
  kQ8_0,
  kQ4_0
};

// Quantizes `x`, row-major over `extents` (no zero extent), in blocks of
// `block_of_mode[m]` values along mode m (1, b > 1, or 0 for the whole
// mode; a partial last block where b does not divide the extent). Writes the
// codes row-major into `values` (a byte each; two per byte, low nibble
// first, for nvfp4_ts* and q4_0) and one scale per block, row-major over the
// block grid (ceil(N/b) blocks per mode), into `scales`: float32 (kFP8),
// float16 bits (q8_0, q4_0) or e4m3 codes (nvfp4_ts*). Returns the tensor
// scale g or g' of nvfp4_ts* (0 for the others). q8_0 and q4_0 need
// blocks of 32 along the last mode only. `whole_amax_bits`, when not
// negative, is the |x| bit pattern of the amax of a whole Tensor of which `x`
// is a chunk of rows (Requantize's chunks): nvfp4_ts*'s tensor amax, and the
// amax of an fp8 format's one block (tensorwise) are that value instead of
// x's own.
float QuantizeFamily(FamilyRecipe recipe, const float* x,
                     absl::Span<const int64_t> extents,
                     absl::Span<const int64_t> block_of_mode, uint8_t* values,
                     uint8_t* scales, int64_t whole_amax_bits = -1);

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_QUANTIZE_FAMILY_H_
