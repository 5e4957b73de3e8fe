#include "ops/iterate.h"

#include <vector>

#include "layout/algebra.h"
#include "ops/walk.h"

namespace strata {

ModeAccess MakeModeAccess(const Layout& mode, bool broadcast) {
  ModeAccess access;
  if (broadcast || mode.size() <= 1) return access;
  const Layout c = Coalesce(mode);
  if (c.shape().is_leaf()) {
    access.stride = c.stride().value();
    return access;
  }
  access.table.resize(mode.size());
  for (int64_t i = 0; i < mode.size(); ++i) access.table[i] = mode(i);
  return access;
}

std::vector<ModeAccess> AlignedAccess(const Layout& layout,
                                      const std::vector<int64_t>& extents,
                                      bool prefix) {
  const auto modes = TopLevelModes(layout);
  const int64_t lead = static_cast<int64_t>(extents.size()) - modes.size();
  std::vector<ModeAccess> out(extents.size());
  for (size_t p = 0; p < extents.size(); ++p) {
    const int64_t j = static_cast<int64_t>(p) - lead;
    if (j < 0) continue;  // A new leading mode: broadcast.
    const Layout& mode = modes[j];
    const bool broadcast = mode.size() == 1 && extents[p] != 1 && !prefix;
    out[p] = MakeModeAccess(mode, broadcast);
  }
  return out;
}

}  // namespace strata
