// The SIMD kernel of Dequantize's runs of one scale (NOTE [ Runs of one
// scale ] in ops/dequantize.cc): one row of codes, cut into runs that share a
// scale, decoded, scaled and stored as float32 or bfloat16, in Highway SIMD
// chosen at run time for the CPU (HWY_DYNAMIC_DISPATCH).
//
// NOTE [ Decoding codes by their bits ]
// A table lookup per value (a gather) costs more than the memory it feeds,
// so the common code dtypes are decoded by arithmetic on their bits, which
// gives the same float as the table, exactly:
//   float8_e4m3fn: the 7 magnitude bits shifted into a float's exponent and
//     mantissa (code << 20) read a float 2^(127 - 7) = 2^120 too small, for
//     normal and subnormal codes alike (a float subnormal carries the e4m3
//     subnormal's mantissa); one multiply by 2^120, exact, rescales it; the
//     sign is bit 7 moved to bit 31; 0x7F and 0xFF (NaN) take the table's NaN.
//   float4_e2m1fn: the same with code << 22 and 2^(127 - 1) = 2^126 (no NaN).
//   int8: converted; uint4 (q4_0): converted, minus the zero point (exact).
// Then value x scale, then x g or / g for a tensor scale, each rounded once
// (no fused multiply-add), and bfloat16 rounded to nearest even by integer
// arithmetic (as FloatToBFloat16): without the NaN test where the run's
// scales are not NaNs, and e4m3 times a power of two as the float's upper
// half (NOTE [ bfloat16 without the NaN test, or without rounding ] in
// dequantize_kernel.cc). Any other code dtype, and float16 or
// float64 output, stay on the scalar walk. fp4 runs with a finite, nonzero
// scale go through a table of their 8 scaled magnitudes (NOTE [ fp4 through
// a table of its magnitudes ] in dequantize_kernel.cc). Into bfloat16 on
// AVX-512, tables of bfloat16 looked up 32 lanes at a time take the common
// cases (in dequantize_kernel.cc): 4-bit runs of 16 and 32 (NOTE [ 4-bit
// codes into bfloat16, 32 values per lookup ]), e4m3 runs of 128 or more
// (NOTE [ Long e4m3 runs into bfloat16 through a table of 128 ]) and e4m3
// runs times a power of two (NOTE [ e4m3 times a power of two through the
// table of 1 ]); each table entry is computed by the same arithmetic as a
// value, so the bytes are the same.
#ifndef STRATA_OPS_INTERNAL_DEQUANTIZE_KERNEL_H_
#define STRATA_OPS_INTERNAL_DEQUANTIZE_KERNEL_H_

#include <cstdint>

namespace strata {
namespace ops_internal {

enum class CodeKind : int { kE4M3FN = 0, kE2M1FN = 1, kInt8 = 2, kUInt4 = 3 };
enum class RunOutput : int { kFloat32 = 0, kBFloat16 = 1 };
enum class TensorScaleMode : int { kNone = 0, kTimes = 1, kDivided = 2 };

// What stays the same over every row of one Dequantize.
struct RowDecoding {
  CodeKind kind;
  RunOutput output;
  TensorScaleMode tensor_mode;
  float g;             // The tensor scale, when tensor_mode is not kNone.
  const float* table;  // The level's decode table (2^bits entries): the tails.
  // 4-bit codes in ggml's block order (NOTE [ GGUF blocks as strided
  // placements ] in checkpoint/gguf.cc): every run is 32 values whose codes
  // are the 16 bytes from its even code start, value k < 16 in byte k's low
  // nibble and 16 + k in its high nibble. Otherwise a run's codes follow one
  // another from its start, two to a byte, the even element in the low
  // nibble.
  bool split_halves = false;
};

// One row: for r < count, values [begins[r], begins[r] + lengths[r]) of the
// row take scale scales[r] and go to output elements out_base + begins[r]
// onward (4 bytes each for float32, 2 for bfloat16). Their codes start at
// code element code_base + code_begins[r] (code_base + begins[r] where
// code_begins is null, the row's codes then one after another), in the order
// decoding.split_halves says.
void DequantizeRow(const RowDecoding& decoding, const uint8_t* codes,
                   int64_t code_base, uint8_t* out, int64_t out_base,
                   const int64_t* begins, const int64_t* lengths,
                   const float* scales, int64_t count,
                   const int64_t* code_begins = nullptr);

// out[i] = table[bytes[i]] for i < n (a row's one-byte scales through their
// level's table) in SIMD: where e4m3, the table is float8_e4m3fn's and the
// bytes are decoded by their bits (the same floats); otherwise gathered. A
// per-byte loop was 9% of dequantizing nvfp4_ts, one scale per 16 values.
void LookUpBytes(const uint8_t* bytes, int64_t n, bool e4m3, const float* table,
                 float* out);

// out[i] = the float of the float16 at halves + 2 stride i (little-endian,
// any alignment), for i < n: a row's float16 scales (q8_0, q4_0), one after
// another (stride 1, in SIMD) or each in its GGUF block (stride 17 or 9),
// where a call per scale was a quarter of dequantizing q4_0. Bit for bit
// HalfToFloat's floats, NaN payloads kept.
void HalvesToFloats(const uint8_t* halves, int64_t n, int64_t stride,
                    float* out);

// The Highway target that the run-time dispatch of DequantizeRow picks on
// this CPU, for benchmark reports.
const char* DequantizeKernelTarget();

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_DEQUANTIZE_KERNEL_H_
