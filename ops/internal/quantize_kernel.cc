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
#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/internal/narrow_codes.h"
#include "ops/internal/quantize_kernel.h"

#endif  // STRATA_OPS_INTERNAL_QUANTIZE_KERNEL_SHARED_

HWY_BEFORE_NAMESPACE();
namespace strata {
namespace ops_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace qd = quantize_detail;

// At most 8 float lanes: every block (16 or 32 values) is then a whole number
// of at least two vectors.
using DF = hn::CappedTag<float, 8>;
using DI = hn::RebindToSigned<DF>;
using D8 = hn::Rebind<uint8_t, DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;

// Element codes (magnitude | sign) of y >= 0 (finite) with the sign of `bits`.
template <bool kFP4>
HWY_INLINE VI EncodeElements(VF y, VI bits) {
  const DF df;
  const DI di;
  const VI a = hn::BitCast(di, y);
  VI sub, normal, code;
  if (kFP4) {
    sub = hn::Sub(hn::BitCast(di, hn::Add(y, hn::Set(df, 4194304.0f))),
                  hn::Set(di, static_cast<int32_t>(qd::kTwo22Bits)));
    const VI odd = hn::And(hn::ShiftRight<22>(a), hn::Set(di, 1));
    normal = hn::Sub(
        hn::ShiftRight<22>(hn::Add(a, hn::Add(hn::Set(di, 0x1FFFFF), odd))),
        hn::Set(di, 126 << 1));
    code = hn::IfThenElse(hn::RebindMask(di, hn::Lt(y, hn::Set(df, 1.0f))), sub,
                          normal);
    code = hn::Min(code, hn::Set(di, 0x7));
    const VI sign = hn::ShiftRight<28>(
        hn::And(bits, hn::Set(di, static_cast<int32_t>(0x80000000u))));
    return hn::Or(code, hn::And(sign, hn::Set(di, 0x8)));
  }
  sub = hn::Sub(hn::BitCast(di, hn::Add(y, hn::Set(df, 16384.0f))),
                hn::Set(di, static_cast<int32_t>(qd::kTwo14Bits)));
  const VI odd = hn::And(hn::ShiftRight<20>(a), hn::Set(di, 1));
  normal = hn::Sub(
      hn::ShiftRight<20>(hn::Add(a, hn::Add(hn::Set(di, 0x7FFFF), odd))),
      hn::Set(di, 120 << 3));
  code = hn::IfThenElse(hn::RebindMask(di, hn::Lt(y, hn::Set(df, 0x1p-6f))),
                        sub, normal);
  code = hn::Min(code, hn::Set(di, 0x7E));
  const VI sign = hn::ShiftRight<24>(
      hn::And(bits, hn::Set(di, static_cast<int32_t>(0x80000000u))));
  return hn::Or(code, hn::And(sign, hn::Set(di, 0x80)));
}

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
  // arithmetic as the per-block loop below, which handles the rest).
  constexpr int kG = static_cast<int>(kN) / 4;
  static_assert(kG == 1 || kG == 2, "4 or 8 float lanes");
  for (; blk + kG <= blocks; blk += kG) {
    VI bits[kG][kV];
    VI m[kG];
    for (int g = 0; g < kG; ++g) {
      const float* p = src + (blk + g) * kBlock;
      m[g] = hn::Zero(di);
      for (int j = 0; j < kV; ++j) {
        bits[g][j] = hn::BitCast(di, hn::LoadU(df, p + j * kN));
        m[g] = hn::Max(m[g], hn::And(bits[g][j], abs_mask));
      }
    }
    VI w = m[0];
    if (kG == 2) {
      w = hn::Max(hn::ConcatLowerLower(di, m[kG - 1], m[0]),
                  hn::ConcatUpperUpper(di, m[kG - 1], m[0]));
    }
    w = hn::Max(w, hn::Shuffle1032(w));
    w = hn::Max(w, hn::Shuffle2301(w));  // Group g: block g's amax bits.
    const auto nonfinite =
        hn::Gt(w, hn::Set(di, static_cast<int32_t>(qd::kInfBits - 1)));
    VI code;
    VF s;
    if (kNV) {
      // amax / 6 to nearest even e4m3 (saturating), and its value; a zero
      // scale divides by +inf (every element a zero).
      code = EncodeElements<false>(
          hn::Div(hn::BitCast(df, w), hn::Set(df, 6.0f)), hn::Zero(di));
      const VI e = hn::ShiftRight<3>(code);
      const VI mant = hn::And(code, hn::Set(di, 7));
      const VF normal = hn::BitCast(
          df, hn::Or(hn::ShiftLeft<23>(hn::Add(e, hn::Set(di, 120))),
                     hn::ShiftLeft<20>(mant)));
      const VF sub = hn::Mul(hn::ConvertTo(df, mant), hn::Set(df, 0x1p-9f));
      s = hn::IfThenElse(hn::RebindMask(df, hn::Eq(e, hn::Zero(di))), sub,
                         normal);
      s = hn::IfThenElse(hn::RebindMask(df, hn::Eq(code, hn::Zero(di))),
                         hn::Set(df, std::numeric_limits<float>::infinity()),
                         s);
      code = hn::IfThenElse(nonfinite, hn::Set(di, 0x7F), code);
    } else {
      // max(E(amax) - emax, 0), and 2^-X = bits (254 - code) << 23.
      code = hn::Max(hn::Sub(hn::ShiftRight<23>(w), hn::Set(di, kEmax)),
                     hn::Zero(di));
      s = hn::BitCast(df, hn::ShiftLeft<23>(hn::Sub(hn::Set(di, 254), code)));
      code = hn::IfThenElse(nonfinite, hn::Set(di, 0xFF), code);
    }
    for (int g = 0; g < kG; ++g) {
      VF sg = s;
      if (kG == 2) {
        sg = g == 0 ? hn::ConcatLowerLower(df, s, s)
                    : hn::ConcatUpperUpper(df, s, s);
      }
      uint8_t* out = values + (blk + g) * kValueBytes;
      VI codes[kV];
      for (int j = 0; j < kV; ++j) {
        const VF a = hn::BitCast(df, hn::And(bits[g][j], abs_mask));
        const VF y = kNV ? hn::Div(a, sg) : hn::Mul(a, sg);
        codes[j] = EncodeElements<kFP4>(y, bits[g][j]);
      }
      if (!kFP4) {
        for (int j = 0; j < kV; ++j) {
          hn::StoreU(hn::DemoteTo(d8, codes[j]), d8, out + j * kN);
        }
      } else {
        for (int j = 0; j < kV; j += 2) {
          const VI even = hn::ConcatEven(di, codes[j + 1], codes[j]);
          const VI odd = hn::ConcatOdd(di, codes[j + 1], codes[j]);
          hn::StoreU(hn::DemoteTo(d8, hn::Or(even, hn::ShiftLeft<4>(odd))), d8,
                     out + j * kN / 2);
        }
      }
      const uint32_t scale_code =
          static_cast<uint32_t>(hn::ExtractLane(code, 4 * g));
      scales[blk + g] = static_cast<uint8_t>(scale_code);
      if (scale_code == (kNV ? 0x7Fu : 0xFFu)) {
        std::memset(out, kFP4 ? 0 : 0x7F, kValueBytes);
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
      for (int j = 0; j < kV; j += 2) {
        const VI even = hn::ConcatEven(di, codes[j + 1], codes[j]);
        const VI odd = hn::ConcatOdd(di, codes[j + 1], codes[j]);
        hn::StoreU(hn::DemoteTo(d8, hn::Or(even, hn::ShiftLeft<4>(odd))), d8,
                   out + j * kN / 2);
      }
#endif
    }
  }
}

// codes[i] = the e2m1 (kFP4) or e4m3 code of x[i] * pre / divisor (x[i] /
// divisor where pre is 1, which is exact), one byte each.
template <bool kFP4>
HWY_INLINE void EncodeDividedT(const float* HWY_RESTRICT x, int64_t n,
                               float pre, float divisor,
                               uint8_t* HWY_RESTRICT codes) {
  const DF df;
  const DI di;
  const D8 d8;
  constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(df));
  const bool multiply = pre != 1.0f;
  const VF vp = hn::Set(df, pre);
  const VF vd = hn::Set(df, divisor);
  const VI abs_mask = hn::Set(di, static_cast<int32_t>(qd::kAbsMask));
  const VI inf = hn::Set(di, static_cast<int32_t>(qd::kInfBits));
  int64_t i = 0;
  for (; i + kN <= n; i += kN) {
    VF v = hn::LoadU(df, x + i);
    if (multiply) v = hn::Mul(v, vp);
    const VI bits = hn::BitCast(di, hn::Div(v, vd));
    const VI a = hn::And(bits, abs_mask);
    VI code = EncodeElements<kFP4>(hn::BitCast(df, a), bits);
    // NaN (a above infinity's bits): 0 for e2m1, 0x7F with its sign for
    // e4m3. Infinities saturate in EncodeElements.
    const VI nan_code =
        kFP4 ? hn::Zero(di)
             : hn::Or(hn::Set(di, 0x7F),
                      hn::And(hn::ShiftRight<24>(bits), hn::Set(di, 0x80)));
    code = hn::IfThenElse(hn::Gt(a, inf), nan_code, code);
    hn::StoreU(hn::DemoteTo(d8, code), d8, codes + i);
  }
  for (; i < n; ++i) {
    const float y = multiply ? x[i] * pre / divisor : x[i] / divisor;
    codes[i] = kFP4 ? qd::E2M1Code(y) : qd::E4M3Code(y);
  }
}

void EncodeDividedSimd(int fp4, const float* x, int64_t n, float pre,
                       float divisor, uint8_t* codes) {
  if (fp4) return EncodeDividedT<true>(x, n, pre, divisor, codes);
  return EncodeDividedT<false>(x, n, pre, divisor, codes);
}

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
HWY_EXPORT(EncodeDividedSimd);

void EncodeDivided(bool fp4, const float* x, int64_t n, float pre,
                   float divisor, uint8_t* codes) {
  HWY_DYNAMIC_DISPATCH(EncodeDividedSimd)(fp4, x, n, pre, divisor, codes);
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
