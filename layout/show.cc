#include "layout/show.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "util/errors.h"

namespace strata {

absl::StatusOr<std::string> ShowLayout(const Layout& layout) {
  if (layout.rank() > 2) {
    return ValueErrorCat("--show draws rank-1 and rank-2 layouts; ",
                         layout.ToString(), " has rank ", layout.rank());
  }
  const bool two_modes = layout.rank() == 2 && !layout.shape().is_leaf();
  const Layout rows_mode = two_modes ? layout.mode(0) : layout;
  const int64_t rows = rows_mode.size();
  const int64_t cols = two_modes ? layout.mode(1).size() : 1;
  if (layout.size() > kMaxShowCells) {
    return ValueErrorCat("--show draws at most ", kMaxShowCells, " cells; ",
                         layout.ToString(), " has ", layout.size());
  }
  // Column-major linear index r + c * rows addresses cell (r, c).
  std::vector<std::string> cells(rows * cols);
  size_t width = absl::StrCat(std::max<int64_t>(cols - 1, 0)).size();
  for (int64_t i = 0; i < rows * cols; ++i) {
    cells[i] = absl::StrCat(layout(i));
    width = std::max(width, cells[i].size());
  }
  const size_t row_label = absl::StrCat(std::max<int64_t>(rows - 1, 0)).size();
  std::string out = absl::StrCat(layout.ToString(), "\n");
  std::string rule(row_label + 1, ' ');
  std::string header(row_label + 1, ' ');
  for (int64_t c = 0; c < cols; ++c) {
    absl::StrAppend(&rule, "+", std::string(width + 2, '-'));
    absl::StrAppend(&header, absl::StrFormat("  %*d ", width, c));
  }
  absl::StrAppend(&rule, "+\n");
  absl::StrAppend(&out, header, "\n", rule);
  for (int64_t r = 0; r < rows; ++r) {
    absl::StrAppend(&out, absl::StrFormat("%*d ", row_label, r));
    for (int64_t c = 0; c < cols; ++c) {
      absl::StrAppend(&out,
                      absl::StrFormat("| %*s ", width, cells[r + c * rows]));
    }
    absl::StrAppend(&out, "|\n", rule);
  }
  return out;
}

}  // namespace strata
