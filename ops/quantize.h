// Quantization of a float Tensor to a block-scaled compound dtype.
#ifndef STRATA_OPS_QUANTIZE_H_
#define STRATA_OPS_QUANTIZE_H_

#include <cstdint>
#include <limits>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "dtype/dtype.h"

namespace strata {

// Where the scales of a block-scaled Tensor live in their carrier
// (../shared/design/representation-cli.md, "Scale layouts").
//
// kRowMajor: row-major over the shape with n/B in the blocked dim.
// kSwizzled128x4: the 128x4 tiles that CUTLASS's Sm1xx block-scaled GEMMs and
// cuBLASLt's 1D block scaling read (torchao's `to_blocked`). The blocked dim
// is one of the last two; r runs over the other (extent R), b over the nb
// blocks, batch is the row-major index over the leading (batch) modes. With
// Rp = 128 * ceil(R / 128) and Bp = 4 * ceil(nb / 4), the scale of
// (batch, r, b) is at carrier index
//   batch * Rp * Bp + (r / 128) * (Bp / 4) * 512 + (b / 4) * 512
//     + (r % 32) * 16 + ((r / 32) % 4) * 4 + b % 4,
// the carrier holds batches * Rp * Bp scales and the padding is 0. For shape
// (E, R, K) blocked on K:
//   L_1 = (E,(32,4,Rp/128),(4,Bp/4)):(Rp*Bp,(16,4,128*Bp),(1,512))
//   S_0 = (E,R,(B,nb)):(1,E,(0,E*Rp))
// (S_0 maps into L_1's colexicographic domain, which covers the padding); for
// blocked dim rank-2 the row and block modes swap places, e.g. (E, K, R):
//   L_1 = (E,(4,Bp/4),(32,4,Rp/128)):(Rp*Bp,(1,512),(16,4,128*Bp))
//   S_0 = (E,(B,nb),R):(1,(0,E),E*Bp).
// Every leaf of L_1 is kept (extents of 1 included), so that views can narrow
// level 1 leaf by leaf.
enum class ScaleLayout : int { kRowMajor = 0, kSwizzled128x4 = 1 };

// The blocked dim of a format whose blocks the format fixes (tensorwise,
// rowwise, block128x128, q8_0, q4_0): BLOCKED_MODE '-' of strata quantize.
inline constexpr int64_t kBlocksOfTheFormat = INT64_MIN;

// Quantizes `src` (one subtensor of float32, float16 or bfloat16, any layout)
// to `format`, any block-scaled dtype Strata has the arithmetic of: the MX
// formats and nvfp4 as below, and the family of ../shared/design/formats.md
// (nvfp4_ts, nvfp4_ts_recip, fp8_e4m3_* and user-made float8_e4m3fn x float32
// members of any blocks, q8_0, q4_0) by NOTE [ The family's quantization
// arithmetic ] (ops/internal/quantize_family.h): values row-major, scales
// row-major over the block grid (ceil(N/b) per mode, the last block partial
// where the format is ragged; NOTE [ Ragged blocks ]) or, for nvfp4_ts*, in
// the 128x4 tiles; nvfp4_ts*'s third level is its float32 tensor scale.
// `blocked_dim` is the mode of a 1-D block the caller chooses (mxfp8_e4m3,
// mxfp4, nvfp4, nvfp4_ts*, fp8_e4m3_block1x128), else kBlocksOfTheFormat
// (q8_0 and q4_0 also take their last dim).
//
// For the MX formats and nvfp4: blocks of B consecutive values
// along dim `blocked_dim`. Returns a new two-level Tensor over
// fresh host carriers: values row-major with the blocked dim written (B, n/B)
// (the same bytes in every scale layout), scales in `scale_layout`, and S_0 =
// one scale per block (NOTE [ The block-scaling rule ]).
//
// MX formats follow the OCP Microscaling specification v1.0 (section 6.3): the
// shared exponent is X = floor(log2(max |v|)) - emax_elem, clamped to [-127,
// 127], stored as e8m0; elements are v / 2^X rounded to nearest even and
// saturated to the element's largest finite value. A block whose maximum is 0
// gets X = -127. A block holding NaN or +-Inf gets the NaN scale 0xFF (it
// decodes to NaN whatever its elements; elements are the element NaN 0x7F, or
// 0 for fp4). nvfp4: the scale s is max |v| / 6 rounded to nearest even e4m3
// (saturating at 448; the NaN scale 0x7F for non-finite blocks); elements are
// v / s rounded to nearest even of the exact quotient (22.5 with s = 4.5 is
// 4.0, code 0x6), and every element of a block whose scale is 0 is a zero
// (nvfp4_ts adds the per-tensor second-level scale).
//
// Signed zeros: an element that is -0, or a negative value that rounds to
// zero, is the negative zero (fp8 0x80, fp4 0x8), in all-zero blocks too. The
// arithmetic is NOTE [ Block quantization arithmetic ]
// (ops/internal/quantize_kernel.h); a float32 source whose blocked dim is
// the last one of extent > 1, with stride 1, runs a SIMD kernel chosen at run
// time for the CPU (Highway); every other source (strided, blocked dim not
// innermost, float16, bfloat16) the portable one, with the same bytes.
//
// Errors, all before anything is allocated: OneSubtensorRequired for a
// multi-subtensor src; TypeError for a non-float src; ValueError for a format
// that is not block-scaled (or has no arithmetic here), a blocked dim out of
// range or of an extent not divisible by B (where the format is not ragged),
// a blocked dim given to a format that fixes its blocks, a carrier without
// host data, a scale layout that is not one of the enumerators, and for
// kSwizzled128x4 a format other than the 1-D float8-scaled ones, a src of
// rank below 2, a
// blocked dim that is not one of the last two, or padded sizes (Rp, Bp,
// batches * Rp * Bp) that overflow int64. An empty src gives empty carriers.
absl::StatusOr<Tensor> QuantizeBlockScaled(
    const Tensor& src, const CompoundDType& format, int64_t blocked_dim,
    ScaleLayout scale_layout = ScaleLayout::kRowMajor);

// "row_major" or "swizzled_128x4".
const char* ScaleLayoutName(ScaleLayout layout);

}  // namespace strata

#endif  // STRATA_OPS_QUANTIZE_H_
