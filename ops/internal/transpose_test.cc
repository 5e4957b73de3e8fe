#include "ops/internal/transpose.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace strata {
namespace ops_internal {
namespace {

constexpr uint8_t kGuard = 0xA5;

using Transpose = void (*)(void*, const void*, int64_t, int64_t, int64_t,
                           int64_t, int);

// Transposes a (rows, cols) matrix of `width`-byte elements, stored as its
// (cols, rows) row-major transpose and filled with a fixed pseudo-random
// pattern, into a destination whose rows are `row_stride` elements apart,
// starting `offset` elements past a 64-byte boundary of a buffer of guard
// bytes; checks every element's bytes, and that every byte it should not
// write still holds the guard.
void ExpectTransposed(Transpose transpose, int width, int64_t rows,
                      int64_t cols, int64_t row_stride, int64_t offset) {
  SCOPED_TRACE(std::to_string(width) + "-byte " + std::to_string(rows) + "x" +
               std::to_string(cols) + ", rows " + std::to_string(row_stride) +
               " apart from element " + std::to_string(offset));
  std::vector<uint8_t> in(rows * cols * width);
  for (size_t b = 0; b < in.size(); ++b) {
    in[b] = static_cast<uint8_t>((b * 2654435761u) >> 11);
  }
  const int64_t span = rows == 0 ? 0 : ((rows - 1) * row_stride + cols);
  std::vector<uint8_t> buffer((offset + span) * width + 2 * 64, kGuard);
  uint8_t* base = buffer.data();
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  uint8_t* out = base + offset * width;
  transpose(out, in.data(), row_stride, rows, rows, cols, width);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      if (std::memcmp(out + (i * row_stride + j) * width,
                      in.data() + (j * rows + i) * width, width) != 0) {
        FAIL() << "element (" << i << "," << j << ") differs";
      }
    }
  }
  // Every byte outside the rows' first `cols` elements is a guard.
  for (size_t b = 0; b < buffer.size(); ++b) {
    const int64_t at = static_cast<int64_t>(&buffer[b] - out);
    const int64_t element = at >= 0 ? at / width : -1;
    const bool written = at >= 0 && element < span &&
                         element % row_stride < cols &&
                         element / row_stride < rows;
    if (!written && buffer[b] != kGuard) {
      FAIL() << "byte " << at << " from the destination was written";
    }
  }
}

void ExpectBothKernels(int width, int64_t rows, int64_t cols,
                       int64_t row_stride, int64_t offset) {
  ExpectTransposed(TransposeCopy, width, rows, cols, row_stride, offset);
  ExpectTransposed(PortableTransposeCopy, width, rows, cols, row_stride,
                   offset);
}

TEST(TransposeTest, ThinAndTallMatricesOfOneAndTwoBytes) {
  // NOTE [ Thin byte transposes ] and NOTE [ Thin 2-byte transposes ]:
  // destination rows of 16 elements up to one less than a square tile's side
  // (a tile's rows at a time, the columns past a multiple of 16 beside them)
  // and source lines as short (16 rows at a time, the rows past a multiple
  // of 16 below them); streamed (8 MiB and more, aligned) or not, with
  // partial blocks and strips.
  for (const auto& [width, side] : {std::pair<int, int64_t>{1, 64}, {2, 32}}) {
    const int64_t streamed = (int64_t{8} << 20) / (16 * width);
    const int64_t middle = side / 2 + 8;  // 40 1-byte or 24 2-byte elements.
    ExpectBothKernels(width, streamed, 16, 16, 0);
    ExpectBothKernels(width, 16, streamed, streamed, 0);
    ExpectBothKernels(width, 4099, 16, 16, 0);
    ExpectBothKernels(width, 1000, middle, middle, 3);
    ExpectBothKernels(width, 1030, side - 1, side, 0);
    ExpectBothKernels(width, 16, 5000, 5000, 0);
    ExpectBothKernels(width, middle, 3000, 3001, 1);
    ExpectBothKernels(width, side - 1, 1100, 1100, 0);
    ExpectBothKernels(width, 15, 1000, 1000, 0);
    ExpectBothKernels(width, 1000, 15, 15, 0);
  }
}

TEST(TransposeTest, LargeMatricesOfEveryWidthStreamedOrNot) {
  // NOTE [ Transposes in AVX-512 registers ]: 8 MiB or more (streamed where
  // the destination rows are aligned to 64 bytes), partial 512-blocks and
  // strips, and edges below and right of the tiles in both directions; the
  // same unaligned (an odd element offset), not streamed.
  ExpectBothKernels(4, 1547, 1589, 1600, 0);
  ExpectBothKernels(4, 1500, 1400, 1408, 1);
  ExpectBothKernels(8, 1300, 1100, 1104, 0);
  ExpectBothKernels(8, 1100, 1000, 1000, 1);
  ExpectBothKernels(2, 2600, 2300, 2336, 0);
  ExpectBothKernels(2, 2100, 2050, 2050, 1);
  ExpectBothKernels(1, 2947, 2887, 2944, 0);
  ExpectBothKernels(1, 2900, 2900, 2900, 3);
}

TEST(TransposeTest, ThinMatricesTakeThePortableKernels) {
  // Fewer rows than a tile: 4x4 SSE strips (streamed: 8.8 MB) or buffered
  // tiles on every processor.
  ExpectBothKernels(4, 13, 170000, 170000, 0);
  ExpectBothKernels(2, 15, 2000, 2000, 0);
  ExpectBothKernels(1, 63, 300, 300, 0);
  ExpectBothKernels(8, 7, 300, 300, 1);
}

TEST(TransposeTest, SmallMatricesAroundOneTile) {
  // Tiles of 64, 32, 16 and 8 elements a side for widths 1, 2, 4 and 8:
  // exactly one, one less and one more in each direction, and nothing.
  for (const auto& [width, tile] :
       {std::pair<int, int64_t>{1, 64}, {2, 32}, {4, 16}, {8, 8}}) {
    for (int64_t rows : {tile - 1, tile, tile + 1}) {
      for (int64_t cols : {tile - 1, tile, tile + 1}) {
        ExpectBothKernels(width, rows, cols, cols, 0);
        ExpectBothKernels(width, rows, cols, cols + 3, 1);
      }
    }
    ExpectBothKernels(width, 0, tile, tile, 0);
    ExpectBothKernels(width, tile, 0, 1, 0);
  }
}

TEST(TransposeTest, OtherWidthsGoAnElementAtATime) {
  ExpectBothKernels(3, 5, 7, 9, 1);
  ExpectBothKernels(16, 17, 19, 19, 0);
}

}  // namespace
}  // namespace ops_internal
}  // namespace strata
