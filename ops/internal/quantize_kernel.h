// The block-quantization kernel of QuantizeBlockScaled (ops/quantize.h): one
// portable scalar definition and its Highway SIMD versions, chosen at run time
// for the CPU (HWY_DYNAMIC_DISPATCH), giving the same bytes on every path.
//
// NOTE [ Block quantization arithmetic ]
// A block is B float32 values v. amax is the largest |v| by bit pattern; a
// block with a NaN or an infinity is non-finite.
//   mxfp8_e4m3, mxfp4 (OCP MX v1.0, 6.3): the scale code is
//     max(E(amax) - emax_elem, 0), E the biased float exponent field (so X =
//     floor(log2 amax) - emax_elem clamped to >= -127; amax = 0 and float
//     subnormals give X = -127); elements are v * 2^-X, which is exact in
//     float wherever the element can be nonzero, rounded to nearest even and
//     saturated.
//   nvfp4: the scale s is amax / 6 rounded to nearest even e4m3 (saturating
//     at 448); elements are v / s rounded to nearest even of the exact
//     quotient. The float quotient is correctly rounded and an fp4 tie t is a
//     float whose product with s is exact, so float division never moves a
//     quotient across or onto a tie; the element is exact. s = 0 gives every
//     element a zero.
//   Zeros keep their sign: -0, and a negative value that rounds to zero,
//   encode as the negative zero (fp8 0x80, fp4 0x8), in all-zero blocks too.
//   Non-finite block: scale 0xFF (MX) or 0x7F (nvfp4); elements 0x7F (fp8)
//   or 0x0 (fp4).
#ifndef STRATA_OPS_INTERNAL_QUANTIZE_KERNEL_H_
#define STRATA_OPS_INTERNAL_QUANTIZE_KERNEL_H_

#include <cstdint>

namespace strata {
namespace ops_internal {

enum class QuantFormat : int { kMXFP8E4M3 = 0, kMXFP4 = 1, kNVFP4 = 2 };

// Values per block: 32 (MX) or 16 (nvfp4).
inline int64_t QuantBlockSize(QuantFormat f) {
  return f == QuantFormat::kNVFP4 ? 16 : 32;
}

// Quantizes one block of QuantBlockSize(f) values: writes one element code
// per value into `codes` (unpacked, low bits) and returns the scale code.
uint8_t QuantizeBlockScalar(QuantFormat f, const float* v, uint8_t* codes);

// Quantizes `blocks` consecutive blocks of src (blocks * B floats): element
// codes to `values` (one byte each for fp8; two per byte, low nibble first,
// for fp4; values[0] starts the first block) and one scale code per block to
// scales[0 .. blocks). QuantizeBlocks runs the best SIMD path of this CPU;
// QuantizeBlocksScalar the portable one. Both give the same bytes.
void QuantizeBlocks(QuantFormat f, const float* src, int64_t blocks,
                    uint8_t* values, uint8_t* scales);
void QuantizeBlocksScalar(QuantFormat f, const float* src, int64_t blocks,
                          uint8_t* values, uint8_t* scales);

// The block-scaled family's kernels (NOTE [ The family's quantization
// arithmetic ] in quantize_family.h), each the best SIMD path of this CPU,
// chosen at run time.
//
// EncodeBlocks: codes[i] for `blocks` consecutive runs of `block` values,
// the e2m1 (fp4) or e4m3 code of x * pre / divisors[b] in float32 (x /
// divisors[b] where pre is 1), one byte each: to nearest even, saturating,
// NaN 0 (e2m1) or 0x7F with its sign (e4m3). amax, where not null, holds
// for each block at least its largest |x| bits (BlockAbsMax): a block whose x
// are all finite, with pre finite and its divisor positive and finite, has no
// NaN quotient, and its codes skip the test for one.
void EncodeBlocks(bool fp4, const float* x, int64_t blocks, int64_t block,
                  float pre, const float* divisors, const uint32_t* amax,
                  uint8_t* codes);
// BlockAbsMax: amax[b] = max(amax[b], the largest |x| bit pattern of block
// b) for `blocks` consecutive runs of `block` values.
void BlockAbsMax(const float* x, int64_t blocks, int64_t block, uint32_t* amax);
// BlockScales: nvfp4_ts* block scales from block amax bits (n blocks):
// codes[b] = e4m3(amax_b / (6 * g)), or e4m3(amax_b * g' / 6) where recip,
// and the divisor of block b's elements: s_b * g, or s_b (recip); +inf where
// s_b is 0 (x / inf is x's signed zero), NaN where s_b is NaN.
void BlockScales(bool recip, const uint32_t* amax, int64_t n, float g,
                 uint8_t* codes, float* divisors);
// QuantizeTensorScaledBlocks: nvfp4_ts (nvfp4_ts_recip where recip) over
// `blocks` consecutive blocks of 16 values of x, with tensor scale g (g'):
// the packed e2m1 codes (low nibble first) to values[0 .. 8 * blocks) and the
// e4m3 scale codes to scales[0 .. blocks), the bytes that BlockAbsMax,
// BlockScales, EncodeBlocks (pre g' where recip) and PackNibblePairs give in
// turn, in one pass.
void QuantizeTensorScaledBlocks(bool recip, const float* x, int64_t blocks,
                                float g, uint8_t* values, uint8_t* scales);
// PackNibblePairs: out[p] = codes[2p] | codes[2p + 1] << 4 for p < n / 2,
// codes below 16 (fp4 and uint4 codes two per byte, low nibble first).
void PackNibblePairs(const uint8_t* codes, int64_t n, uint8_t* out);
// QuantizeGgmlBlocks: q8_0 (q4 false: int8 codes) or q4_0 (uint4 codes, one
// per byte) of `blocks` runs of 32 values, and d of each block (stored as
// float16 by the caller).
void QuantizeGgmlBlocks(bool q4, const float* x, int64_t blocks, uint8_t* codes,
                        float* d);
// FloatsToHalves: out[i] = FloatToHalf(x[i]) (dtype/float_formats.h) for
// i < n, ggml's d as float16.
void FloatsToHalves(const float* x, int64_t n, uint16_t* out);

// The Highway target (e.g. "AVX3_DL", "AVX2") that the run-time dispatch of
// these kernels picks on this CPU, for benchmark reports.
const char* QuantizeKernelTarget();

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_QUANTIZE_KERNEL_H_
