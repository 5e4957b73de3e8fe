// NOTE [ Decoding codes by their bits ] (dequantize_kernel.h) in Highway SIMD,
// compiled once per target by foreach_target.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/internal/dequantize_kernel.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: keep foreach_target.h before highway.h.
#include "hwy/highway.h"

#ifndef STRATA_OPS_INTERNAL_DEQUANTIZE_KERNEL_SHARED_
#define STRATA_OPS_INTERNAL_DEQUANTIZE_KERNEL_SHARED_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ops/internal/dequantize_kernel.h"

namespace strata {
namespace ops_internal {
namespace dequantize_detail {

inline uint32_t CodeAt(const uint8_t* codes, int64_t c, bool packed4) {
  return packed4 ? (codes[c >> 1] >> ((c & 1) * 4)) & 15u : codes[c];
}

// The scalar arithmetic of one value (the runs' tails).
inline void StoreOne(const RowDecoding& d, float x, float s, uint8_t* out,
                     int64_t o) {
  float v = x * s;
  if (d.tensor_mode == TensorScaleMode::kTimes) v = v * d.g;
  if (d.tensor_mode == TensorScaleMode::kDivided) v = v / d.g;
  if (d.output == RunOutput::kFloat32) {
    std::memcpy(out + 4 * o, &v, 4);
    return;
  }
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint32_t nan = (u >> 16) | 0x40u;
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint16_t b =
      static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
  std::memcpy(out + 2 * o, &b, 2);
}

// NOTE [ bfloat16 without the NaN test, or without rounding ]
// BFloat16Bits rounds by adding 0x7FFF plus the kept bit's parity, and tests
// for NaN, whose rounding could carry into the exponent. Of a run's values,
// a NaN comes from a NaN code (the table's NaN, quieted by the multiply,
// which keeps its payload when the other operand is not a NaN), from 0 x inf
// or inf / inf (x86's default NaN, 0xFFC00000), or from a NaN scale or tensor
// scale. So where neither scale is a NaN and the table's NaNs round to
// themselves quieted (the canonical NaNs do: their low 16 bits are 0), the
// rounding add alone gives every bfloat16 that BFloat16Bits gives, NaNs
// included: 4 vector operations per vector, not 9. And e4m3 codes (4
// significant bits) times a power of two 2^k, k >= -117, with no tensor
// scale (mxfp8's E8M0 scales), are exact floats that are 0 or normal (e4m3's
// least magnitude is 2^-9) or infinite: each is its bfloat16's upper half,
// with no rounding at all. Both only pick which halves are stored; the
// values are BFloat16Bits', bit for bit (dequantize_kernel_test).

// Whether a NaN x, quieted, keeps its bits through the rounding add (true
// for a value that is not a NaN: nothing to keep).
inline bool NaNRoundsToItself(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7FFFFFFFu) <= 0x7F800000u) return true;
  u |= 0x00400000u;
  return ((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16) == ((u >> 16) | 0x40u);
}

// Whether s is +-2^k with -117 <= k <= 127: an e4m3 value times s is then
// an exact float that is 0, normal or infinite.
inline bool ExactPowerOfTwoScale(float s) {
  uint32_t u;
  std::memcpy(&u, &s, 4);
  const uint32_t exponent = (u >> 23) & 0xFFu;
  return (u & 0x007FFFFFu) == 0 && exponent >= 127 - 117 && exponent <= 254;
}

}  // namespace dequantize_detail
}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_DEQUANTIZE_KERNEL_SHARED_

HWY_BEFORE_NAMESPACE();
namespace strata {
namespace ops_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace dd = dequantize_detail;

// Codes (as int32 lanes, one code each) to their float values.
template <int kKind, class DF, class VI = hn::Vec<hn::RebindToSigned<DF>>>
HWY_INLINE hn::Vec<DF> Decode(DF df, VI code, const float* table) {
  const hn::RebindToSigned<DF> di;
  if constexpr (kKind == static_cast<int>(CodeKind::kE4M3FN)) {
    const VI magnitude = hn::And(code, hn::Set(di, 0x7F));
    auto x = hn::Mul(hn::BitCast(df, hn::ShiftLeft<20>(magnitude)),
                     hn::Set(df, 0x1p120f));  // Exact.
    const VI sign = hn::ShiftLeft<24>(hn::And(code, hn::Set(di, 0x80)));
    x = hn::Or(x, hn::BitCast(df, sign));
    const auto nan = hn::RebindMask(df, hn::Eq(magnitude, hn::Set(di, 0x7F)));
    const auto nan_value =
        hn::IfThenElse(hn::RebindMask(df, hn::Eq(sign, hn::Zero(di))),
                       hn::Set(df, table[0x7F]), hn::Set(df, table[0xFF]));
    return hn::IfThenElse(nan, nan_value, x);
  } else if constexpr (kKind == static_cast<int>(CodeKind::kE2M1FN)) {
    const VI magnitude = hn::And(code, hn::Set(di, 7));
    const auto x = hn::Mul(hn::BitCast(df, hn::ShiftLeft<22>(magnitude)),
                           hn::Set(df, 0x1p126f));  // Exact.
    const VI sign = hn::ShiftLeft<28>(hn::And(code, hn::Set(di, 8)));
    return hn::Or(x, hn::BitCast(df, sign));
  } else {
    // int8 (already sign-extended) or uint4 minus its zero point -table[0].
    const auto x = hn::ConvertTo(df, code);
    if constexpr (kKind == static_cast<int>(CodeKind::kUInt4)) {
      return hn::Add(x, hn::Set(df, table[0]));
    }
    return x;
  }
}

template <int kMode, class V>
HWY_INLINE V Scale(V x, V s, V g) {
  V v = hn::Mul(x, s);
  if constexpr (kMode == static_cast<int>(TensorScaleMode::kTimes)) {
    v = hn::Mul(v, g);
  }
  if constexpr (kMode == static_cast<int>(TensorScaleMode::kDivided)) {
    v = hn::Div(v, g);
  }
  return v;
}

// v rounded to bfloat16 by BFloat16Bits' add alone (NOTE [ bfloat16 without the
// NaN test, or without rounding ]): the bfloat16 in the upper 16 bits of each
// lane.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> BFloat16InUpperHalf(
    DF, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const auto u = hn::BitCast(du, v);
  return hn::Add(hn::Add(u, hn::Set(du, 0x7FFFu)),
                 hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u)));
}

// bfloat16 bits of v (nearest even, NaN quieted with its sign), in the low
// 16 bits of each uint32 lane.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> BFloat16Bits(DF df,
                                                          hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto u = hn::BitCast(du, v);
  const auto rounded = hn::ShiftRight<16>(BFloat16InUpperHalf(df, v));
  const auto nan = hn::Or(hn::ShiftRight<16>(u), hn::Set(du, 0x40u));
  const auto is_nan =
      hn::Gt(hn::BitCast(di, hn::And(u, hn::Set(du, 0x7FFFFFFFu))),
             hn::Set(di, 0x7F800000));
  return hn::IfThenElse(hn::RebindMask(du, is_nan), nan, rounded);
}

template <int kOut, class DF>
HWY_INLINE void StoreValues(DF df, hn::Vec<DF> v, uint8_t* HWY_RESTRICT out,
                            int64_t o) {
  if constexpr (kOut == static_cast<int>(RunOutput::kFloat32)) {
    hn::StoreU(v, df, reinterpret_cast<float*>(out + 4 * o));
  } else {
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<uint16_t, DF> d16;
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, BFloat16Bits(df, v))), d16,
               reinterpret_cast<uint16_t*>(out + 2 * o));
  }
}

// Two vectors whose lanes interleave (lo[0], hi[0], lo[1], ...) at o;
// kNaNFree: bfloat16 by the rounding add alone (NOTE [ bfloat16 without the
// NaN test, or without rounding ]).
template <int kOut, bool kNaNFree, class DF>
HWY_INLINE void StorePairs(DF df, hn::Vec<DF> lo, hn::Vec<DF> hi,
                           uint8_t* HWY_RESTRICT out, int64_t o) {
  if constexpr (kOut == static_cast<int>(RunOutput::kFloat32)) {
    hn::StoreInterleaved2(lo, hi, df, reinterpret_cast<float*>(out + 4 * o));
  } else {
    const hn::RebindToUnsigned<DF> du;
    const auto words =
        kNaNFree ? hn::Or(hn::ShiftRight<16>(BFloat16InUpperHalf(df, lo)),
                          hn::And(BFloat16InUpperHalf(df, hi),
                                  hn::Set(du, 0xFFFF0000u)))
                 : hn::Or(BFloat16Bits(df, lo),
                          hn::ShiftLeft<16>(BFloat16Bits(df, hi)));
#if HWY_TARGET == HWY_SCALAR
    const uint32_t word = hn::GetLane(words);  // Little-endian: lo first.
    std::memcpy(out + 2 * o, &word, 4);
#else
    const hn::Repartition<uint16_t, DF> dw16;
    hn::StoreU(hn::BitCast(dw16, words), dw16,
               reinterpret_cast<uint16_t*>(out + 2 * o));
#endif
  }
}

// 2 x Lanes(df) packed 4-bit values from `bytes` to output element o.
template <int kKind, int kOut, int kMode, bool kNaNFree, class DF>
HWY_INLINE void Pairs(DF df, const RowDecoding& d,
                      const uint8_t* HWY_RESTRICT bytes_at, hn::Vec<DF> vs,
                      hn::Vec<DF> g, uint8_t* HWY_RESTRICT out, int64_t o) {
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint8_t, DF> d8;
  const auto bytes = hn::PromoteTo(di, hn::LoadU(d8, bytes_at));
  const auto lo = Scale<kMode>(
      Decode<kKind>(df, hn::And(bytes, hn::Set(di, 15)), d.table), vs, g);
  const auto hi =
      Scale<kMode>(Decode<kKind>(df, hn::ShiftRight<4>(bytes), d.table), vs, g);
  StorePairs<kOut, kNaNFree>(df, lo, hi, out, o);
}

// NOTE [ fp4 through a table of its magnitudes ]
// An fp4 value is sign x one of 8 magnitudes, and x s, x g, / g and the
// rounding to bfloat16 are symmetric in the sign: so a run's 8 scaled (and
// rounded) magnitudes are computed once, each code is a lane permutation of
// them, and its sign is an exclusive or. The products are the same floats as
// value by value (-0 x s flips with the sign too); only NaN's sign could
// differ (x86 makes 0 x inf the negative NaN whatever the operands), so a
// run whose scale or tensor scale is not finite and nonzero stays on the
// value-by-value path.
template <int kMode>
HWY_INLINE bool SignSymmetric(float s, float g) {
  const bool finite_s = s - s == 0.0f;  // False for infinities and NaN.
  if constexpr (kMode == static_cast<int>(TensorScaleMode::kNone)) {
    return finite_s;
  }
  return finite_s && g - g == 0.0f && g != 0.0f;
}

// Stores the values of the fp4 codes in the bytes `b` (one byte a lane,
// promoted): `lo` and `hi` are the table's (scaled, and for bfloat16 rounded)
// magnitudes of their low and high nibbles, whose sign bits 3 and 7 are moved
// onto them; lane j's two values go to output elements o + 2j and o + 2j + 1.
template <int kOut, class DF>
HWY_INLINE void StoreSignedMagnitudes(DF df, hn::Vec<hn::RebindToSigned<DF>> b,
                                      hn::Vec<hn::RebindToUnsigned<DF>> lo,
                                      hn::Vec<hn::RebindToUnsigned<DF>> hi,
                                      uint8_t* HWY_RESTRICT out, int64_t o) {
  const hn::RebindToSigned<DF> di;
  const hn::RebindToUnsigned<DF> du;
  if constexpr (kOut == static_cast<int>(RunOutput::kFloat32)) {
    // Sign bits 3 and 7 of each byte to bit 31.
    const auto lo_sign =
        hn::BitCast(du, hn::ShiftLeft<28>(hn::And(b, hn::Set(di, 8))));
    const auto hi_sign =
        hn::BitCast(du, hn::ShiftLeft<24>(hn::And(b, hn::Set(di, 0x80))));
    hn::StoreInterleaved2(hn::BitCast(df, hn::Xor(lo, lo_sign)),
                          hn::BitCast(df, hn::Xor(hi, hi_sign)), df,
                          reinterpret_cast<float*>(out + 4 * o));
  } else {
    // Sign bits 3 and 7 to bit 15 of each half of the word.
    const auto lo_sign =
        hn::BitCast(du, hn::ShiftLeft<12>(hn::And(b, hn::Set(di, 8))));
    const auto hi_sign =
        hn::BitCast(du, hn::ShiftLeft<24>(hn::And(b, hn::Set(di, 0x80))));
    const auto words =
        hn::Or(hn::Xor(lo, lo_sign), hn::Xor(hn::ShiftLeft<16>(hi), hi_sign));
#if HWY_TARGET == HWY_SCALAR
    (void)words;  // Not reached: the callers take 8 or 16 lanes.
#else
    const hn::Repartition<uint16_t, DF> dw16;
    hn::StoreU(hn::BitCast(dw16, words), dw16,
               reinterpret_cast<uint16_t*>(out + 2 * o));
#endif
  }
}

// A table of fp4 magnitudes: lane i holds magnitude i % 8 times lane i of
// `scales` (then x g or / g), as bfloat16 bits where asked.
template <int kOut, int kMode, class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> ScaledMagnitudes(
    DF df, const RowDecoding& d, hn::Vec<DF> scales) {
  const hn::RebindToSigned<DF> di;
  const auto magnitudes =
      Scale<kMode>(Decode<static_cast<int>(CodeKind::kE2M1FN)>(
                       df, hn::And(hn::Iota(di, 0), hn::Set(di, 7)), d.table),
                   scales, hn::Set(df, d.g));
  if constexpr (kOut == static_cast<int>(RunOutput::kFloat32)) {
    return hn::BitCast(hn::RebindToUnsigned<DF>(), magnitudes);
  } else {
    return BFloat16Bits(df, magnitudes);
  }
}

// The values of one run of fp4 codes from `bytes` (an even start), 16 at a
// time; returns how many it wrote (a multiple of 16; the rest is the
// caller's).
template <int kOut, int kMode>
HWY_INLINE int64_t MagnitudeTableRun(const RowDecoding& d,
                                     const uint8_t* HWY_RESTRICT bytes, float s,
                                     int64_t n, uint8_t* HWY_RESTRICT out,
                                     int64_t o) {
  const hn::CappedTag<float, 8> df;
  if (hn::Lanes(df) != 8 || n < 16) return 0;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  // Codes 0..7 are the magnitudes; scaled, and as bfloat16 where asked.
  const auto table = ScaledMagnitudes<kOut, kMode>(df, d, hn::Set(df, s));
  const auto seven = hn::Set(di, 7);
  int64_t done = 0;
  for (; n - done >= 16; done += 16) {
    const auto b = hn::PromoteTo(di, hn::LoadU(d8, bytes + done / 2));
    const auto lo =
        hn::TableLookupLanes(table, hn::IndicesFromVec(du, hn::And(b, seven)));
    const auto hi = hn::TableLookupLanes(
        table, hn::IndicesFromVec(du, hn::And(hn::ShiftRight<4>(b), seven)));
    StoreSignedMagnitudes<kOut>(df, b, lo, hi, out, o + done);
  }
  return done;
}

#if HWY_TARGET != HWY_SCALAR
// Two adjacent runs of 16 fp4 codes (nvfp4's blocks) from `bytes` (an even
// start), scales s0 and s1, through one table of 16 lanes: lanes 0-7 the
// first run's scaled magnitudes, 8-15 the second's (NOTE [ fp4 through a
// table of its magnitudes ], two runs per table where 16 float lanes hold
// them: one table's arithmetic and one lookup per 16 values of both runs).
// False, with nothing written, where the target has not 16 float lanes.
template <int kOut, int kMode>
HWY_INLINE bool TwoRunsOf16(const RowDecoding& d,
                            const uint8_t* HWY_RESTRICT bytes, float s0,
                            float s1, uint8_t* HWY_RESTRICT out, int64_t o) {
  const hn::CappedTag<float, 16> df;
  if (hn::Lanes(df) != 16) return false;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const auto lane = hn::Iota(di, 0);
  const auto second = hn::Gt(lane, hn::Set(di, 7));  // The second run's lanes.
  const auto scales = hn::IfThenElse(hn::RebindMask(df, second),
                                     hn::Set(df, s1), hn::Set(df, s0));
  const auto seven = hn::Set(di, 7);
  const auto table = ScaledMagnitudes<kOut, kMode>(df, d, scales);
  // Byte j holds values 2j and 2j + 1: bytes 8-15 are the second run's.
  const auto run_base = hn::IfThenElseZero(second, hn::Set(di, 8));
  const auto b = hn::PromoteTo(di, hn::LoadU(d8, bytes));
  const auto lo = hn::TableLookupLanes(
      table, hn::IndicesFromVec(du, hn::Or(hn::And(b, seven), run_base)));
  const auto hi = hn::TableLookupLanes(
      table, hn::IndicesFromVec(
                 du, hn::Or(hn::And(hn::ShiftRight<4>(b), seven), run_base)));
  StoreSignedMagnitudes<kOut>(df, b, lo, hi, out, o);
  return true;
}
#endif  // HWY_TARGET != HWY_SCALAR

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// NOTE [ 4-bit codes into bfloat16, 32 values per lookup ]
// A 512-bit vector holds 32 bfloat16, and AVX-512BW's vpermw looks each of
// its 16-bit lanes up in a table of 32 16-bit entries: two runs' 16 values,
// each scaled and rounded once. For fp4 that is the 8 magnitudes of each run
// (NOTE [ fp4 through a table of its magnitudes ]), the negative 8 the same
// with their sign bit flipped; for uint4 the 16 codes minus the zero point.
// So 32 values take one lookup, and their indices come from 16 code bytes in
// four operations. Against two runs through 16 float lanes (TwoRunsOf16: two
// lookups and the sign's arithmetic per 32 values) that is half the
// operations per value. It takes whole groups of 64 values: four runs of 16
// (nvfp4) or two of 32 (mxfp4, q4_0), one after another from an even code,
// whose values no NaN can be among (finite scales, a tensor scale that
// SignSymmetric takes, a finite zero point), so that the rounding add alone
// rounds (NOTE [ bfloat16 without the NaN test, or without rounding ]).

// Values x scales (then x g or / g), rounded to bfloat16 by the add alone:
// a value's own arithmetic (Scale, BFloat16InUpperHalf) on 16 float lanes,
// each bfloat16 in its lane's upper half.
template <int kMode>
HWY_INLINE __m512i ScaledBFloat16(__m512 values, __m512 scales, __m512 g) {
  using VF = hn::Vec512<float>;
  return BFloat16InUpperHalf(hn::Full512<float>(),
                             Scale<kMode>(VF{values}, VF{scales}, VF{g}))
      .raw;
}

// The bfloat16 in the upper halves of a's and b's lanes, a's in 16-bit lanes
// 0-15 and b's in 16-31.
HWY_INLINE __m512i UpperHalves(__m512i a, __m512i b) {
  const __m512i upper = _mm512_set_epi16(
      63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33,  //
      31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm512_permutex2var_epi16(a, upper, b);
}

// The table of the two runs whose scales are at `two_scales`: entry 16 r + c
// is the bfloat16 of code c of run r. `zero_point` is uint4's table[0] (each
// code's value is c + table[0], as Decode computes it).
template <int kKind, int kMode>
HWY_INLINE __m512i TableOfTwoRuns(const float* two_scales, __m512 g,
                                  __m512 zero_point) {
  if constexpr (kKind == static_cast<int>(CodeKind::kE2M1FN)) {
    // Float lanes 0-7 the first run's 8 magnitudes, 8-15 the second's.
    const __m512 magnitudes =
        _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, 0.0f,
                       0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
    const __m512 scales = _mm512_permutexvar_ps(
        _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
        // The two floats by an unaligned 8-byte load.
        _mm512_castps128_ps512(_mm_castsi128_ps(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(two_scales)))));
    const __m512i rounded = ScaledBFloat16<kMode>(magnitudes, scales, g);
    // Entry t takes the upper half (16-bit lane 2 f + 1) of float lane
    // f = 8 (t / 16) + t % 8, its sign flipped where t % 16 >= 8.
    const __m512i from = _mm512_set_epi16(
        31, 29, 27, 25, 23, 21, 19, 17, 31, 29, 27, 25, 23, 21, 19, 17,  //
        15, 13, 11, 9, 7, 5, 3, 1, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i signs = _mm512_maskz_mov_epi16(
        0xFF00FF00u, _mm512_set1_epi16(static_cast<int16_t>(0x8000)));
    return _mm512_xor_si512(_mm512_permutexvar_epi16(from, rounded), signs);
  } else {
    // Float lane c: code c minus the zero point, times each run's scale.
    const __m512 codes = _mm512_add_ps(
        _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f,
                       9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f),
        zero_point);
    return UpperHalves(
        ScaledBFloat16<kMode>(codes, _mm512_set1_ps(two_scales[0]), g),
        ScaledBFloat16<kMode>(codes, _mm512_set1_ps(two_scales[1]), g));
  }
}

// The table indices of the 32 4-bit codes in the 16 bytes at `bytes`, in
// value order: 16-bit lane 2 j the low nibble of byte j, lane 2 j + 1 its
// high nibble, each or `run` (16 on the lanes of a table's second run).
// vpermw reads bits 0-4 of an index; the and clears the other nibble's bits
// that the shift and the or leave beside each.
HWY_INLINE __m512i CodeIndices(const uint8_t* HWY_RESTRICT bytes, __m512i run) {
  const __m512i b = _mm512_cvtepu8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
  const __m512i nibbles = _mm512_or_si512(b, _mm512_slli_epi32(b, 12));
  // (nibbles & 0x000F000F) | run.
  return _mm512_ternarylogic_epi32(nibbles, _mm512_set1_epi32(0x000F000F), run,
                                   0xEA);
}

// The same for a run of 32 in ggml's block order (RowDecoding::split_halves):
// 16-bit lane k < 16 the low nibble of byte k, lane 16 + k its high nibble.
HWY_INLINE __m512i SplitHalvesIndices(const uint8_t* HWY_RESTRICT bytes,
                                      __m512i run) {
  const __m256i b = _mm256_cvtepu8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
  const __m512i halves = _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_and_si256(b, _mm256_set1_epi16(15))),
      _mm256_srli_epi16(b, 4), 1);
  return _mm512_or_si512(halves, run);
}

// From run r of a row of 4-bit codes, whole groups of 64 values into
// bfloat16 (NOTE [ 4-bit codes into bfloat16, 32 values per lookup ]): 64 /
// kRun runs of kRun values each with finite scales (the tensor scale and the
// zero point checked by the caller). Without kPlaced the runs follow one
// another from an even code, codes and outputs alike (the caller's `starts`
// are its `begins`); with kPlaced (runs of 32 only) each starts at its own
// even code start (`starts`, relative to code_base), in ggml's order where
// kSplit. Returns the first run it did not take.
template <int kKind, int kMode, int kRun, bool kPlaced = false,
          bool kSplit = false>
HWY_INLINE int64_t FourBitGroupsIntoBFloat16(
    const RowDecoding& d, const uint8_t* HWY_RESTRICT codes, int64_t code_base,
    uint8_t* HWY_RESTRICT out, int64_t out_base, const int64_t* begins,
    const int64_t* starts, const int64_t* lengths, const float* scales,
    int64_t count, int64_t r) {
  constexpr int kRuns = 64 / kRun;
  if (((code_base + starts[r]) & 1) != 0) return r;
  const __m512 g = _mm512_set1_ps(d.g);
  const __m512 zero_point = _mm512_set1_ps(d.table[0]);
  // The second run's table half: runs of 16 change run within each vector
  // of 32 values (at 16-bit lane 16), runs of 32 from one vector to the
  // next.
  const __m512i half = _mm512_set1_epi32(0x00100010);
  const __m512i run_in_vector =
      _mm512_maskz_mov_epi32(static_cast<__mmask16>(0xFF00), half);
  for (; r + kRuns <= count; r += kRuns) {
    const int64_t begin = begins[r];
    bool whole = true;
    for (int k = 0; k < kRuns; ++k) {
      whole = whole && lengths[r + k] == kRun &&
              (kPlaced ? ((code_base + starts[r + k]) & 1) == 0
                       : begins[r + k] == begin + k * kRun) &&
              scales[r + k] - scales[r + k] == 0.0f;  // Finite.
    }
    if (!whole) break;
    const uint8_t* const bytes = codes + ((code_base + starts[r]) >> 1);
    __m512i* const words =
        reinterpret_cast<__m512i*>(out + 2 * (out_base + begin));
    if constexpr (kRun == 16) {
      const __m512i low =
          TableOfTwoRuns<kKind, kMode>(scales + r, g, zero_point);
      const __m512i high =
          TableOfTwoRuns<kKind, kMode>(scales + r + 2, g, zero_point);
      _mm512_storeu_si512(words, _mm512_permutexvar_epi16(
                                     CodeIndices(bytes, run_in_vector), low));
      _mm512_storeu_si512(words + 1,
                          _mm512_permutexvar_epi16(
                              CodeIndices(bytes + 16, run_in_vector), high));
    } else {
      // Placed: each run from its own codes to its own outputs.
      const uint8_t* const second =
          kPlaced ? codes + ((code_base + starts[r + 1]) >> 1) : bytes + 16;
      __m512i* const second_words =
          kPlaced
              ? reinterpret_cast<__m512i*>(out + 2 * (out_base + begins[r + 1]))
              : words + 1;
      const __m512i table =
          TableOfTwoRuns<kKind, kMode>(scales + r, g, zero_point);
      const __m512i zero = _mm512_setzero_si512();
      _mm512_storeu_si512(words, _mm512_permutexvar_epi16(
                                     kSplit ? SplitHalvesIndices(bytes, zero)
                                            : CodeIndices(bytes, zero),
                                     table));
      _mm512_storeu_si512(
          second_words,
          _mm512_permutexvar_epi16(kSplit ? SplitHalvesIndices(second, half)
                                          : CodeIndices(second, half),
                                   table));
    }
  }
  return r;
}

// NOTE [ Long e4m3 runs into bfloat16 through a table of 128 ]
// A run of e4m3 codes with one scale takes its values from 128 magnitudes
// (NOTE [ fp4 through a table of its magnitudes ]: x s, x g, / g and the
// rounding are symmetric in the sign), so a long run computes the 128 once,
// scaled and rounded (16 float vectors of arithmetic), into four vectors of
// 32 bfloat16, and each code is a lookup: two vpermi2w over entries 0-63 and
// 64-127, a blend by bit 6, and the sign bit's exclusive or, 8 operations
// per 32 values against about 30 by the bits. The table pays for itself
// from about 96 values; runs of at least kTableRun (the 128 of DeepSeek's
// blocks, rowwise and tensorwise rows) take it. It needs the run's values
// NaN-free but for the table's NaNs, which must round to themselves through
// the add, and code 0xFF's NaN must be code 0x7F's with its sign flipped
// (the caller checks both once per row).
constexpr int64_t kTableRun = 128;

// The 128 magnitudes of e4m3 (d.table's first half) times s (then x g or
// / g), rounded to bfloat16 by the add: entries 32 q to 32 q + 31 in
// table[q].
template <int kMode>
HWY_INLINE void ScaledE4M3Table(const RowDecoding& d, float s, __m512i* table) {
  const __m512 scale = _mm512_set1_ps(s);
  const __m512 g = _mm512_set1_ps(d.g);
  for (int q = 0; q < 4; ++q) {
    table[q] = UpperHalves(
        ScaledBFloat16<kMode>(_mm512_loadu_ps(d.table + 32 * q), scale, g),
        ScaledBFloat16<kMode>(_mm512_loadu_ps(d.table + 32 * q + 16), scale,
                              g));
  }
}

// NOTE [ e4m3 times a power of two through the table of 1 ]
// With no tensor scale and s = 2^k (mxfp8's E8M0 scales), a run's table is
// the table of s = 1 with k added to the exponent of every entry but 0 and
// the NaN (127): the magnitudes of e4m3 are exact bfloat16 of exponents
// 118 (2^-9) to 135 (448), so for -117 <= k <= 119 the sum is the exact
// bfloat16 of the magnitude times 2^k, which is what the float product
// gives (NOTE [ bfloat16 without the NaN test, or without rounding ]); 0
// times 2^k is 0, and NaN times 2^k the NaN. Four adds per run, not 16
// float vectors of arithmetic, so runs of 32 (mxfp8's blocks) take the
// lookups too; the table of 1 is built once per row.
inline bool PowerOfTwoInTableRange(float s, int* k) {
  uint32_t u;
  std::memcpy(&u, &s, 4);
  const int exponent = static_cast<int>(u >> 23);  // The sign must be 0.
  *k = exponent - 127;
  return (u & 0x007FFFFFu) == 0 && *k >= -117 && *k <= 119;
}

HWY_INLINE void PowerOfTwoE4M3Table(const __m512i* one, int k, __m512i* table) {
  const __m512i add = _mm512_set1_epi16(static_cast<int16_t>(k * 128));
  table[0] = _mm512_mask_add_epi16(one[0], 0xFFFFFFFEu, one[0], add);
  table[1] = _mm512_add_epi16(one[1], add);
  table[2] = _mm512_add_epi16(one[2], add);
  table[3] = _mm512_mask_add_epi16(one[3], 0x7FFFFFFFu, one[3], add);
}

// The values of the e4m3 run of n codes at `codes` through `table` (the
// run's 128 magnitudes as bfloat16) into the bfloat16 at `words`, 32 at a
// time; returns how many it wrote (a multiple of 32; the rest is the
// caller's).
HWY_INLINE int64_t E4M3ThroughTable(const __m512i* table,
                                    const uint8_t* HWY_RESTRICT codes,
                                    int64_t n, uint16_t* HWY_RESTRICT words) {
  const __m512i bit6 = _mm512_set1_epi16(0x40);
  const __m512i sign = _mm512_set1_epi16(static_cast<int16_t>(0x8000));
  int64_t done = 0;
  for (; n - done >= 32; done += 32) {
    const __m512i code = _mm512_cvtepu8_epi16(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + done)));
    const __m512i low = _mm512_permutex2var_epi16(table[0], code, table[1]);
    const __m512i high = _mm512_permutex2var_epi16(table[2], code, table[3]);
    const __m512i magnitude =
        _mm512_mask_blend_epi16(_mm512_test_epi16_mask(code, bit6), low, high);
    // magnitude ^ ((code << 8) & 0x8000): the code's sign bit 7 to bit 15.
    _mm512_storeu_si512(words + done,
                        _mm512_ternarylogic_epi32(
                            magnitude, _mm512_slli_epi16(code, 8), sign, 0x78));
  }
  return done;
}

// From run r of a row of e4m3 codes, the runs whose length is a multiple of
// 32 and whose scale is a power of two in PowerOfTwoInTableRange, each
// through the table of 1 with its exponent added (NOTE [ e4m3 times a power
// of two through the table of 1 ]), in one loop: mxfp8's runs of 32 are too
// short to pay RowT's per-run work. Returns the first run it did not take.
HWY_INLINE int64_t E4M3PowerOfTwoRuns(
    const __m512i* one, const uint8_t* HWY_RESTRICT codes, int64_t code_base,
    uint16_t* HWY_RESTRICT words, int64_t out_base, const int64_t* begins,
    const int64_t* starts, const int64_t* lengths, const float* scales,
    int64_t count, int64_t r) {
  for (; r < count; ++r) {
    int k;
    const int64_t n = lengths[r];
    if (n < 32 || n % 32 != 0 || !PowerOfTwoInTableRange(scales[r], &k)) {
      break;
    }
    __m512i table[4];
    PowerOfTwoE4M3Table(one, k, table);
    E4M3ThroughTable(table, codes + code_base + starts[r], n,
                     words + out_base + begins[r]);
  }
  return r;
}
#endif  // HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3

// One run of 32 4-bit codes in ggml's block order (RowDecoding::split_halves)
// from the 16 bytes at `bytes`: value k < 16 the low nibble of byte k, 16 + k
// its high nibble; a vector of bytes gives a vector of low values and one of
// high ones, each stored whole.
template <int kKind, int kOut, int kMode>
HWY_INLINE void SplitHalvesRun(const RowDecoding& d,
                               const uint8_t* HWY_RESTRICT bytes, float s,
                               uint8_t* HWY_RESTRICT out, int64_t o) {
  const hn::CappedTag<float, 16> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto vs = hn::Set(df, s);
  const auto g = hn::Set(df, d.g);
  for (int64_t j = 0; j < 16; j += lanes) {
    const auto b = hn::PromoteTo(di, hn::LoadU(d8, bytes + j));
    StoreValues<kOut>(
        df,
        Scale<kMode>(Decode<kKind>(df, hn::And(b, hn::Set(di, 15)), d.table),
                     vs, g),
        out, o + j);
    StoreValues<kOut>(
        df,
        Scale<kMode>(Decode<kKind>(df, hn::ShiftRight<4>(b), d.table), vs, g),
        out, o + 16 + j);
  }
}

// Whether a run's bfloat16 can skip the NaN test (NOTE [ bfloat16 without
// the NaN test, or without rounding ]): neither scale is a NaN, and the
// table's NaNs round to themselves.
template <int kMode>
HWY_INLINE bool NaNFreeRun(float s, float g, bool table_nans_round) {
  const bool scales_are_numbers =
      s == s && (kMode == static_cast<int>(TensorScaleMode::kNone) || g == g);
  return table_nans_round && scales_are_numbers;
}

template <int kKind, int kOut, int kMode>
void RowT(const RowDecoding& d, const uint8_t* HWY_RESTRICT codes,
          int64_t code_base, uint8_t* HWY_RESTRICT out, int64_t out_base,
          const int64_t* begins, const int64_t* lengths, const float* scales,
          int64_t count, const int64_t* code_begins) {
  constexpr bool kPacked4 = kKind == static_cast<int>(CodeKind::kE2M1FN) ||
                            kKind == static_cast<int>(CodeKind::kUInt4);
  // The widest vectors, and for fp4 pairs also at most 8 float lanes, so
  // that a run of 16 (nvfp4's block) is one narrow iteration, not a tail.
  using DF = hn::ScalableTag<float>;
  using DN = hn::CappedTag<float, 8>;
  const DF df;
  const DN dn;
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint8_t, DF> d8;
  const hn::Rebind<int8_t, DF> ds8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto g = hn::Set(df, d.g);
  // Only e4m3's table has NaNs (codes 0x7F and 0xFF).
  const bool table_nans_round = kKind != static_cast<int>(CodeKind::kE4M3FN) ||
                                (dd::NaNRoundsToItself(d.table[0x7F]) &&
                                 dd::NaNRoundsToItself(d.table[0xFF]));
  // Whether groups of 4-bit codes may go through tables of bfloat16: the
  // tensor scale's part of SignSymmetric, and uint4's zero point finite.
  const bool four_bit_groups = SignSymmetric<kMode>(1.0f, d.g) &&
                               (kKind != static_cast<int>(CodeKind::kUInt4) ||
                                d.table[0] - d.table[0] == 0.0f);
  (void)four_bit_groups;  // Read by the AVX-512 targets only.
  // Whether long e4m3 runs may go through a table of their 128 magnitudes
  // (NOTE [ Long e4m3 runs into bfloat16 through a table of 128 ]).
  bool e4m3_table = false;
  if constexpr (kKind == static_cast<int>(CodeKind::kE4M3FN)) {
    uint32_t nan_bits, negative_nan_bits;
    std::memcpy(&nan_bits, &d.table[0x7F], 4);
    std::memcpy(&negative_nan_bits, &d.table[0xFF], 4);
    e4m3_table =
        table_nans_round && negative_nan_bits == (nan_bits ^ 0x80000000u);
  }
  (void)e4m3_table;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  // The table of s = 1, built at the first run that needs it.
  __m512i table_of_one[4];
  bool has_table_of_one = false;
#endif
  // Where each run's codes start (relative to code_base): code_begins, or
  // begins where the row's codes follow one another.
  const int64_t* const starts = code_begins != nullptr ? code_begins : begins;
  const bool one_after_another = code_begins == nullptr && !d.split_halves;
  (void)one_after_another;  // Not read by the scalar target.
  for (int64_t r = 0; r < count; ++r) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if constexpr (kPacked4 && kOut != static_cast<int>(RunOutput::kFloat32)) {
      // Whole groups of 64 values, 32 per lookup (NOTE [ 4-bit codes into
      // bfloat16, 32 values per lookup ]).
      int64_t next = r;
      if (four_bit_groups && lengths[r] == 16 && one_after_another) {
        next = FourBitGroupsIntoBFloat16<kKind, kMode, 16>(
            d, codes, code_base, out, out_base, begins, starts, lengths, scales,
            count, r);
      } else if (four_bit_groups && lengths[r] == 32) {
        next = one_after_another
                   ? FourBitGroupsIntoBFloat16<kKind, kMode, 32>(
                         d, codes, code_base, out, out_base, begins, starts,
                         lengths, scales, count, r)
               : d.split_halves
                   ? FourBitGroupsIntoBFloat16<kKind, kMode, 32, true, true>(
                         d, codes, code_base, out, out_base, begins, starts,
                         lengths, scales, count, r)
                   : FourBitGroupsIntoBFloat16<kKind, kMode, 32, true, false>(
                         d, codes, code_base, out, out_base, begins, starts,
                         lengths, scales, count, r);
      }
      if (next != r) {
        r = next - 1;  // And the loop's ++r.
        continue;
      }
    }
    if constexpr (kKind == static_cast<int>(CodeKind::kE4M3FN) &&
                  kOut != static_cast<int>(RunOutput::kFloat32) &&
                  kMode == static_cast<int>(TensorScaleMode::kNone)) {
      // Runs of 32 with power-of-two scales (mxfp8), in one loop (NOTE [ e4m3
      // times a power of two through the table of 1 ]).
      int k;
      if (e4m3_table && lengths[r] % 32 == 0 && lengths[r] > 0 &&
          PowerOfTwoInTableRange(scales[r], &k)) {
        if (!has_table_of_one) {
          ScaledE4M3Table<kMode>(d, 1.0f, table_of_one);
          has_table_of_one = true;
        }
        const int64_t next = E4M3PowerOfTwoRuns(
            table_of_one, codes, code_base, reinterpret_cast<uint16_t*>(out),
            out_base, begins, starts, lengths, scales, count, r);
        if (next != r) {
          r = next - 1;  // And the loop's ++r.
          continue;
        }
      }
    }
#endif
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kKind == static_cast<int>(CodeKind::kE2M1FN)) {
      // Two adjacent runs of 16 from an even code, both with scales that
      // the table of magnitudes takes.
      if (one_after_another && r + 1 < count && lengths[r] == 16 &&
          lengths[r + 1] == 16 && begins[r + 1] == begins[r] + 16 &&
          ((code_base + begins[r]) & 1) == 0 &&
          SignSymmetric<kMode>(scales[r], d.g) &&
          SignSymmetric<kMode>(scales[r + 1], d.g) &&
          TwoRunsOf16<kOut, kMode>(d, codes + ((code_base + begins[r]) >> 1),
                                   scales[r], scales[r + 1], out,
                                   out_base + begins[r])) {
        ++r;  // And the loop's: both runs are done.
        continue;
      }
    }
#endif
    const float s = scales[r];
    const auto vs = hn::Set(df, s);
    int64_t c = code_base + starts[r];
    int64_t o = out_base + begins[r];
    int64_t n = lengths[r];
    if constexpr (kPacked4) {
      if (d.split_halves) {
        // ggml's block order: 32 values from 16 bytes (an even start).
        SplitHalvesRun<kKind, kOut, kMode>(d, codes + (c >> 1), s, out, o);
        continue;
      }
    }
    if constexpr (kPacked4) {
      if ((c & 1) != 0 && n > 0) {  // An odd start: one value on its own.
        dd::StoreOne(d, d.table[dd::CodeAt(codes, c, true)], s, out, o);
        ++c, ++o, --n;
      }
      if constexpr (kKind == static_cast<int>(CodeKind::kE2M1FN)) {
        if (SignSymmetric<kMode>(s, d.g)) {
          const int64_t done =
              MagnitudeTableRun<kOut, kMode>(d, codes + (c >> 1), s, n, out, o);
          c += done, o += done, n -= done;
        }
      }
      const auto pairs = [&](auto nan_free) {
        constexpr bool kNaNFree = decltype(nan_free)::value;
        for (; n >= 2 * lanes; c += 2 * lanes, o += 2 * lanes, n -= 2 * lanes) {
          Pairs<kKind, kOut, kMode, kNaNFree>(df, d, codes + (c >> 1), vs, g,
                                              out, o);
        }
        const int64_t narrow = static_cast<int64_t>(hn::Lanes(dn));
        if (narrow < lanes) {
          const auto vs_n = hn::Set(dn, s);
          const auto g_n = hn::Set(dn, d.g);
          for (; n >= 2 * narrow;
               c += 2 * narrow, o += 2 * narrow, n -= 2 * narrow) {
            Pairs<kKind, kOut, kMode, kNaNFree>(dn, d, codes + (c >> 1), vs_n,
                                                g_n, out, o);
          }
        }
      };
      // uint4 (q4_0) only: fp4's runs with a finite scale took its table
      // of magnitudes above, and the rest may have NaN scales.
      if constexpr (kKind == static_cast<int>(CodeKind::kUInt4) &&
                    kOut != static_cast<int>(RunOutput::kFloat32)) {
        if (NaNFreeRun<kMode>(s, d.g, table_nans_round)) {
          pairs(std::true_type());
        } else {
          pairs(std::false_type());
        }
      } else {
        pairs(std::false_type());
      }
    } else {
      const auto value_at = [&](int64_t at) {
        hn::Vec<decltype(di)> code;
        if constexpr (kKind == static_cast<int>(CodeKind::kInt8)) {
          code = hn::PromoteTo(
              di, hn::LoadU(ds8, reinterpret_cast<const int8_t*>(codes) + at));
        } else {
          code = hn::PromoteTo(di, hn::LoadU(d8, codes + at));
        }
        return Scale<kMode>(Decode<kKind>(df, code, d.table), vs, g);
      };
#if HWY_TARGET != HWY_SCALAR
      if constexpr (kOut != static_cast<int>(RunOutput::kFloat32)) {
        // Two vectors of bfloat16 bits packed into one whole store (the
        // even 16-bit halves of both, or the odd ones where the bfloat16 is
        // a float's upper half), where one each took a saturating pack, a
        // permutation and a half-width store. NOTE [ bfloat16 without the
        // NaN test, or without rounding ] for the first two loops.
        const hn::Repartition<uint16_t, DF> dw16;
        uint16_t* const words = reinterpret_cast<uint16_t*>(out);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
        if constexpr (kKind == static_cast<int>(CodeKind::kE4M3FN)) {
          // NOTE [ Long e4m3 runs into bfloat16 through a table of 128 ].
          if (n >= kTableRun && e4m3_table && SignSymmetric<kMode>(s, d.g)) {
            __m512i table[4];
            ScaledE4M3Table<kMode>(d, s, table);
            const int64_t done =
                E4M3ThroughTable(table, codes + c, n, words + o);
            c += done, o += done, n -= done;
          }
        }
#endif
        if (kKind == static_cast<int>(CodeKind::kE4M3FN) &&
            kMode == static_cast<int>(TensorScaleMode::kNone) &&
            table_nans_round && dd::ExactPowerOfTwoScale(s)) {
          for (; n >= 2 * lanes;
               c += 2 * lanes, o += 2 * lanes, n -= 2 * lanes) {
            const auto low = hn::BitCast(dw16, value_at(c));
            const auto high = hn::BitCast(dw16, value_at(c + lanes));
            hn::StoreU(hn::ConcatOdd(dw16, high, low), dw16, words + o);
          }
        } else if (NaNFreeRun<kMode>(s, d.g, table_nans_round)) {
          for (; n >= 2 * lanes;
               c += 2 * lanes, o += 2 * lanes, n -= 2 * lanes) {
            const auto low =
                hn::BitCast(dw16, BFloat16InUpperHalf(df, value_at(c)));
            const auto high =
                hn::BitCast(dw16, BFloat16InUpperHalf(df, value_at(c + lanes)));
            hn::StoreU(hn::ConcatOdd(dw16, high, low), dw16, words + o);
          }
        } else {
          for (; n >= 2 * lanes;
               c += 2 * lanes, o += 2 * lanes, n -= 2 * lanes) {
            const auto low = hn::BitCast(dw16, BFloat16Bits(df, value_at(c)));
            const auto high =
                hn::BitCast(dw16, BFloat16Bits(df, value_at(c + lanes)));
            hn::StoreU(hn::ConcatEven(dw16, high, low), dw16, words + o);
          }
        }
      }
#endif
      for (; n >= lanes; c += lanes, o += lanes, n -= lanes) {
        StoreValues<kOut>(df, value_at(c), out, o);
      }
    }
    for (; n > 0; ++c, ++o, --n) {
      dd::StoreOne(d, d.table[dd::CodeAt(codes, c, kPacked4)], s, out, o);
    }
  }
}

template <int kKind, int kOut>
void RowForMode(const RowDecoding& d, const uint8_t* codes, int64_t code_base,
                uint8_t* out, int64_t out_base, const int64_t* begins,
                const int64_t* lengths, const float* scales, int64_t count,
                const int64_t* code_begins) {
  switch (d.tensor_mode) {
    case TensorScaleMode::kNone:
      return RowT<kKind, kOut, 0>(d, codes, code_base, out, out_base, begins,
                                  lengths, scales, count, code_begins);
    case TensorScaleMode::kTimes:
      return RowT<kKind, kOut, 1>(d, codes, code_base, out, out_base, begins,
                                  lengths, scales, count, code_begins);
    case TensorScaleMode::kDivided:
      return RowT<kKind, kOut, 2>(d, codes, code_base, out, out_base, begins,
                                  lengths, scales, count, code_begins);
  }
}

template <int kKind>
void RowForOutput(const RowDecoding& d, const uint8_t* codes, int64_t code_base,
                  uint8_t* out, int64_t out_base, const int64_t* begins,
                  const int64_t* lengths, const float* scales, int64_t count,
                  const int64_t* code_begins) {
  if (d.output == RunOutput::kFloat32) {
    RowForMode<kKind, 0>(d, codes, code_base, out, out_base, begins, lengths,
                         scales, count, code_begins);
  } else {
    RowForMode<kKind, 1>(d, codes, code_base, out, out_base, begins, lengths,
                         scales, count, code_begins);
  }
}

void DequantizeRowSimd(const RowDecoding& d, const uint8_t* codes,
                       int64_t code_base, uint8_t* out, int64_t out_base,
                       const int64_t* begins, const int64_t* lengths,
                       const float* scales, int64_t count,
                       const int64_t* code_begins) {
  switch (d.kind) {
    case CodeKind::kE4M3FN:
      return RowForOutput<0>(d, codes, code_base, out, out_base, begins,
                             lengths, scales, count, code_begins);
    case CodeKind::kE2M1FN:
      return RowForOutput<1>(d, codes, code_base, out, out_base, begins,
                             lengths, scales, count, code_begins);
    case CodeKind::kInt8:
      return RowForOutput<2>(d, codes, code_base, out, out_base, begins,
                             lengths, scales, count, code_begins);
    case CodeKind::kUInt4:
      return RowForOutput<3>(d, codes, code_base, out, out_base, begins,
                             lengths, scales, count, code_begins);
  }
}

// out[i] = table[bytes[i]] for i < n, a vector of lanes at a time: by the
// e4m3 decoding of the codes (NOTE [ Decoding codes by their bits ]: the
// table's floats exactly, for a table of float8_e4m3fn), else by a gather.
void LookUpBytesSimd(const uint8_t* HWY_RESTRICT bytes, int64_t n, int e4m3,
                     const float* HWY_RESTRICT table, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  if (e4m3) {
    for (; i + lanes <= n; i += lanes) {
      const auto code = hn::PromoteTo(di, hn::LoadU(d8, bytes + i));
      hn::StoreU(Decode<static_cast<int>(CodeKind::kE4M3FN)>(df, code, table),
                 df, out + i);
    }
  }
  for (; i + lanes <= n; i += lanes) {
    const auto index = hn::PromoteTo(di, hn::LoadU(d8, bytes + i));
    hn::StoreU(hn::GatherIndex(df, table, index), df, out + i);
  }
  for (; i < n; ++i) out[i] = table[bytes[i]];
}

// out[i] = the float of the float16 bits at halves + 2 i (little-endian),
// for i < n, by the bits, as HalfToFloat (dtype/float_formats.h) computes
// it: a NaN keeps its payload, signaling or not. The float whose bits are
// the half's magnitude moved up 13 places is its value times 2^-112 (a
// subnormal half becomes a subnormal float), which the multiply makes
// exact; exponent 31 (infinities, NaNs) takes float's exponent 255 instead.
void HalvesToFloatsSimd(const uint8_t* HWY_RESTRICT halves, int64_t n,
                        int64_t stride, float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint16_t, decltype(df)> d16;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; stride == 1 && i + lanes <= n; i += lanes) {
    const auto h = hn::PromoteTo(
        du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(halves) + i));
    const auto magnitude = hn::ShiftLeft<13>(hn::And(h, hn::Set(du, 0x7FFFu)));
    const auto finite = hn::BitCast(
        du, hn::Mul(hn::BitCast(df, magnitude), hn::Set(df, 0x1p112f)));
    const auto special = hn::Or(magnitude, hn::Set(du, 0x7F800000u));
    // Exponent 31 (magnitudes are below 2^28: a signed comparison).
    const auto special_exponent =
        hn::Gt(hn::BitCast(di, magnitude), hn::Set(di, 0x0F7FFFFF));
    const auto value =
        hn::IfThenElse(hn::RebindMask(du, special_exponent), special, finite);
    const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
    hn::StoreU(hn::BitCast(df, hn::Or(value, sign)), df, out + i);
  }
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, halves + 2 * stride * i, 2);
    const uint32_t magnitude = static_cast<uint32_t>(h & 0x7FFFu) << 13;
    float finite;
    std::memcpy(&finite, &magnitude, 4);
    finite *= 0x1p112f;
    uint32_t bits;
    std::memcpy(&bits, &finite, 4);
    if (magnitude >= 0x0F800000u) bits = magnitude | 0x7F800000u;
    bits |= static_cast<uint32_t>(h & 0x8000u) << 16;
    std::memcpy(out + i, &bits, 4);
  }
}

// The Highway target this copy of the kernels was compiled for.
const char* DequantizeTargetSimd() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace ops_internal
}  // namespace strata
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata {
namespace ops_internal {

HWY_EXPORT(DequantizeRowSimd);
HWY_EXPORT(DequantizeTargetSimd);
HWY_EXPORT(LookUpBytesSimd);
HWY_EXPORT(HalvesToFloatsSimd);

void LookUpBytes(const uint8_t* bytes, int64_t n, bool e4m3, const float* table,
                 float* out) {
  HWY_DYNAMIC_DISPATCH(LookUpBytesSimd)(bytes, n, e4m3 ? 1 : 0, table, out);
}

void HalvesToFloats(const uint8_t* halves, int64_t n, int64_t stride,
                    float* out) {
  HWY_DYNAMIC_DISPATCH(HalvesToFloatsSimd)(halves, n, stride, out);
}

const char* DequantizeKernelTarget() {
  return HWY_DYNAMIC_DISPATCH(DequantizeTargetSimd)();
}

void DequantizeRow(const RowDecoding& decoding, const uint8_t* codes,
                   int64_t code_base, uint8_t* out, int64_t out_base,
                   const int64_t* begins, const int64_t* lengths,
                   const float* scales, int64_t count,
                   const int64_t* code_begins) {
  HWY_DYNAMIC_DISPATCH(DequantizeRowSimd)
  (decoding, codes, code_base, out, out_base, begins, lengths, scales, count,
   code_begins);
}

}  // namespace ops_internal
}  // namespace strata
#endif  // HWY_ONCE
