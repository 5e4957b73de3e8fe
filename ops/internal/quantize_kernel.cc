// NOTE [ Block quantization arithmetic ] (quantize_kernel.h) in portable C++
// and in Highway SIMD, compiled once per target by foreach_target.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/internal/quantize_kernel.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: keep foreach_target.h before highway.h.
#include "hwy/highway.h"

#ifndef STRATA_OPS_INTERNAL_QUANTIZE_KERNEL_SHARED_
#define STRATA_OPS_INTERNAL_QUANTIZE_KERNEL_SHARED_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "dtype/float_formats.h"
#include "ops/internal/narrow_codes.h"
#include "ops/internal/quantize_kernel.h"

#endif  // STRATA_OPS_INTERNAL_QUANTIZE_KERNEL_SHARED_

HWY_BEFORE_NAMESPACE();
namespace strata {
namespace ops_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace qd = quantize_detail;

// NOTE [ Loops over arrays of vectors are unrolled ]
// At -O2 (`bazel build -c opt`) GCC keeps a loop over an array of vectors
// (VI c[4], the values of kU groups of kG blocks) as a loop where its body
// is large, and the array then lives on the stack: every vector is stored
// and loaded again, and a broadcast's lane is a register. The loops of the
// nvfp4, nvfp4_ts and ggml kernels below have a `#pragma GCC unroll` of at
// least their trip count, so that -O2 builds keep the arrays in registers
// (in cache, on a Zen 4: q8_0 32 -> 21 us, q4_0 41 -> 37, nvfp4_ts 55 -> 51,
// nvfp4 46 -> 44). At -O3 (--config=opt: the tools', the package's and the
// benchmarks' build) GCC unrolls them itself and the pragmas change nothing
// measurable. QuantizeBlocksT's MX path has none: unrolled whole at -O3 its
// 32 vectors of values spill (mxfp8 at 64 MiB 3.42 -> 3.70 ms).

// At most 16 float lanes (AVX-512) or 8 elsewhere: every block (16 or 32
// values) is then a whole number of vectors, and kN / 4 blocks share one
// vector of scale arithmetic, block g in 128-bit group g.
// (Redefined for each target: this part is compiled once per target.)
#undef STRATA_QUANTIZE_512
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define STRATA_QUANTIZE_512 1
using DF = hn::CappedTag<float, 16>;
#else
#define STRATA_QUANTIZE_512 0
using DF = hn::CappedTag<float, 8>;
#endif
using DI = hn::RebindToSigned<DF>;
using D8 = hn::Rebind<uint8_t, DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;

// a + c + bit kBit of a (the parity of the bit a rounding keeps). With
// AVX-512's masks that is a test and an add under it, one operation fewer
// than the shift and the and of a vector (which other targets keep: their
// test and blend cost more).
template <int kBit, class VI>
HWY_INLINE VI AddKeptBitParity(VI a, VI c) {
  const hn::DFromV<VI> di;
  const VI sum = hn::Add(a, c);
#if HWY_TARGET <= HWY_AVX3
  return hn::IfThenElse(hn::TestBit(a, hn::Set(di, 1 << kBit)),
                        hn::Add(sum, hn::Set(di, 1)), sum);
#else
  return hn::Add(sum, hn::And(hn::ShiftRight<kBit>(a), hn::Set(di, 1)));
#endif
}

// Element codes (magnitude | sign) of y >= 0 (finite) with the sign of `bits`.
// kSaturate false: the caller knows y rounds to at most the largest code
// (NOTE [ nvfp4 groups that need no saturation ]), and the clamp is left out.
template <bool kFP4, class D, bool kSaturate = true>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> EncodeElementsOf(
    D df, hn::Vec<D> y, hn::Vec<hn::RebindToSigned<D>> bits) {
  using VI = hn::Vec<hn::RebindToSigned<D>>;
  const hn::RebindToSigned<D> di;
  const VI a = hn::BitCast(di, y);
  VI sub, normal, code;
  // The normal codes: a's bits rounded to nearest even at the code's last
  // mantissa bit (a half-quantum less one, plus the kept bit's parity),
  // with the exponent rebias folded into the same add; positive wherever
  // the normal branch is taken (y >= 1 for e2m1, y >= 2^-6 for e4m3). The
  // sign: bits shifted arithmetically, so that its top bit lands on the
  // code's.
  if (kFP4) {
    sub = hn::Sub(hn::BitCast(di, hn::Add(y, hn::Set(df, 4194304.0f))),
                  hn::Set(di, static_cast<int32_t>(qd::kTwo22Bits)));
    normal = hn::ShiftRight<22>(
        AddKeptBitParity<22>(a, hn::Set(di, 0x1FFFFF - ((126 << 1) << 22))));
    code = hn::IfThenElse(hn::RebindMask(di, hn::Lt(y, hn::Set(df, 1.0f))), sub,
                          normal);
    if (kSaturate) code = hn::Min(code, hn::Set(di, 0x7));
    return hn::Or(code, hn::And(hn::ShiftRight<28>(bits), hn::Set(di, 0x8)));
  }
  sub = hn::Sub(hn::BitCast(di, hn::Add(y, hn::Set(df, 16384.0f))),
                hn::Set(di, static_cast<int32_t>(qd::kTwo14Bits)));
  normal = hn::ShiftRight<20>(
      AddKeptBitParity<20>(a, hn::Set(di, 0x7FFFF - ((120 << 3) << 20))));
  code = hn::IfThenElse(hn::RebindMask(di, hn::Lt(y, hn::Set(df, 0x1p-6f))),
                        sub, normal);
  code = hn::Min(code, hn::Set(di, 0x7E));
  return hn::Or(code, hn::And(hn::ShiftRight<24>(bits), hn::Set(di, 0x80)));
}

template <bool kFP4, bool kSaturate = true>
HWY_INLINE VI EncodeElements(VF y, VI bits) {
  return EncodeElementsOf<kFP4, DF, kSaturate>(DF(), y, bits);
}

#if HWY_TARGET != HWY_SCALAR
// The e2m1 codes (0 to 15) of `lo` then `hi` as nibble pairs, low nibble
// first: lane p holds codes 2p and 2p + 1 of the two vectors' lanes in order.
HWY_INLINE VI NibblePairs(VI lo, VI hi) {
  const DI di;
  return hn::Or(hn::ConcatEven(di, hi, lo),
                hn::ShiftLeft<4>(hn::ConcatOdd(di, hi, lo)));
}
#endif

#if STRATA_QUANTIZE_512
// The largest lane of each of four 16-lane vectors m[0..3], in every lane of
// 128-bit group g for m[g]: halves first (m[0] and m[1] in the two 256-bit
// halves of a01), then the 128-bit groups (group g of max(even, odd) is
// m[g]'s), then within each group. One network for four blocks, where
// MaxOfLanes would reduce each alone.
HWY_INLINE VI GroupMaxima4(const VI m[4]) {
  const DI di;
  const VI a01 = hn::Max(hn::ConcatLowerLower(di, m[1], m[0]),
                         hn::ConcatUpperUpper(di, m[1], m[0]));
  const VI a23 = hn::Max(hn::ConcatLowerLower(di, m[3], m[2]),
                         hn::ConcatUpperUpper(di, m[3], m[2]));
  VI w = hn::Max(VI{_mm512_shuffle_i32x4(a01.raw, a23.raw, 0x88)},   // 0,2,0,2
                 VI{_mm512_shuffle_i32x4(a01.raw, a23.raw, 0xDD)});  // 1,3,1,3
  w = hn::Max(w, hn::Shuffle1032(w));
  return hn::Max(w, hn::Shuffle2301(w));
}

// The 16 block amaxes of four GroupMaxima4 results in order: lane 4u + k
// is lane 4k of w[u] (block k of group u). Two two-source permutations and
// a blend.
HWY_INLINE VI SixteenMaxima(const VI w[4]) {
  const __m512i low =
      _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i high =
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 8, 12, 16, 20, 24, 28);
  const __m512i a = _mm512_permutex2var_epi32(w[0].raw, low, w[1].raw);
  const __m512i b = _mm512_permutex2var_epi32(w[2].raw, high, w[3].raw);
  return VI{_mm512_mask_blend_epi32(0xFF00, a, b)};
}

// 128-bit group g of v in every group (the shuffle takes an immediate).
HWY_INLINE VF BroadcastGroup(VF v, int g) {
  const __m512 r = v.raw;
  return VF{g == 0   ? _mm512_shuffle_f32x4(r, r, 0x00)
            : g == 1 ? _mm512_shuffle_f32x4(r, r, 0x55)
            : g == 2 ? _mm512_shuffle_f32x4(r, r, 0xAA)
                     : _mm512_shuffle_f32x4(r, r, 0xFF)};
}
// Four vectors of codes (int32 lanes: 0 to 255, or -128 to 127 where
// kSigned) as 64 bytes in order: three packs and a permutation of dwords
// for four vectors, where DemoteTo spends two packs, a mask and a
// permutation on each. Within a 128-bit lane L the packs leave dword
// 4L + k holding lanes 4L..4L+3 of c[k].
template <bool kSigned = false>
HWY_INLINE void StoreCodes4(const VI c[4], uint8_t* HWY_RESTRICT out) {
  const __m512i ab = kSigned ? _mm512_packs_epi32(c[0].raw, c[1].raw)
                             : _mm512_packus_epi32(c[0].raw, c[1].raw);
  const __m512i cd = kSigned ? _mm512_packs_epi32(c[2].raw, c[3].raw)
                             : _mm512_packus_epi32(c[2].raw, c[3].raw);
  const __m512i bytes =
      kSigned ? _mm512_packs_epi16(ab, cd) : _mm512_packus_epi16(ab, cd);
  const __m512i order =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  _mm512_storeu_si512(out, _mm512_permutexvar_epi32(order, bytes));
}

// Four vectors of e2m1 codes (0 to 15) as 32 bytes of nibble pairs, low
// nibble first: each pair of vectors packed into one (NibblePairs, as
// StoreBlockCodes does), then the two as in StoreCodes4.
HWY_INLINE void StoreNibbles4(const VI c[4], uint8_t* HWY_RESTRICT out) {
  const VI p0 = NibblePairs(c[0], c[1]);
  const VI p1 = NibblePairs(c[2], c[3]);
  const __m512i words = _mm512_packus_epi32(p0.raw, p1.raw);
  const __m512i bytes = _mm512_packus_epi16(words, words);
  const __m512i order =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 4, 8, 12, 1, 5, 9, 13);
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(out),
      _mm512_castsi512_si256(_mm512_permutexvar_epi32(order, bytes)));
}
#endif  // STRATA_QUANTIZE_512

// The values of non-negative e4m3 codes, NaN's 0x7F aside: 2^(e-7) * 1.m,
// or m * 2^-9 where the exponent field e is 0.
template <class D>
HWY_INLINE hn::Vec<D> E4M3Values(D df, hn::Vec<hn::RebindToSigned<D>> code) {
  const hn::RebindToSigned<D> di;
  const auto e = hn::ShiftRight<3>(code);
  const auto m = hn::And(code, hn::Set(di, 7));
  const auto normal =
      hn::BitCast(df, hn::Or(hn::ShiftLeft<23>(hn::Add(e, hn::Set(di, 120))),
                             hn::ShiftLeft<20>(m)));
  const auto sub = hn::Mul(hn::ConvertTo(df, m), hn::Set(df, 0x1p-9f));
  return hn::IfThenElse(hn::RebindMask(df, hn::Eq(e, hn::Zero(di))), sub,
                        normal);
}

// nvfp4 block scales of the amax bits w, lane by lane: *code = amax / 6 to
// nearest even e4m3 (saturating), 0x7F where amax is not finite, and *s its
// value; a zero scale divides by +inf (every element a zero).
HWY_INLINE void NVFP4Scales(VI w, VI* code, VF* s) {
  const DF df;
  const DI di;
  const VI c = EncodeElements<false>(
      hn::Div(hn::BitCast(df, w), hn::Set(df, 6.0f)), hn::Zero(di));
  *s = hn::IfThenElse(hn::RebindMask(df, hn::Eq(c, hn::Zero(di))),
                      hn::Set(df, std::numeric_limits<float>::infinity()),
                      E4M3Values(df, c));
  const auto nonfinite =
      hn::Gt(w, hn::Set(di, static_cast<int32_t>(qd::kInfBits - 1)));
  *code = hn::IfThenElse(nonfinite, hn::Set(di, 0x7F), c);
}

#if HWY_TARGET != HWY_SCALAR
// Stores the fp4 codes of one block (kV vectors, low nibble first), or its
// fp8 codes, to out.
template <bool kFP4, int kV>
HWY_INLINE void StoreBlockCodes(const VI* codes, uint8_t* HWY_RESTRICT out) {
  const D8 d8;
  constexpr size_t kN = hn::MaxLanes(DF());
  if (!kFP4) {
    for (int j = 0; j < kV; ++j) {
      hn::StoreU(hn::DemoteTo(d8, codes[j]), d8, out + j * kN);
    }
  } else if (kV == 1) {
    // One vector of codes: its kN / 2 packed bytes are the lower half.
    const hn::Half<DI> dh;
    const hn::Rebind<uint8_t, hn::Half<DI>> dh8;
    hn::StoreU(
        hn::DemoteTo(dh8, hn::LowerHalf(dh, NibblePairs(codes[0], codes[0]))),
        dh8, out);
  } else {
    for (int j = 0; j + 1 < kV; j += 2) {
      hn::StoreU(hn::DemoteTo(d8, NibblePairs(codes[j], codes[j + 1])), d8,
                 out + j * kN / 2);
    }
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

template <int kFormat>
HWY_INLINE void QuantizeBlocksT(const float* HWY_RESTRICT src, int64_t blocks,
                                uint8_t* HWY_RESTRICT values,
                                uint8_t* HWY_RESTRICT scales) {
  constexpr bool kNV = kFormat == static_cast<int>(QuantFormat::kNVFP4);
  constexpr bool kFP4 = kFormat != static_cast<int>(QuantFormat::kMXFP8E4M3);
  constexpr int kBlock = kNV ? 16 : 32;
  constexpr int kEmax = kFP4 ? 2 : 8;
  const DF df;
  const DI di;
  const D8 d8;
  constexpr size_t kN = hn::MaxLanes(df);
  constexpr int kV = kBlock / static_cast<int>(kN);
  constexpr int kValueBytes = kFP4 ? kBlock / 2 : kBlock;
  const VI abs_mask = hn::Set(di, static_cast<int32_t>(qd::kAbsMask));
  int64_t blk = 0;
#if HWY_TARGET != HWY_SCALAR
  // kG = kN / 4 blocks at a time, block g's maximum reduced inside 128-bit
  // lane group g, so that the scales are computed in vectors too (the same
  // arithmetic as the per-block loop below, which handles the rest). On
  // AVX-512, kU = 4 such groups per iteration, each step done for all: a
  // group is one chain of latencies (maximum, the scale's division and
  // encoding, the elements' division), and groups side by side keep the
  // divider and the other units busy where one left them waiting (two: nvfp4
  // 1.3x, mxfp 1.1x faster than one; four: nvfp4 and mxfp4 1.08x, mxfp8
  // 1.05x faster than two, on a Zen 4, though mxfp8's 32 vectors of values
  // then spill).
  constexpr int kG = static_cast<int>(kN) / 4;
  static_assert(kG == 1 || kG == 2 || kG == 4, "4, 8 or 16 float lanes");
  constexpr int kU = STRATA_QUANTIZE_512 ? 4 : 1;
  for (; blk + kU * kG <= blocks; blk += kU * kG) {
#if STRATA_QUANTIZE_512
    if constexpr (kNV && kG == 4 && kU == 4) {
      // nvfp4's 16 blocks share one vector of scale arithmetic (lane j:
      // block blk + j), where four vectors each used 4 lanes of 16; each
      // block's scale is then broadcast from it, as BroadcastGroup did. The
      // values are loaded again from L1 to be encoded: kept in registers
      // across the scales, 16 vectors, they were spilled to the stack (a
      // store each). The loops are unrolled so that each broadcast's lane is
      // a constant.
      const float* p = src + blk * kBlock;
      VI w[kU];
#pragma GCC unroll 4
      for (int u = 0; u < kU; ++u) {
        VI m[kG];
#pragma GCC unroll 4
        for (int g = 0; g < kG; ++g) {
          m[g] = hn::And(hn::BitCast(di, hn::LoadU(df, p + (4 * u + g) * kN)),
                         abs_mask);
        }
        w[u] = GroupMaxima4(m);
      }
      VI code16;
      VF s16;
      NVFP4Scales(SixteenMaxima(w), &code16, &s16);
      const auto encode = [&](auto saturate) {
#pragma GCC unroll 4
        for (int u = 0; u < kU; ++u) {
          VI codes[kG];
#pragma GCC unroll 4
          for (int g = 0; g < kG; ++g) {
            const VF sg{
                _mm512_permutexvar_ps(_mm512_set1_epi32(4 * u + g), s16.raw)};
            const VI bits =
                hn::BitCast(di, hn::LoadU(df, p + (4 * u + g) * kN));
            const VF a = hn::BitCast(df, hn::And(bits, abs_mask));
            codes[g] = EncodeElements<kFP4, decltype(saturate)::value>(
                hn::Div(a, sg), bits);
          }
          StoreNibbles4(codes, values + (blk + u * kG) * kValueBytes);
        }
      };
      // NOTE [ nvfp4 groups that need no saturation ]
      // A normal e4m3 scale below the top code (8 <= code <= 0x7D) is amax /
      // 6 rounded without saturation, within a factor (1 - 2^-4) of it from
      // below, so every y = |x| / s is at most 6 * 16/15 (1 + 2^-23) < 7,
      // which rounds to at most e2m1's 6 (code 7); a zero scale divides by
      // +inf (y = 0), and a NaN scale's codes are cleared below. Subnormal
      // scales (y up to 9) and the saturated 448 are clamped.
      // Scale codes 8 to 0x7D, or 0, or 0x7F.
      const auto normal_below_top = hn::And(hn::Gt(code16, hn::Set(di, 7)),
                                            hn::Lt(code16, hn::Set(di, 0x7E)));
      if (hn::AllTrue(di, hn::Or(normal_below_top,
                                 hn::Or(hn::Eq(code16, hn::Zero(di)),
                                        hn::Eq(code16, hn::Set(di, 0x7F)))))) {
        encode(std::false_type());
      } else {
        encode(std::true_type());
      }
      hn::StoreU(hn::DemoteTo(d8, code16), d8, scales + blk);
      // The codes of a block with a NaN or infinite scale (after the stores).
      if (!hn::AllFalse(di, hn::Eq(code16, hn::Set(di, 0x7F)))) {
        for (int j = 0; j < 16; ++j) {
          if (scales[blk + j] == 0x7F) {
            std::memset(values + (blk + j) * kValueBytes, 0, kValueBytes);
          }
        }
      }
      continue;
    }
#endif
    VI bits[kU][kG][kV];
    VI m[kU][kG];
    for (int u = 0; u < kU; ++u) {
      for (int g = 0; g < kG; ++g) {
        const float* p = src + (blk + u * kG + g) * kBlock;
        m[u][g] = hn::Zero(di);
        for (int j = 0; j < kV; ++j) {
          bits[u][g][j] = hn::BitCast(di, hn::LoadU(df, p + j * kN));
          m[u][g] = hn::Max(m[u][g], hn::And(bits[u][g][j], abs_mask));
        }
      }
    }
    VI code[kU];
    VF s[kU];
    for (int u = 0; u < kU; ++u) {
      VI w;  // Group g: block g's amax bits.
#if STRATA_QUANTIZE_512
      if constexpr (kG == 4) w = GroupMaxima4(m[u]);
#endif
      if constexpr (kG < 4) {
        w = m[u][0];
        if (kG == 2) {
          w = hn::Max(hn::ConcatLowerLower(di, m[u][kG - 1], m[u][0]),
                      hn::ConcatUpperUpper(di, m[u][kG - 1], m[u][0]));
        }
        w = hn::Max(w, hn::Shuffle1032(w));
        w = hn::Max(w, hn::Shuffle2301(w));
      }
      if (kNV) {
        NVFP4Scales(w, &code[u], &s[u]);
      } else {
        // max(E(amax) - emax, 0), and 2^-X = bits (254 - code) << 23.
        code[u] = hn::Max(hn::Sub(hn::ShiftRight<23>(w), hn::Set(di, kEmax)),
                          hn::Zero(di));
        s[u] = hn::BitCast(
            df, hn::ShiftLeft<23>(hn::Sub(hn::Set(di, 254), code[u])));
        const auto nonfinite =
            hn::Gt(w, hn::Set(di, static_cast<int32_t>(qd::kInfBits - 1)));
        code[u] = hn::IfThenElse(nonfinite, hn::Set(di, 0xFF), code[u]);
      }
    }
    // On AVX-512 the four blocks' codes are stored together (StoreCodes4,
    // StoreNibbles4); elsewhere block by block.
    constexpr bool kStoreTogether = STRATA_QUANTIZE_512 && kG == 4;
    for (int u = 0; u < kU; ++u) {
      const int64_t first = blk + u * kG;
      VI all_codes[kG * kV];
      for (int g = 0; g < kG; ++g) {
        VF sg = s[u];
        if (kG == 2) {
          sg = g == 0 ? hn::ConcatLowerLower(df, s[u], s[u])
                      : hn::ConcatUpperUpper(df, s[u], s[u]);
        }
#if STRATA_QUANTIZE_512
        if (kG == 4) sg = BroadcastGroup(s[u], g);
#endif
        VI* codes = all_codes + g * kV;
        for (int j = 0; j < kV; ++j) {
          const VF a = hn::BitCast(df, hn::And(bits[u][g][j], abs_mask));
          const VF y = kNV ? hn::Div(a, sg) : hn::Mul(a, sg);
          codes[j] = EncodeElements<kFP4>(y, bits[u][g][j]);
        }
        if (!kStoreTogether) {
          StoreBlockCodes<kFP4, kV>(codes, values + (first + g) * kValueBytes);
        }
      }
#if STRATA_QUANTIZE_512
      if constexpr (kStoreTogether) {
        // The kG blocks' codes are kG * kV vectors, contiguous in the output.
        for (int q = 0; q < kV; ++q) {
          if (kFP4) {
            StoreNibbles4(all_codes + 4 * q,
                          values + first * kValueBytes + 32 * q);
          } else {
            StoreCodes4(all_codes + 4 * q,
                        values + first * kValueBytes + 64 * q);
          }
        }
      }
#endif
      // The scales, and the codes of a block with a NaN or infinite scale
      // (after the stores above).
      for (int g = 0; g < kG; ++g) {
        const uint32_t scale_code =
            static_cast<uint32_t>(hn::ExtractLane(code[u], 4 * g));
        scales[first + g] = static_cast<uint8_t>(scale_code);
        if (scale_code == (kNV ? 0x7Fu : 0xFFu)) {
          std::memset(values + (first + g) * kValueBytes, kFP4 ? 0 : 0x7F,
                      kValueBytes);
        }
      }
    }
  }
#endif
  for (; blk < blocks; ++blk) {
    const float* p = src + blk * kBlock;
    uint8_t* out = values + blk * kValueBytes;
    VI bits[kV];
    VI m = hn::Zero(di);
    for (int j = 0; j < kV; ++j) {
      bits[j] = hn::BitCast(di, hn::LoadU(df, p + j * kN));
      m = hn::Max(m, hn::And(bits[j], abs_mask));
    }
    const uint32_t amax =
        static_cast<uint32_t>(hn::GetLane(hn::MaxOfLanes(di, m)));
    if (amax >= qd::kInfBits) {
      scales[blk] = kNV ? 0x7F : 0xFF;
      std::memset(out, kFP4 ? 0 : 0x7F, kValueBytes);
      continue;
    }
    VF y[kV];
    if (kNV) {
      const uint32_t code = qd::E4M3Magnitude(qd::FromBits(amax) / 6.0f);
      scales[blk] = static_cast<uint8_t>(code);
      const VF s =
          hn::Set(df, code == 0 ? std::numeric_limits<float>::infinity()
                                : qd::DecodeE4M3(code));
      for (int j = 0; j < kV; ++j) {
        y[j] = hn::Div(hn::BitCast(df, hn::And(bits[j], abs_mask)), s);
      }
    } else {
      const int32_t e = static_cast<int32_t>(amax >> 23) - kEmax;
      const uint32_t code = static_cast<uint32_t>(e > 0 ? e : 0);
      scales[blk] = static_cast<uint8_t>(code);
      const VF mul = hn::Set(df, qd::FromBits((254u - code) << 23));
      for (int j = 0; j < kV; ++j) {
        y[j] = hn::Mul(hn::BitCast(df, hn::And(bits[j], abs_mask)), mul);
      }
    }
    VI codes[kV];
    for (int j = 0; j < kV; ++j) codes[j] = EncodeElements<kFP4>(y[j], bits[j]);
    if (!kFP4) {
      for (int j = 0; j < kV; ++j) {
        hn::StoreU(hn::DemoteTo(d8, codes[j]), d8, out + j * kN);
      }
    } else {
#if HWY_TARGET == HWY_SCALAR
      uint8_t unpacked[kBlock];
      for (int j = 0; j < kV; ++j) {
        unpacked[j] = static_cast<uint8_t>(hn::GetLane(codes[j]));
      }
      for (int k = 0; k < kBlock / 2; ++k) {
        out[k] =
            static_cast<uint8_t>(unpacked[2 * k] | (unpacked[2 * k + 1] << 4));
      }
#else
      StoreBlockCodes<kFP4, kV>(codes, out);
#endif
    }
  }
}

// The family's kernels (NOTE [ The family's quantization arithmetic ] in
// quantize_family.h) at the full vector width of the target.
using DW = hn::ScalableTag<float>;
using DWI = hn::RebindToSigned<DW>;

// The code of each lane of v * pre / divisor (v / divisor where `multiply`
// is false): e2m1 or e4m3, NaN 0 (e2m1) or 0x7F with its sign (e4m3).
// kNoNaN: the caller knows no quotient is NaN (FiniteQuotients), and the
// test for one is left out.
template <bool kFP4, bool kNoNaN = false>
HWY_INLINE hn::Vec<DWI> EncodeLanes(hn::Vec<DW> v, bool multiply,
                                    hn::Vec<DW> pre, hn::Vec<DW> divisor) {
  const DW df;
  const DWI di;
  if (multiply) v = hn::Mul(v, pre);
  const auto bits = hn::BitCast(di, hn::Div(v, divisor));
  const auto a = hn::And(bits, hn::Set(di, static_cast<int32_t>(qd::kAbsMask)));
  const auto code = EncodeElementsOf<kFP4>(df, hn::BitCast(df, a), bits);
  if (kNoNaN) return code;
  const auto nan = hn::Gt(a, hn::Set(di, static_cast<int32_t>(qd::kInfBits)));
  // A NaN's e4m3 code is 0x7E (its rounded bits saturate) with its sign:
  // one more is 0x7F with the sign.
  if (kFP4) return hn::IfThenZeroElse(nan, code);
  return hn::IfThenElse(nan, hn::Add(code, hn::Set(di, 1)), code);
}

// Whether no quotient x * pre / divisor of a block is NaN, from its amax
// bits: every x finite (amax below infinity's bits), pre finite and the
// divisor positive and finite. Then x * pre is finite or infinite, never
// NaN, and so is its quotient by the divisor.
HWY_INLINE bool FiniteQuotients(uint32_t amax, float pre, float divisor) {
  return amax < qd::kInfBits && std::isfinite(pre) && divisor > 0 &&
         divisor < std::numeric_limits<float>::infinity();
}

// The codes of one block of `block` values divided by `divisor` (after the
// product by pre, where `multiply`).
template <bool kFP4, bool kNoNaN>
HWY_INLINE void EncodeBlockT(const float* HWY_RESTRICT p, int64_t block,
                             bool multiply, float pre, float divisor,
                             uint8_t* HWY_RESTRICT out) {
  const DW df;
  const hn::Rebind<uint8_t, DW> d8;
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  const auto vp = hn::Set(df, pre);
  const auto vd = hn::Set(df, divisor);
  int64_t i = 0;
#if STRATA_QUANTIZE_512
  for (; i + 4 * n <= block; i += 4 * n) {
    const VI c[4] = {
        EncodeLanes<kFP4, kNoNaN>(hn::LoadU(df, p + i), multiply, vp, vd),
        EncodeLanes<kFP4, kNoNaN>(hn::LoadU(df, p + i + n), multiply, vp, vd),
        EncodeLanes<kFP4, kNoNaN>(hn::LoadU(df, p + i + 2 * n), multiply, vp,
                                  vd),
        EncodeLanes<kFP4, kNoNaN>(hn::LoadU(df, p + i + 3 * n), multiply, vp,
                                  vd)};
    StoreCodes4(c, out + i);
  }
#endif
  for (; i + n <= block; i += n) {
    const auto code =
        EncodeLanes<kFP4, kNoNaN>(hn::LoadU(df, p + i), multiply, vp, vd);
    hn::StoreU(hn::DemoteTo(d8, code), d8, out + i);
  }
  for (; i < block; ++i) {
    const float y = multiply ? p[i] * pre / divisor : p[i] / divisor;
    out[i] = kFP4 ? qd::E2M1Code(y) : qd::E4M3Code(y);
  }
}

// codes[i] for `blocks` runs of `block` values, block b divided by
// divisors[b] (after the product by pre, where pre is not 1); blocks whose
// amax (where given) shows FiniteQuotients skip the NaN test.
template <bool kFP4>
HWY_INLINE void EncodeBlocksT(const float* HWY_RESTRICT x, int64_t blocks,
                              int64_t block, float pre,
                              const float* HWY_RESTRICT divisors,
                              const uint32_t* HWY_RESTRICT amax,
                              uint8_t* HWY_RESTRICT codes) {
  const bool multiply = pre != 1.0f;
  int64_t b = 0;
#if STRATA_QUANTIZE_512
  const DW df;
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  const auto vp = hn::Set(df, pre);
  // Blocks of one vector (nvfp4_ts's 16 values): four at a time, so that
  // their codes are stored together.
  if (block == n) {
    for (; b + 4 <= blocks; b += 4) {
      const float* p = x + b * block;
      VI c[4];
      for (int g = 0; g < 4; ++g) {
        c[g] = EncodeLanes<kFP4>(hn::LoadU(df, p + g * n), multiply, vp,
                                 hn::Set(df, divisors[b + g]));
      }
      StoreCodes4(c, codes + b * block);
    }
  }
#endif
  for (; b < blocks; ++b) {
    const float* p = x + b * block;
    uint8_t* out = codes + b * block;
    if (amax != nullptr && FiniteQuotients(amax[b], pre, divisors[b])) {
      // `multiply` spelled as a constant, so that each copy of the loop
      // drops its test (1-2% in cache against passing the flag: fp8
      // tensorwise 29.2-29.4 against 29.8-30.1 us).
      if (multiply) {
        EncodeBlockT<kFP4, true>(p, block, true, pre, divisors[b], out);
      } else {
        EncodeBlockT<kFP4, true>(p, block, false, pre, divisors[b], out);
      }
    } else {
      EncodeBlockT<kFP4, false>(p, block, multiply, pre, divisors[b], out);
    }
  }
}

void EncodeBlocksSimd(int fp4, const float* x, int64_t blocks, int64_t block,
                      float pre, const float* divisors, const uint32_t* amax,
                      uint8_t* codes) {
  if (fp4) {
    return EncodeBlocksT<true>(x, blocks, block, pre, divisors, amax, codes);
  }
  return EncodeBlocksT<false>(x, blocks, block, pre, divisors, amax, codes);
}

// nvfp4_ts* block scales of the amaxes `a` (as floats), lane by lane:
// `*code` = e4m3(a / (6 * g)), or e4m3(a * g' / 6) (recip), and `*divisor`,
// that of the block's elements: s * g, or s (recip); +inf where s is 0, NaN
// where it is NaN. vg holds g (or g'), six_g 6 * g.
template <class D>
HWY_INLINE void TensorScaledBlockScales(
    D df, hn::Vec<D> a, bool recip, hn::Vec<D> vg, hn::Vec<D> six_g,
    hn::Vec<hn::RebindToSigned<D>>* code_out, hn::Vec<D>* divisor_out) {
  const hn::RebindToSigned<D> di;
  const auto q =
      recip ? hn::Div(hn::Mul(a, vg), hn::Set(df, 6.0f)) : hn::Div(a, six_g);
  const auto qb = hn::BitCast(di, q);
  const auto code = hn::IfThenElse(
      hn::Gt(qb, hn::Set(di, static_cast<int32_t>(qd::kInfBits))),
      hn::Set(di, 0x7F), EncodeElementsOf<false>(df, q, qb));
  const auto as_float = [&](auto mask) { return hn::RebindMask(df, mask); };
  const auto value = hn::IfThenElse(as_float(hn::Eq(code, hn::Set(di, 0x7F))),
                                    hn::Set(df, NAN), E4M3Values(df, code));
  auto divisor = recip ? value : hn::Mul(value, vg);
  *divisor_out = hn::IfThenElse(as_float(hn::Eq(code, hn::Zero(di))),
                                hn::Set(df, INFINITY), divisor);
  *code_out = code;
}

// nvfp4_ts* block scales from the block amax bits: codes[b] =
// e4m3(amax_b / (6 * g)), or e4m3(amax_b * g' / 6) (recip), and the divisor
// of block b's elements: s_b * g, or s_b (recip); +inf where s_b is 0, NaN
// where it is NaN.
void BlockScalesSimd(int recip, const uint32_t* HWY_RESTRICT amax, int64_t n,
                     float g, uint8_t* HWY_RESTRICT codes,
                     float* HWY_RESTRICT divisors) {
  const DW df;
  const DWI di;
  const hn::Rebind<uint8_t, DW> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto vg = hn::Set(df, g);
  const auto six_g = hn::Set(df, 6.0f * g);
  int64_t b = 0;
  for (; b + lanes <= n; b += lanes) {
    const auto a = hn::BitCast(
        df, hn::LoadU(di, reinterpret_cast<const int32_t*>(amax + b)));
    hn::Vec<DWI> code;
    hn::Vec<DW> divisor;
    TensorScaledBlockScales(df, a, recip, vg, six_g, &code, &divisor);
    hn::StoreU(hn::DemoteTo(d8, code), d8, codes + b);
    hn::StoreU(divisor, df, divisors + b);
  }
  for (; b < n; ++b) {
    const float a = qd::FromBits(amax[b]);
    const uint8_t code = qd::E4M3Code(recip ? a * g / 6.0f : a / (6.0f * g));
    codes[b] = code;
    const float value = code == 0x7F ? NAN : qd::DecodeE4M3(code);
    divisors[b] = code == 0 ? INFINITY : (recip ? value : value * g);
  }
}

// out[p] = codes[2p] | codes[2p + 1] << 4 for p < n / 2 (codes < 16).
void PackNibblePairsSimd(const uint8_t* HWY_RESTRICT codes, int64_t n,
                         uint8_t* HWY_RESTRICT out) {
  const int64_t pairs = n / 2;
  int64_t p = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<int16_t> d16;  // int16 -> uint8 demotes everywhere.
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  const hn::Repartition<uint8_t, decltype(d16)> dbytes;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d16));
  for (; p + lanes <= pairs; p += lanes) {
    // Little-endian: a 16-bit lane holds codes[2p] low and codes[2p+1] high.
    const auto both = hn::BitCast(d16, hn::LoadU(dbytes, codes + 2 * p));
    const auto packed =
        hn::Or(hn::And(both, hn::Set(d16, 0x0F)),
               hn::ShiftRight<4>(hn::And(both, hn::Set(d16, 0x0F00))));
    hn::StoreU(hn::DemoteTo(d8, packed), d8, out + p);
  }
#endif
  for (; p < pairs; ++p) {
    out[p] = static_cast<uint8_t>(codes[2 * p] | (codes[2 * p + 1] << 4));
  }
}

// amax[b] = max(amax[b], the largest |x| bits of block b).
void BlockAbsMaxSimd(const float* HWY_RESTRICT x, int64_t blocks, int64_t block,
                     uint32_t* HWY_RESTRICT amax) {
  const DW df;
  const DWI di;
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  const auto abs_mask = hn::Set(di, static_cast<int32_t>(qd::kAbsMask));
  int64_t b = 0;
#if STRATA_QUANTIZE_512
  // Blocks of whole 16-lane vectors, four at a time: one reduction network
  // for the four (as in QuantizeBlocksT) instead of one MaxOfLanes each.
  if (n == 16 && block % 16 == 0) {
    for (; b + 4 <= blocks; b += 4) {
      VI m[4];
      for (int g = 0; g < 4; ++g) {
        const float* p = x + (b + g) * block;
        m[g] = hn::And(hn::BitCast(di, hn::LoadU(DF(), p)), abs_mask);
        for (int64_t i = 16; i < block; i += 16) {
          m[g] = hn::Max(
              m[g], hn::And(hn::BitCast(di, hn::LoadU(DF(), p + i)), abs_mask));
        }
      }
      const VI w = GroupMaxima4(m);  // Group g: block b + g's amax.
      alignas(64) uint32_t lanes[16];
      hn::Store(hn::BitCast(hn::RebindToUnsigned<DI>(), w),
                hn::RebindToUnsigned<DI>(), lanes);
      for (int g = 0; g < 4; ++g) {
        amax[b + g] = std::max(amax[b + g], lanes[4 * g]);
      }
    }
  }
#endif
  for (; b < blocks; ++b) {
    const float* p = x + b * block;
    auto m = hn::Zero(di);
    int64_t i = 0;
    for (; i + n <= block; i += n) {
      m = hn::Max(m, hn::And(hn::BitCast(di, hn::LoadU(df, p + i)), abs_mask));
    }
    uint32_t r = static_cast<uint32_t>(hn::GetLane(hn::MaxOfLanes(di, m)));
    for (; i < block; ++i) r = std::max(r, qd::Bits(p[i]) & qd::kAbsMask);
    amax[b] = std::max(amax[b], r);
  }
}

// nvfp4_ts* over `blocks` consecutive blocks of 16 values with tensor scale
// g (g' where recip): the packed e2m1 codes (low nibble first) to values and
// the e4m3 scale codes to scales, as BlockAbsMax, BlockScales, EncodeBlocks
// and PackNibblePairs give them in turn. On AVX-512, 16 blocks at a time
// through registers: their maxima in four reduction networks, their 16
// scales in one vector (one division, as BlockScales spends on 16 blocks),
// each block's divisor broadcast from it, the codes packed and stored with
// the 16 scale bytes; the rows are read once, and neither the codes nor the
// divisors touch memory. Returns how many blocks it did: a multiple of 16,
// none where the target has no 512-bit vectors (QuantizeTensorScaledBlocks
// does the rest through the four kernels).
template <bool kRecip>
HWY_INLINE int64_t QuantizeTensorScaledBlocksT(const float* HWY_RESTRICT x,
                                               int64_t blocks, float g,
                                               uint8_t* HWY_RESTRICT values,
                                               uint8_t* HWY_RESTRICT scales) {
  int64_t b = 0;
#if STRATA_QUANTIZE_512
  {
    constexpr int64_t kBlock = 16;
    const DF df;
    const DI di;
    const D8 d8;
    const VI abs_mask = hn::Set(di, static_cast<int32_t>(qd::kAbsMask));
    const VF vg = hn::Set(df, g);
    const VF six_g = hn::Set(df, 6.0f * g);
    const bool finite_pre = !kRecip || std::isfinite(g);
    for (; b + 16 <= blocks; b += 16) {
      // The values are loaded again from L1 to be encoded (kept across the
      // scale arithmetic, they were spilled: as in QuantizeBlocksT), and the
      // loops are unrolled so that each broadcast's lane is a constant.
      const float* p = x + b * kBlock;
      VI w[4];  // Group k of w[u]: block 4u + k's amax bits.
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        VI m[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          m[k] =
              hn::And(hn::BitCast(di, hn::LoadU(df, p + (4 * u + k) * kBlock)),
                      abs_mask);
        }
        w[u] = GroupMaxima4(m);
      }
      VI code;  // Lane j: block j's scale code; divisor likewise.
      VF divisor;
      const VI maxima = SixteenMaxima(w);
      TensorScaledBlockScales(df, hn::BitCast(df, maxima), kRecip, vg, six_g,
                              &code, &divisor);
      hn::StoreU(hn::DemoteTo(d8, code), d8, scales + b);
      const auto encode = [&](auto no_nan) {
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) {
          VI c[4];
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) {
            const VF block_divisor{_mm512_permutexvar_ps(
                _mm512_set1_epi32(4 * u + k), divisor.raw)};
            // x * 1 is x: where recip, always the product.
            c[k] = EncodeLanes<true, decltype(no_nan)::value>(
                hn::LoadU(df, p + (4 * u + k) * kBlock), kRecip, vg,
                block_divisor);
          }
          StoreNibbles4(c, values + (b + 4 * u) * (kBlock / 2));
        }
      };
      // FiniteQuotients for all 16 blocks at once: no NaN test.
      if (finite_pre &&
          hn::AllTrue(di, hn::Lt(maxima, hn::Set(di, static_cast<int32_t>(
                                                         qd::kInfBits)))) &&
          hn::AllTrue(df, hn::And(hn::Gt(divisor, hn::Zero(df)),
                                  hn::Lt(divisor, hn::Set(df, INFINITY))))) {
        encode(std::true_type());
      } else {
        encode(std::false_type());
      }
    }
  }
#endif
  return b;
}

int64_t QuantizeTensorScaledBlocksSimd(int recip, const float* HWY_RESTRICT x,
                                       int64_t blocks, float g,
                                       uint8_t* HWY_RESTRICT values,
                                       uint8_t* HWY_RESTRICT scales) {
  if (recip) {
    return QuantizeTensorScaledBlocksT<true>(x, blocks, g, values, scales);
  }
  return QuantizeTensorScaledBlocksT<false>(x, blocks, g, values, scales);
}

#if STRATA_QUANTIZE_512
// NOTE [ Half away from zero by one add ]
// For a float t with |t| <= 128, t rounded half away from zero (roundf) is
// the truncation of s = t + copysign(h, t), h = 1/2 - 2^-25, the sum
// rounded to nearest even. For t >= 0 (the negative case is its mirror):
//  - a tie k + 1/2 gives k + 1 - 2^-25, within 2^-25 of k + 1 and at least
//    as far from any other float (the grid below k + 1 is at most 2^-24
//    fine; at k = 0 the sum is the midpoint of 1 - 2^-24 and 1, and 1 is
//    even): s = k + 1;
//  - t below a tie, k + 1/2 - u with u at least t's ulp, gives
//    k + 1 - u - 2^-25, nearer to k + 1 - u (a float) than to k + 1:
//    s < k + 1;
//  - t above a tie, or below 1/2 (s <= 1 - 2^-24), truncates as it rounds.
// A program checked all 2,248,146,946 such floats against roundf, and
// GgmlCodesAreTheDefinitionAtEveryBoundary checks the ties and their
// neighbours at many scales. The truncating conversion of s is then the
// code: one add and one conversion, where the exact rounding took five
// operations and Highway's conversion four more to fix up lanes out of
// int32's range.
HWY_INLINE VI HalfAwayInRange(VF t) {
  const DF df;
  const VF sum = hn::Add(t, hn::CopySignToAbs(hn::Set(df, 0.49999997f), t));
  return VI{_mm512_cvttps_epi32(sum.raw)};
}

// The uint4 code min(15, trunc(t + 8.5)) of a t with t + 8.5 in [0, 2^31):
// the truncating conversion, without the clamp below and the NaN test.
HWY_INLINE VI Q4CodeInRange(VF t) {
  const DF df;
  const DI di;
  const VF sum = hn::Add(t, hn::Set(df, 8.5f));
  return hn::Min(VI{_mm512_cvttps_epi32(sum.raw)}, hn::Set(di, 15));
}
#endif

// q8_0 and q4_0 (ggml's reference rows) for blocks of 32: the codes (int8,
// or uint4 one per byte) and d per block.
void QuantizeGgmlSimd(int q4, const float* HWY_RESTRICT x, int64_t blocks,
                      uint8_t* HWY_RESTRICT codes, float* HWY_RESTRICT d_out) {
  const DW df;
  const DWI di;
  const hn::Rebind<int8_t, DW> d8;
  const hn::Rebind<uint8_t, DW> du8;
  const int64_t n = static_cast<int64_t>(hn::Lanes(df));
  const auto abs_mask = hn::Set(di, static_cast<int32_t>(qd::kAbsMask));
  const auto inf = hn::Set(di, static_cast<int32_t>(qd::kInfBits));
  constexpr int64_t kBlock = 32;
  // t rounded half away from zero (t - trunc(t) is exact).
  const auto half_away = [&](hn::Vec<DW> t) {
    const auto r = hn::Trunc(t);
    return hn::Add(
        r, hn::IfThenElseZero(hn::Ge(hn::Abs(hn::Sub(t, r)), hn::Set(df, 0.5f)),
                              hn::CopySign(hn::Set(df, 1.0f), t)));
  };
  // The int8 code of t = x / d: half away from zero, clamped to +-127, 0 for
  // NaN.
  const auto q8_lanes = [&](hn::Vec<DW> t) {
    auto c = hn::Min(hn::Set(df, 127.0f),
                     hn::Max(hn::Set(df, -127.0f), half_away(t)));
    return hn::ConvertTo(di, hn::IfThenElseZero(hn::Eq(t, t), c));
  };
  const auto q8_code = [&](hn::Vec<DW> t) {
    return hn::DemoteTo(d8, q8_lanes(t));
  };
  // The uint4 code of t = x / d: min(15, trunc(t + 8.5)), 8 for a NaN sum.
  const auto q4_lanes = [&](hn::Vec<DW> t) {
    const auto sum = hn::Add(t, hn::Set(df, 8.5f));
    const auto c = hn::Min(hn::Set(df, 15.0f), hn::Max(hn::Zero(df), sum));
    return hn::ConvertTo(
        di, hn::IfThenElse(hn::Eq(sum, sum), c, hn::Set(df, 8.0f)));
  };
  int64_t b = 0;
#if STRATA_QUANTIZE_512
  // Four blocks (eight 16-lane vectors) per group, their amax through one
  // reduction network (as in QuantizeBlocksT), d and 1 / d in one vector;
  // kU = 2 groups side by side, as there (each group is one chain of
  // latencies through two divisions).
  constexpr int kU = 2;
  if (n == 16) {
    for (; b + 4 * kU <= blocks; b += 4 * kU) {
      hn::Vec<DW> v[kU][8];
      VI w[kU];          // Group g of w[u]: block b + 4u + g's amax.
      bool has_nan[kU];  // Whether group u has a NaN (q4_0).
#pragma GCC unroll 8
      for (int u = 0; u < kU; ++u) {
        const float* p = x + (b + 4 * u) * kBlock;
        VI m[4];
        auto nan = hn::FirstN(di, 0);  // None.
#pragma GCC unroll 8
        for (int g = 0; g < 4; ++g) {
          v[u][2 * g] = hn::LoadU(df, p + 32 * g);
          v[u][2 * g + 1] = hn::LoadU(df, p + 32 * g + 16);
          VI lo = hn::And(hn::BitCast(di, v[u][2 * g]), abs_mask);
          VI hi = hn::And(hn::BitCast(di, v[u][2 * g + 1]), abs_mask);
          if (q4) {  // NaN never counts (ggml's comparison).
            const auto nan_lo = hn::Gt(lo, inf);
            const auto nan_hi = hn::Gt(hi, inf);
            nan = hn::Or(nan, hn::Or(nan_lo, nan_hi));
            lo = hn::IfThenZeroElse(nan_lo, lo);
            hi = hn::IfThenZeroElse(nan_hi, hi);
          }
          m[g] = hn::Max(lo, hi);
        }
        w[u] = GroupMaxima4(m);
        has_nan[u] = q4 && !hn::AllFalse(di, nan);
      }
      if (q4) {
#pragma GCC unroll 8
        for (int u = 0; u < kU; ++u) {
          // Where the four blocks' values are finite, a block whose d is 0
          // or a normal float has every t = x * (1/d) within 8 (1 + 2^-24)^2
          // of 0 (its largest |x| is -8 d), so t + 8.5 lies in (0, 17) and
          // its code is that sum's truncation, at most 15: no clamp below,
          // no NaN.
          const bool finite = !has_nan[u] && hn::AllTrue(di, hn::Lt(w[u], inf));
          VI c[8];  // The four blocks' codes, contiguous in the output.
#pragma GCC unroll 8
          for (int g = 0; g < 4; ++g) {
            const float* p = x + (b + 4 * u + g) * kBlock;
            // The first x of largest |x| (+0 for a block without one): the
            // first lane whose |x| bits are the amax.
            const VI target =
                hn::BitCast(di, BroadcastGroup(hn::BitCast(df, w[u]), g));
            const uint32_t amax = static_cast<uint32_t>(hn::GetLane(target));
            float max = 0.0f;
            if (amax != 0) {
              const uint32_t hits =
                  static_cast<uint32_t>(
                      hn::Eq(hn::And(hn::BitCast(di, v[u][2 * g]), abs_mask),
                             target)
                          .raw) |
                  static_cast<uint32_t>(
                      hn::Eq(
                          hn::And(hn::BitCast(di, v[u][2 * g + 1]), abs_mask),
                          target)
                          .raw)
                      << 16;
              max = p[__builtin_ctz(hits)];  // amax is some |x|: hits != 0.
            }
            const float d = max / -8.0f;
            d_out[b + 4 * u + g] = d;
            const auto vid = hn::Set(df, d != 0.0f ? 1.0f / d : 0.0f);
            const bool in_range =
                finite && (d == 0.0f || std::fabs(d) >= 0x1p-126f);
#pragma GCC unroll 8
            for (int h = 0; h < 2; ++h) {
              const VF t = hn::Mul(v[u][2 * g + h], vid);
              c[2 * g + h] = in_range ? Q4CodeInRange(t) : q4_lanes(t);
            }
          }
          uint8_t* out = codes + (b + 4 * u) * kBlock;
          StoreCodes4(c, out);
          StoreCodes4(c + 4, out + 64);
        }
        continue;
      }
      hn::Vec<DW> d[kU], id[kU];
#pragma GCC unroll 8
      for (int u = 0; u < kU; ++u) {
        d[u] = hn::Div(hn::BitCast(df, w[u]), hn::Set(df, 127.0f));
        id[u] = hn::IfThenElse(hn::Ne(d[u], hn::Zero(df)),
                               hn::Div(hn::Set(df, 1.0f), d[u]), hn::Zero(df));
      }
#pragma GCC unroll 8
      for (int u = 0; u < kU; ++u) {
        alignas(64) float ds[16];
        hn::Store(d[u], df, ds);
        // Where the four blocks' values are finite and each d is a normal
        // float, every t = x * (1/d) is a number within 127 (1 + 2^-24)^3
        // of 0, which rounds half away to at most 127: no clamp, no NaN,
        // and the rounding is one add and a truncating conversion
        // (NOTE [ Half away from zero by one add ]).
        const bool in_range =
            hn::AllTrue(di, hn::Lt(w[u], inf)) &&
            hn::AllTrue(df, hn::Ge(d[u], hn::Set(df, 0x1p-126f)));
        VI c[8];  // The four blocks' codes, contiguous in the output.
#pragma GCC unroll 8
        for (int g = 0; g < 4; ++g) {
          d_out[b + 4 * u + g] = ds[4 * g];
          const VF id_g = BroadcastGroup(id[u], g);
#pragma GCC unroll 8
          for (int h = 0; h < 2; ++h) {
            const VF t = hn::Mul(v[u][2 * g + h], id_g);
            c[2 * g + h] = in_range ? HalfAwayInRange(t) : q8_lanes(t);
          }
        }
        uint8_t* out = codes + (b + 4 * u) * kBlock;
        StoreCodes4</*kSigned=*/true>(c, out);
        StoreCodes4</*kSigned=*/true>(c + 4, out + 64);
      }
    }
  }
#endif
  for (; b < blocks; ++b) {
    const float* p = x + b * kBlock;
    uint8_t* out = codes + b * kBlock;
    // amax by bits; for q4_0 NaN never counts (ggml's comparison).
    auto m = hn::Zero(di);
    int64_t i = 0;
    for (; i + n <= kBlock; i += n) {
      auto a = hn::And(hn::BitCast(di, hn::LoadU(df, p + i)), abs_mask);
      if (q4) a = hn::IfThenZeroElse(hn::Gt(a, inf), a);
      m = hn::Max(m, a);
    }
    uint32_t amax = static_cast<uint32_t>(hn::GetLane(hn::MaxOfLanes(di, m)));
    for (; i < kBlock; ++i) {
      const uint32_t a = qd::Bits(p[i]) & qd::kAbsMask;
      amax = std::max(amax, q4 && a > qd::kInfBits ? 0u : a);
    }
    float d;
    if (q4) {
      float max = 0.0f;  // The first x of largest |x|; +0 for a zero block.
      if (amax != 0) {
        const auto target = hn::Set(di, static_cast<int32_t>(amax));
        int64_t j = 0;
        for (; j + n <= kBlock; j += n) {
          const auto hit = hn::Eq(
              hn::And(hn::BitCast(di, hn::LoadU(df, p + j)), abs_mask), target);
          const intptr_t first = hn::FindFirstTrue(di, hit);
          if (first >= 0) {
            max = p[j + first];
            break;
          }
        }
        for (; j < kBlock && max == 0.0f; ++j) {
          if ((qd::Bits(p[j]) & qd::kAbsMask) == amax) max = p[j];
        }
      }
      d = max / -8.0f;
    } else {
      d = qd::FromBits(amax) / 127.0f;
    }
    d_out[b] = d;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const auto vid = hn::Set(df, id);
    for (i = 0; i + n <= kBlock; i += n) {
      const auto t = hn::Mul(hn::LoadU(df, p + i), vid);
      if (q4) {
        hn::StoreU(hn::DemoteTo(du8, q4_lanes(t)), du8, out + i);
      } else {
        hn::StoreU(q8_code(t), d8, reinterpret_cast<int8_t*>(out + i));
      }
    }
    for (; i < kBlock; ++i) {
      const float t = p[i] * id;
      if (q4) {
        const float u = t + 8.5f;
        out[i] = u == u
                     ? static_cast<uint8_t>(std::min(15.0f, std::max(0.0f, u)))
                     : 8;
      } else {
        const float r = std::trunc(t);
        const float c =
            std::min(127.0f, std::max(-127.0f, r + (std::fabs(t - r) >= 0.5f
                                                        ? std::copysign(1.0f, t)
                                                        : 0.0f)));
        out[i] = static_cast<uint8_t>(t == t ? static_cast<int8_t>(c) : 0);
      }
    }
  }
}

// float16 bits of n floats, FloatToHalf's: to nearest even, overflow to
// infinity, NaN quiet with its sign. F16C (on every x86 target from AVX2 up)
// rounds the same way, but keeps a NaN's top payload bits: eight values with
// a NaN go through FloatToHalf.
void FloatsToHalvesSimd(const float* HWY_RESTRICT x, int64_t n,
                        uint16_t* HWY_RESTRICT out) {
  int64_t i = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      for (int k = 0; k < 8; ++k) out[i + k] = FloatToHalf(x[i + k]);
      continue;
    }
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(out + i),
        _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#endif
  for (; i < n; ++i) out[i] = FloatToHalf(x[i]);
}

// The Highway target this copy of the kernels was compiled for.
const char* KernelTargetSimd() { return hwy::TargetName(HWY_TARGET); }

void QuantizeBlocksSimd(int format, const float* src, int64_t blocks,
                        uint8_t* values, uint8_t* scales) {
  switch (format) {
    case 0:
      return QuantizeBlocksT<0>(src, blocks, values, scales);
    case 1:
      return QuantizeBlocksT<1>(src, blocks, values, scales);
    default:
      return QuantizeBlocksT<2>(src, blocks, values, scales);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace ops_internal
}  // namespace strata
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace strata {
namespace ops_internal {

HWY_EXPORT(QuantizeBlocksSimd);
HWY_EXPORT(KernelTargetSimd);

const char* QuantizeKernelTarget() {
  return HWY_DYNAMIC_DISPATCH(KernelTargetSimd)();
}
HWY_EXPORT(EncodeBlocksSimd);
HWY_EXPORT(BlockAbsMaxSimd);
HWY_EXPORT(PackNibblePairsSimd);

void PackNibblePairs(const uint8_t* codes, int64_t n, uint8_t* out) {
  HWY_DYNAMIC_DISPATCH(PackNibblePairsSimd)(codes, n, out);
}
HWY_EXPORT(BlockScalesSimd);

void BlockScales(bool recip, const uint32_t* amax, int64_t n, float g,
                 uint8_t* codes, float* divisors) {
  HWY_DYNAMIC_DISPATCH(BlockScalesSimd)(recip, amax, n, g, codes, divisors);
}
HWY_EXPORT(QuantizeGgmlSimd);
HWY_EXPORT(FloatsToHalvesSimd);

void FloatsToHalves(const float* x, int64_t n, uint16_t* out) {
  HWY_DYNAMIC_DISPATCH(FloatsToHalvesSimd)(x, n, out);
}
HWY_EXPORT(QuantizeTensorScaledBlocksSimd);

void QuantizeTensorScaledBlocks(bool recip, const float* x, int64_t blocks,
                                float g, uint8_t* values, uint8_t* scales) {
  const int64_t done = HWY_DYNAMIC_DISPATCH(QuantizeTensorScaledBlocksSimd)(
      recip, x, blocks, g, values, scales);
  // The rest, and every block where the target has no fused loop, through
  // the four kernels a chunk at a time. Here, outside the SIMD code: the
  // buffers are addressable arrays, which give a function an
  // AddressSanitizer frame, and GCC aligns such a frame to 32 bytes only,
  // where the SIMD code keeps 64-byte vectors.
  constexpr int64_t kBlock = 16, kChunk = 64;  // 4 KiB of floats, in cache.
  uint32_t amax[kChunk];
  float divisors[kChunk];
  uint8_t codes[kChunk * kBlock];
  for (int64_t b = done; b < blocks; b += kChunk) {
    const int64_t n = std::min(kChunk, blocks - b);
    std::fill(amax, amax + n, 0u);
    BlockAbsMax(x + b * kBlock, n, kBlock, amax);
    BlockScales(recip, amax, n, g, scales + b, divisors);
    EncodeBlocks(true, x + b * kBlock, n, kBlock, recip ? g : 1.0f, divisors,
                 amax, codes);
    PackNibblePairs(codes, n * kBlock, values + b * (kBlock / 2));
  }
}

void EncodeBlocks(bool fp4, const float* x, int64_t blocks, int64_t block,
                  float pre, const float* divisors, const uint32_t* amax,
                  uint8_t* codes) {
  HWY_DYNAMIC_DISPATCH(EncodeBlocksSimd)
  (fp4, x, blocks, block, pre, divisors, amax, codes);
}

void BlockAbsMax(const float* x, int64_t blocks, int64_t block,
                 uint32_t* amax) {
  HWY_DYNAMIC_DISPATCH(BlockAbsMaxSimd)(x, blocks, block, amax);
}

void QuantizeGgmlBlocks(bool q4, const float* x, int64_t blocks, uint8_t* codes,
                        float* d) {
  HWY_DYNAMIC_DISPATCH(QuantizeGgmlSimd)(q4, x, blocks, codes, d);
}

void QuantizeBlocks(QuantFormat f, const float* src, int64_t blocks,
                    uint8_t* values, uint8_t* scales) {
  HWY_DYNAMIC_DISPATCH(QuantizeBlocksSimd)
  (static_cast<int>(f), src, blocks, values, scales);
}

uint8_t QuantizeBlockScalar(QuantFormat f, const float* v, uint8_t* codes) {
  namespace qd = quantize_detail;
  const int block = static_cast<int>(QuantBlockSize(f));
  const bool fp4 = f != QuantFormat::kMXFP8E4M3;
  uint32_t amax = 0;
  for (int t = 0; t < block; ++t) {
    amax = std::max(amax, qd::Bits(v[t]) & qd::kAbsMask);
  }
  if (amax >= qd::kInfBits) {
    std::memset(codes, fp4 ? 0 : 0x7F, block);
    return f == QuantFormat::kNVFP4 ? 0x7F : 0xFF;
  }
  uint32_t scale;
  float mul = 1, divisor = 1;
  if (f == QuantFormat::kNVFP4) {
    scale = qd::E4M3Magnitude(qd::FromBits(amax) / 6.0f);
    divisor = scale == 0 ? std::numeric_limits<float>::infinity()
                         : qd::DecodeE4M3(scale);
  } else {
    const int e = static_cast<int>(amax >> 23) - (fp4 ? 2 : 8);
    scale = static_cast<uint32_t>(e > 0 ? e : 0);
    mul = qd::FromBits((254u - scale) << 23);  // 2^-X, exact.
  }
  for (int t = 0; t < block; ++t) {
    const uint32_t bits = qd::Bits(v[t]);
    const float a = qd::FromBits(bits & qd::kAbsMask);
    const float y = f == QuantFormat::kNVFP4 ? a / divisor : a * mul;
    codes[t] = static_cast<uint8_t>(
        fp4 ? qd::E2M1Magnitude(y) | ((bits >> 28) & 0x8)
            : qd::E4M3Magnitude(y) | ((bits >> 24) & 0x80));
  }
  return static_cast<uint8_t>(scale);
}

void QuantizeBlocksScalar(QuantFormat f, const float* src, int64_t blocks,
                          uint8_t* values, uint8_t* scales) {
  const int64_t block = QuantBlockSize(f);
  const bool fp4 = f != QuantFormat::kMXFP8E4M3;
  uint8_t codes[32];
  for (int64_t b = 0; b < blocks; ++b) {
    scales[b] = QuantizeBlockScalar(f, src + b * block, codes);
    if (fp4) {
      uint8_t* out = values + b * block / 2;
      for (int64_t k = 0; k < block / 2; ++k) {
        out[k] = static_cast<uint8_t>(codes[2 * k] | (codes[2 * k + 1] << 4));
      }
    } else {
      std::memcpy(values + b * block, codes, block);
    }
  }
}

}  // namespace ops_internal
}  // namespace strata
#endif  // HWY_ONCE
