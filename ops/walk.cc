#include "ops/walk.h"

#include <cstdint>
#include <vector>

namespace strata {

std::vector<int64_t> RowMajorOffsets(absl::Span<const Layout> modes, int begin,
                                     int end) {
  std::vector<int64_t> offsets = {0};
  for (int j = begin; j < end; ++j) {
    const Layout& mode = modes[j];
    std::vector<int64_t> next;
    next.reserve(offsets.size() * mode.size());
    for (int64_t base : offsets) {
      for (int64_t c = 0; c < mode.size(); ++c) next.push_back(base + mode(c));
    }
    offsets.swap(next);
  }
  return offsets;
}

}  // namespace strata
