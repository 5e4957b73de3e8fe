#include "ops/internal/scale_grid.h"

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace ops_internal {
namespace {

absl::Status Overflow(absl::string_view what, int64_t a, int64_t b) {
  return ValueErrorCat("QuantizeBlockScaled: the swizzled_128x4 ", what,
                       " overflows int64 (", a, " * ", b, ")");
}

}  // namespace

// Row-major scales over the shape with n/B in the blocked dim.
absl::StatusOr<ScaleGrid> PlanRowMajor(absl::Span<const int64_t> extents,
                                       int64_t blocked_dim, int64_t blocks) {
  ScaleGrid grid;
  std::vector<IntTuple> scale_shape;
  grid.scale_size = 1;
  for (size_t j = 0; j < extents.size(); ++j) {
    const int64_t n =
        static_cast<int64_t>(j) == blocked_dim ? blocks : extents[j];
    grid.domain.push_back(n);
    scale_shape.push_back(n);
    // The value layouts exist, so a nonzero product fits; a zero extent
    // makes the whole product zero.
    if (!CheckedMul(grid.scale_size, n, &grid.scale_size)) grid.scale_size = 0;
  }
  for (int64_t n : grid.domain) {
    if (n == 0) grid.scale_size = 0;
  }
  STRATA_ASSIGN_OR_RETURN(grid.l1,
                          Layout::RowMajor(IntTuple::Tuple(scale_shape)));
  return grid;
}

// The 128x4 tiles: rows pad to Rp = 128 * ceil(R / 128), blocks to
// Bp = 4 * ceil(nb / 4); errors name the size that overflows.
absl::StatusOr<ScaleGrid> PlanSwizzle(absl::Span<const int64_t> extents,
                                      int64_t blocked_dim, int64_t blocks) {
  const int64_t rank = static_cast<int64_t>(extents.size());
  const int64_t row_dim = blocked_dim == rank - 1 ? rank - 2 : rank - 1;
  ScaleGrid grid;
  grid.rows = extents[row_dim];
  int64_t padded_rows, batches = 1, row_tile;
  const int64_t row_tiles = CeilDiv(grid.rows, 128);
  const int64_t block_tiles = CeilDiv(blocks, 4);
  if (!CheckedMul(row_tiles, 128, &padded_rows)) {
    return Overflow("padded row count Rp", row_tiles, 128);
  }
  grid.padded_blocks = block_tiles * 4;  // blocks <= extent / 16.
  if (!CheckedMul(padded_rows, grid.padded_blocks, &grid.tile)) {
    return Overflow("tile size Rp * Bp", padded_rows, grid.padded_blocks);
  }
  for (int64_t j = 0; j < rank - 2; ++j) {
    if (!CheckedMul(batches, extents[j], &batches)) {
      return Overflow("batch count", batches, extents[j]);
    }
  }
  if (!CheckedMul(batches, grid.tile, &grid.scale_size)) {
    return Overflow("scale count batches * Rp * Bp", batches, grid.tile);
  }
  if (!CheckedMul(grid.padded_blocks, 128, &row_tile)) {
    return Overflow("row-tile stride 128 * Bp", grid.padded_blocks, 128);
  }
  // A product of extents that overflows has a zero extent beyond it (the
  // layouts' sizes fit), so the Tensor is empty and the stride it would have
  // been is never used: 0.
  const auto times = [](int64_t a, int64_t b) {
    int64_t p;
    return CheckedMul(a, b, &p) ? p : 0;
  };
  for (int64_t j = 0; j < rank; ++j) {
    grid.domain.push_back(j == blocked_dim
                              ? grid.padded_blocks
                              : (j == row_dim ? padded_rows : extents[j]));
  }
  std::vector<IntTuple> scale_shape, l1_stride;
  int64_t batch_stride = grid.tile;
  for (int64_t j = rank - 2; j-- > 0;) {
    scale_shape.insert(scale_shape.begin(), extents[j]);
    l1_stride.insert(l1_stride.begin(), batch_stride);
    batch_stride = times(batch_stride, extents[j]);
  }
  const IntTuple row_shape = IntTuple::Tuple({32, 4, padded_rows / 128});
  const IntTuple row_stride = IntTuple::Tuple({16, 4, row_tile});
  const IntTuple block_shape = IntTuple::Tuple({4, grid.padded_blocks / 4});
  const IntTuple block_stride = IntTuple::Tuple({1, 512});
  if (blocked_dim == rank - 1) {
    scale_shape.insert(scale_shape.end(), {row_shape, block_shape});
    l1_stride.insert(l1_stride.end(), {row_stride, block_stride});
  } else {
    scale_shape.insert(scale_shape.end(), {block_shape, row_shape});
    l1_stride.insert(l1_stride.end(), {block_stride, row_stride});
  }
  STRATA_ASSIGN_OR_RETURN(grid.l1, Layout::Create(IntTuple::Tuple(scale_shape),
                                                  IntTuple::Tuple(l1_stride)));
  return grid;
}

}  // namespace ops_internal
}  // namespace strata
