#include "dtype/testing.h"

#include <utility>
#include <vector>

namespace strata {
namespace testing {

FrozenContext::FrozenContext(const DType& dtype, std::vector<Layout> placements,
                             std::vector<Layout> adjacent)
    : dtype_(dtype),
      placements_(std::move(placements)),
      adjacent_(std::move(adjacent)) {
  for (const Layout& l : placements_) shapes_.push_back(l.shape());
}

}  // namespace testing
}  // namespace strata
