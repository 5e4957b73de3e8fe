// Where the scales of a 1-D block format go, row-major or in the 128x4 tiles
// (ScaleLayout::kSwizzled128x4 in ops/quantize.h): the plans the quantizer
// and the relayout share.
#ifndef STRATA_OPS_INTERNAL_SCALE_GRID_H_
#define STRATA_OPS_INTERNAL_SCALE_GRID_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "layout/layout.h"

namespace strata {
namespace ops_internal {

// The swizzled index of the scale of (batch, r, b) without the batch term,
// for Bp padded blocks.
inline int64_t SwizzledRowBase(int64_t r, int64_t padded_blocks) {
  return (r / 128) * 128 * padded_blocks + (r % 32) * 16 + ((r / 32) % 4) * 4;
}
inline int64_t SwizzledBlockTerm(int64_t b) { return (b / 4) * 512 + b % 4; }

// Stores `count` rows (at most 128) of `blocks` scale codes each, row-major
// in `codes`, into the 128x4 tiles of one band, `band` pointing at the tiles
// of its row 0 (a SwizzledRowBase of a multiple of 128): tile by tile, each
// tile's 512 bytes written at once. Padding is not written.
inline void StoreSwizzledBand(const uint8_t* codes, int64_t count,
                              int64_t blocks, uint8_t* band) {
  for (int64_t b = 0; b < blocks; b += 4) {
    uint8_t* tile = band + b * 128;
    const int64_t n = blocks - b < 4 ? blocks - b : 4;
    for (int64_t r = 0; r < count; ++r) {
      uint8_t* to = tile + (r % 32) * 16 + (r / 32) * 4;
      const uint8_t* from = codes + r * blocks + b;
      if (n == 4) {
        std::memcpy(to, from, 4);
      } else {
        std::memcpy(to, from, n);
      }
    }
  }
}

// L_1, the level-1 domain S_0 addresses (per mode), the carrier size and,
// swizzled, the sizes of the 128x4 tiles.
struct ScaleGrid {
  Layout l1;
  std::vector<int64_t> domain;
  int64_t scale_size = 0;
  int64_t rows = 0;           // R: the other of the last two modes
  int64_t padded_blocks = 0;  // Bp
  int64_t tile = 0;           // Rp * Bp
};

// Row-major scales over the shape with `blocks` in the blocked dim.
absl::StatusOr<ScaleGrid> PlanRowMajor(absl::Span<const int64_t> extents,
                                       int64_t blocked_dim, int64_t blocks);

// The 128x4 tiles: rows pad to Rp = 128 * ceil(R / 128), blocks to
// Bp = 4 * ceil(nb / 4); errors (ValueError) name the size that overflows.
absl::StatusOr<ScaleGrid> PlanSwizzle(absl::Span<const int64_t> extents,
                                      int64_t blocked_dim, int64_t blocks);

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_SCALE_GRID_H_
