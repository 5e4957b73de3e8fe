// The transposing copy behind CopyFrom, Contiguous and Cast of a transposed
// Tensor: to[i][j] = from[j][i] with both inner sides unit-stride, at memory
// bandwidth where the processor allows (NOTE [ Blocked transposing copy ] in
// transpose.cc).
#ifndef STRATA_OPS_INTERNAL_TRANSPOSE_H_
#define STRATA_OPS_INTERNAL_TRANSPOSE_H_

#include <cstdint>

namespace strata {
namespace ops_internal {

// to[i * to_row_stride + j] = from[j * from_column_stride + i] for i < rows
// and j < cols, of elements of `element_bytes` bytes (strides in elements;
// widths 1, 2, 4 and 8 by tiles, any other an element at a time), by the best
// kernel this processor has. The regions must not overlap.
void TransposeCopy(void* to, const void* from, int64_t to_row_stride,
                   int64_t from_column_stride, int64_t rows, int64_t cols,
                   int element_bytes);

// TransposeCopy as a processor without AVX-512 does it (its tests compare the
// two on one machine).
void PortableTransposeCopy(void* to, const void* from, int64_t to_row_stride,
                           int64_t from_column_stride, int64_t rows,
                           int64_t cols, int element_bytes);

// The path TransposeCopy takes on this CPU: "AVX-512 register tiles" or
// "SSE blocks / buffered tiles", for benchmark reports.
const char* TransposeKernelName();

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_TRANSPOSE_H_
