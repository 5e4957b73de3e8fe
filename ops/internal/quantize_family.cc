#include "ops/internal/quantize_family.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dtype/float_formats.h"
#include "ops/internal/narrow_codes.h"

namespace strata {
namespace ops_internal {
namespace {

namespace qd = quantize_detail;

// The value of any e4m3 code (NaN for 0x7F and 0xFF).
float E4M3Value(uint8_t code) {
  const uint32_t magnitude = code & 0x7Fu;
  if (magnitude == 0x7F) return NAN;
  const float v = qd::DecodeE4M3(magnitude);
  return code & 0x80u ? -v : v;
}

// The largest |x| of n values by bit pattern (NaN above infinity).
inline uint32_t AbsMaxBits(const float* x, int64_t n) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, 4);
    m = std::max(m, u & qd::kAbsMask);
  }
  return m;
}

// The grid of blocks: per mode the block extent (the mode's extent for a
// whole one) and the number of blocks, and row-major strides over it.
struct Grid {
  std::vector<int64_t> block, count, stride;
  int64_t size = 1;
};

Grid MakeGrid(absl::Span<const int64_t> extents,
              absl::Span<const int64_t> block_of_mode) {
  const size_t rank = extents.size();
  Grid g;
  g.block.resize(rank);
  g.count.resize(rank);
  g.stride.resize(rank);
  for (size_t m = 0; m < rank; ++m) {
    const int64_t b = block_of_mode[m];
    g.block[m] = b == 0 ? extents[m] : std::min(b, extents[m]);
    g.count[m] = (extents[m] + g.block[m] - 1) / g.block[m];
  }
  for (size_t m = rank; m-- > 0;) {
    g.stride[m] = g.size;
    g.size *= g.count[m];
  }
  return g;
}

// Calls f(row, base) for every row (all modes but the last), base the grid
// index of the row's first block.
template <typename F>
void ForEachRow(absl::Span<const int64_t> extents, const Grid& g, F&& f) {
  const size_t rank = extents.size();
  int64_t rows = 1;
  for (size_t m = 0; m + 1 < rank; ++m) rows *= extents[m];
  std::vector<int64_t> coord(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    for (size_t m = 0; m + 1 < rank; ++m) {
      base += coord[m] / g.block[m] * g.stride[m];
    }
    f(r, base);
    for (size_t m = rank - 1; m-- > 0;) {
      if (++coord[m] < extents[m]) break;
      coord[m] = 0;
    }
  }
}

void PutNibble(uint8_t* values, int64_t i, uint8_t code) {
  uint8_t& byte = values[i >> 1];
  byte = (i & 1) ? static_cast<uint8_t>((byte & 0x0F) | (code << 4))
                 : static_cast<uint8_t>((byte & 0xF0) | code);
}

void QuantizeGgml(FamilyRecipe recipe, const float* x, int64_t total,
                  uint8_t* values, uint8_t* scales) {
  constexpr int kBlock = 32;
  for (int64_t blk = 0; blk * kBlock < total; ++blk) {
    const float* v = x + blk * kBlock;
    float d;
    if (recipe == FamilyRecipe::kQ8_0) {
      uint32_t bits = AbsMaxBits(v, kBlock);
      float amax;
      std::memcpy(&amax, &bits, 4);
      d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      int8_t* q = reinterpret_cast<int8_t*>(values) + blk * kBlock;
      for (int j = 0; j < kBlock; ++j) {
        // |t| <= 127 but where 1/d overflowed (a subnormal d); clamped there.
        const float t = std::roundf(v[j] * id);
        q[j] = std::isnan(t)
                   ? 0
                   : static_cast<int8_t>(std::clamp(t, -127.0f, 127.0f));
      }
    } else {
      float amax = 0.0f, max = 0.0f;
      for (int j = 0; j < kBlock; ++j) {
        if (amax < std::fabs(v[j])) {
          amax = std::fabs(v[j]);
          max = v[j];
        }
      }
      d = max / -8.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      for (int j = 0; j < kBlock; ++j) {
        // t lies in [0, 16.5] but where 1/d overflowed; clamped there.
        const float t = v[j] * id + 8.5f;
        const uint8_t q =
            std::isnan(t) ? 8
                          : static_cast<uint8_t>(std::clamp(t, 0.0f, 15.0f));
        PutNibble(values, blk * kBlock + j, q);
      }
    }
    const uint16_t h = FloatToHalf(d);
    std::memcpy(scales + 2 * blk, &h, 2);
  }
}

}  // namespace

float QuantizeFamily(FamilyRecipe recipe, const float* x,
                     absl::Span<const int64_t> extents,
                     absl::Span<const int64_t> block_of_mode, uint8_t* values,
                     uint8_t* scales) {
  int64_t total = 1;
  for (int64_t e : extents) total *= e;
  if (recipe == FamilyRecipe::kQ8_0 || recipe == FamilyRecipe::kQ4_0) {
    // Blocks of 32 along the last mode: consecutive runs of the array.
    QuantizeGgml(recipe, x, total, values, scales);
    return 0;
  }
  const size_t rank = extents.size();
  const int64_t k = rank == 0 ? 1 : extents[rank - 1];
  const Grid g = MakeGrid(extents, block_of_mode);
  const int64_t kb = rank == 0 ? 1 : g.block[rank - 1];
  const int64_t kc = rank == 0 ? 1 : g.count[rank - 1];
  // amax of every block, by bit pattern.
  std::vector<uint32_t> amax(g.size, 0);
  ForEachRow(extents, g, [&](int64_t r, int64_t base) {
    const float* row = x + r * k;
    for (int64_t c = 0; c < kc; ++c) {
      const int64_t n = std::min(kb, k - c * kb);
      uint32_t& a = amax[base + c];
      a = std::max(a, AbsMaxBits(row + c * kb, n));
    }
  });
  const bool fp4 = recipe != FamilyRecipe::kFP8;
  // The divisor of each block: x / divisor[b] is the element before rounding.
  std::vector<float> divisor(g.size);
  std::vector<uint8_t> zero_block(g.size, 0);
  float tensor_scale = 0;
  if (recipe == FamilyRecipe::kFP8) {
    for (int64_t b = 0; b < g.size; ++b) {
      const float a = qd::FromBits(amax[b]);
      const float s = amax[b] == 0 ? 1.0f : a / 448.0f;
      divisor[b] = s;
      std::memcpy(scales + 4 * b, &s, 4);
    }
  } else {
    const uint32_t tensor_bits =
        amax.empty() ? 0 : *std::max_element(amax.begin(), amax.end());
    const float at = qd::FromBits(tensor_bits);
    const bool recip = recipe == FamilyRecipe::kNVFP4TSRecip;
    tensor_scale =
        tensor_bits == 0 ? 1.0f : (recip ? 2688.0f / at : at / 2688.0f);
    const float gs = tensor_scale;
    for (int64_t b = 0; b < g.size; ++b) {
      const float a = qd::FromBits(amax[b]);
      const uint8_t code =
          qd::E4M3Code(recip ? a * gs / 6.0f : a / (6.0f * gs));
      scales[b] = code;
      const float sb = E4M3Value(code);
      zero_block[b] = (code & 0x7Fu) == 0;
      // recip: x * g' / s_b; else x / (s_b * g). The element loop divides
      // by divisor after multiplying by `pre`.
      divisor[b] = recip ? sb : sb * gs;
    }
  }
  const bool multiply_first = recipe == FamilyRecipe::kNVFP4TSRecip;
  const float pre = tensor_scale;
  std::vector<uint8_t> codes(fp4 ? k : 0);
  ForEachRow(extents, g, [&](int64_t r, int64_t base) {
    const float* row = x + r * k;
    uint8_t* out = fp4 ? codes.data() : values + r * k;
    for (int64_t c = 0; c < kc; ++c) {
      const int64_t begin = c * kb, end = std::min(k, begin + kb);
      const float s = divisor[base + c];
      if (!fp4) {
        for (int64_t i = begin; i < end; ++i) out[i] = qd::E4M3Code(row[i] / s);
      } else if (zero_block[base + c]) {
        for (int64_t i = begin; i < end; ++i) {
          out[i] = static_cast<uint8_t>((qd::Bits(row[i]) >> 28) & 0x8u);
        }
      } else if (multiply_first) {
        for (int64_t i = begin; i < end; ++i) {
          out[i] = qd::E2M1Code(row[i] * pre / s);
        }
      } else {
        for (int64_t i = begin; i < end; ++i) out[i] = qd::E2M1Code(row[i] / s);
      }
    }
    if (fp4) {
      for (int64_t i = 0; i < k; ++i) PutNibble(values, r * k + i, codes[i]);
    }
  });
  return tensor_scale;
}

}  // namespace ops_internal
}  // namespace strata
