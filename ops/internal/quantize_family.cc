#include "ops/internal/quantize_family.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dtype/block_scale_rule.h"
#include "ops/internal/narrow_codes.h"
#include "ops/internal/quantize_kernel.h"

namespace strata {
namespace ops_internal {
namespace {

namespace qd = quantize_detail;

// Two 4-bit codes per byte, low nibble first; an odd last code in a low
// nibble of its own.
void PackNibbles(const uint8_t* codes, int64_t n, int64_t first,
                 uint8_t* values) {
  int64_t i = 0;
  if (first & 1) {  // Starts in a high nibble.
    values[first >> 1] =
        static_cast<uint8_t>((values[first >> 1] & 0x0F) | (codes[0] << 4));
    i = 1;
  }
  uint8_t* out = values + ((first + i) >> 1);
  const int64_t pairs = (n - i) / 2;
  PackNibblePairs(codes + i, 2 * pairs, out);
  if ((n - i) & 1) {
    out[pairs] = static_cast<uint8_t>((out[pairs] & 0xF0) | codes[n - 1]);
  }
}

// q8_0 and q4_0: blocks of 32 consecutive values, a chunk of blocks at a
// time (the q4_0 codes pass through a small buffer to be packed).
void QuantizeGgml(FamilyRecipe recipe, const float* x, int64_t total,
                  uint8_t* values, uint8_t* scales) {
  constexpr int64_t kBlock = 32, kChunk = 256;
  const bool q4 = recipe == FamilyRecipe::kQ4_0;
  std::vector<uint8_t> codes(q4 ? kChunk * kBlock : 0);
  float d[kChunk];
  uint16_t d_half[kChunk];
  const int64_t blocks = total / kBlock;
  for (int64_t first = 0; first < blocks; first += kChunk) {
    const int64_t n = std::min(kChunk, blocks - first);
    uint8_t* out = q4 ? codes.data() : values + first * kBlock;
    QuantizeGgmlBlocks(q4, x + first * kBlock, n, out, d);
    if (q4) PackNibbles(out, n * kBlock, first * kBlock, values);
    FloatsToHalves(d, n, d_half);
    std::memcpy(scales + 2 * first, d_half, 2 * n);
  }
}

}  // namespace

float QuantizeFamily(FamilyRecipe recipe, const float* x,
                     absl::Span<const int64_t> extents,
                     absl::Span<const int64_t> block_of_mode, uint8_t* values,
                     uint8_t* scales, int64_t whole_amax_bits) {
  int64_t total = 1;
  for (int64_t e : extents) total *= e;
  if (recipe == FamilyRecipe::kQ8_0 || recipe == FamilyRecipe::kQ4_0) {
    // Blocks of 32 along the last mode: consecutive runs of the array.
    QuantizeGgml(recipe, x, total, values, scales);
    return 0;
  }
  const int rank = static_cast<int>(extents.size());
  const int64_t k = rank == 0 ? 1 : extents[rank - 1];
  const int64_t rows = total / k;
  const BlockGrid g = MakeBlockGrid(extents, block_of_mode);
  const int64_t kb = rank == 0 ? 1 : g.block[rank - 1];
  const int64_t kc = rank == 0 ? 1 : g.count[rank - 1];
  const bool fp4 =
      recipe == FamilyRecipe::kNVFP4TS || recipe == FamilyRecipe::kNVFP4TSRecip;
  const bool recip = recipe == FamilyRecipe::kNVFP4TSRecip;

  // nvfp4_ts*: the tensor scale first, from every value.
  float tensor_scale = 0;
  if (fp4) {
    uint32_t bits = 0;
    if (whole_amax_bits >= 0) {
      bits = static_cast<uint32_t>(whole_amax_bits);
    } else {
      BlockAbsMax(x, 1, total, &bits);  // One block of every value, in SIMD.
    }
    const float at = qd::FromBits(bits);
    tensor_scale = bits == 0 ? 1.0f : (recip ? 2688.0f / at : at / 2688.0f);
  }
  const float gs = tensor_scale;

  // nvfp4_ts* in blocks of 16 along the last mode alone, which they tile:
  // the grid is row-major, one block after another, as the values are, so
  // the blocks go through the fused kernel in one pass.
  bool consecutive = fp4 && rank >= 1 && kb == 16 && k % 16 == 0;
  for (int m = 0; consecutive && m + 1 < rank; ++m) {
    consecutive = g.block[m] == 1;
  }
  if (consecutive) {
    QuantizeTensorScaledBlocks(recip, x, total / 16, gs, values, scales);
    return tensor_scale;
  }

  // Rows go in bands whose blocks no other band touches: a band is the rows
  // of one block of mode rank-2 where every earlier mode has blocks of 1, so
  // each band is read once from memory and again from cache. Otherwise (a
  // whole or blocked earlier mode) the band is every row.
  bool banded = rank >= 2;
  for (int m = 0; m + 2 < rank; ++m) banded = banded && g.block[m] == 1;
  const int64_t band_rows = banded ? g.block[rank - 2] : rows;
  const int64_t mode_rows = rank >= 2 ? extents[rank - 2] : 1;

  // The amax and divisor of the blocks in flight: one band's (kc blocks, a
  // few KiB that stay in cache) or, unbanded, the whole grid's.
  const int64_t in_flight = banded ? kc : g.size;
  std::vector<uint32_t> amax_buffer(in_flight);
  std::vector<float> divisor_buffer(in_flight);
  std::vector<uint8_t> codes(fp4 ? k : 0);
  // The grid index of row r's first block.
  const auto row_base = [&](int64_t r) {
    int64_t base = 0, rest = r;
    for (int m = rank - 2; m >= 0; --m) {
      const int64_t c = rest % extents[m];
      rest /= extents[m];
      base += c / g.block[m] * g.stride[m];
    }
    return base;
  };
  int64_t r = 0;
  while (r < rows) {
    // The band: up to the next block boundary of mode rank-2.
    int64_t end = rows;
    if (banded) {
      const int64_t in_mode = r % mode_rows;
      end = r + std::min(band_rows - in_mode % band_rows, mode_rows - in_mode);
    }
    const int64_t first_block = banded ? row_base(r) : 0;
    const int64_t last_block = banded ? first_block + kc : g.size;
    // Block b of the grid is entry b - origin of the buffers.
    const int64_t origin = first_block;
    std::fill(amax_buffer.begin(), amax_buffer.end(), 0u);
    for (int64_t i = r; i < end; ++i) {
      const float* row = x + i * k;
      const int64_t base = banded ? first_block : row_base(i);
      // The whole blocks, then a ragged last one.
      const int64_t whole = k / kb;
      BlockAbsMax(row, whole, kb, &amax_buffer[base - origin]);
      if (whole < kc)
        BlockAbsMax(row + whole * kb, 1, k - whole * kb,
                    &amax_buffer[base + whole - origin]);
    }
    if (fp4) {
      BlockScales(recip, &amax_buffer[0], last_block - first_block, gs,
                  scales + first_block, &divisor_buffer[0]);
    } else if (recipe == FamilyRecipe::kFP8UE8M0) {
      if (whole_amax_bits >= 0 && g.size == 1) {
        amax_buffer[0] = static_cast<uint32_t>(whole_amax_bits);
      }
      for (int64_t b = first_block; b < last_block; ++b) {
        // NaN compares false: it stays NaN, and its exponent clamps to 254.
        float a = qd::FromBits(amax_buffer[b - origin]);
        if (a < 1e-4f) a = 1e-4f;
        const uint32_t sf = qd::Bits(a / 448.0f);
        int64_t exponent = (sf >> 23) & 0xFF;
        if ((sf & 0x7FFFFF) != 0) ++exponent;
        exponent = std::min<int64_t>(254, std::max<int64_t>(1, exponent));
        divisor_buffer[b - origin] =
            qd::FromBits(static_cast<uint32_t>(exponent) << 23);
        scales[b] = static_cast<uint8_t>(exponent);
      }
    } else {
      if (whole_amax_bits >= 0 && g.size == 1) {
        amax_buffer[0] = static_cast<uint32_t>(whole_amax_bits);
      }
      for (int64_t b = first_block; b < last_block; ++b) {
        const float s = amax_buffer[b - origin] == 0
                            ? 1.0f
                            : qd::FromBits(amax_buffer[b - origin]) / 448.0f;
        divisor_buffer[b - origin] = s;
        std::memcpy(scales + 4 * b, &s, 4);
      }
    }
    for (int64_t i = r; i < end; ++i) {
      const float* row = x + i * k;
      const int64_t base = banded ? first_block : row_base(i);
      uint8_t* out = fp4 ? codes.data() : values + i * k;
      const int64_t whole = k / kb;
      const float pre = recip ? gs : 1.0f;
      EncodeBlocks(fp4, row, whole, kb, pre, &divisor_buffer[base - origin],
                   &amax_buffer[base - origin], out);
      if (whole < kc) {
        EncodeBlocks(fp4, row + whole * kb, 1, k - whole * kb, pre,
                     &divisor_buffer[base + whole - origin],
                     &amax_buffer[base + whole - origin], out + whole * kb);
      }
      if (fp4) PackNibbles(codes.data(), k, i * k, values);
    }
    r = end;
  }
  return tensor_scale;
}

}  // namespace ops_internal
}  // namespace strata
