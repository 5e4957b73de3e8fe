// `strata layout --show`: a rank-1 or rank-2 layout drawn as a table of its
// values.
#ifndef STRATA_LAYOUT_SHOW_H_
#define STRATA_LAYOUT_SHOW_H_

#include <string>

#include "absl/status/statusor.h"
#include "layout/layout.h"

namespace strata {

// Rows are mode 0 and columns mode 1 (one column for a rank-1 layout); a
// hierarchical mode is flattened colexicographically. Cell (r, c) holds L(r,
// c). Errors (ValueError): rank above 2, or more than kMaxShowCells cells.
inline constexpr int64_t kMaxShowCells = 1 << 16;
absl::StatusOr<std::string> ShowLayout(const Layout& layout);

}  // namespace strata

#endif  // STRATA_LAYOUT_SHOW_H_
