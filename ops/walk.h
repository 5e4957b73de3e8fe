// Carrier offsets of a layout's elements in logical (row-major over top-level
// modes) order, precomputed per mode so kernels never call crd2idx per element.
#ifndef STRATA_OPS_WALK_H_
#define STRATA_OPS_WALK_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "layout/layout.h"

namespace strata {

// offsets[r] = L(coordinate r), r enumerating modes [begin, end) in row-major
// order (later modes fastest); other modes at coordinate 0. O(product of those
// extents).
std::vector<int64_t> RowMajorOffsets(absl::Span<const Layout> modes, int begin,
                                     int end);

}  // namespace strata

#endif  // STRATA_OPS_WALK_H_
