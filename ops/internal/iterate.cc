#include "ops/internal/iterate.h"

#include <array>
#include <cstdint>
#include <vector>

#include "layout/algebra.h"

namespace strata {
namespace ops_internal {

ModeAccess MakeModeAccess(const Layout& mode, bool broadcast) {
  ModeAccess access;
  if (broadcast || mode.size() <= 1) return access;
  const Layout c = Coalesce(mode);
  if (c.shape().is_leaf()) {
    access.stride = c.stride().value();
    return access;
  }
  // The leaves in colexicographic order (the first fastest): each leaf
  // repeats the table so far once per coordinate, shifted by its stride, so
  // the table costs one addition per entry, not one evaluation.
  const absl::Span<const int64_t> shape = c.shape().leaves();
  const absl::Span<const int64_t> stride = c.stride().leaves();
  access.table.reserve(mode.size());
  access.table.push_back(0);
  for (size_t leaf = 0; leaf < shape.size(); ++leaf) {
    const size_t below = access.table.size();
    for (int64_t k = 1; k < shape[leaf]; ++k) {
      // Wrapping arithmetic, as Layout's own evaluation (the layout's
      // reachable offsets were bounded when it was made).
      const uint64_t shift =
          static_cast<uint64_t>(k) * static_cast<uint64_t>(stride[leaf]);
      for (size_t j = 0; j < below; ++j) {
        access.table.push_back(static_cast<int64_t>(
            static_cast<uint64_t>(access.table[j]) + shift));
      }
    }
  }
  return access;
}

std::vector<ModeAccess> AlignedAccess(const Layout& layout,
                                      const std::vector<int64_t>& extents,
                                      bool prefix) {
  std::vector<ModeAccess> out(extents.size());
  // Nothing is iterated where an extent is 0, and no element of an empty
  // layout is reached (Scatter's prefix access of an empty dst refuses every
  // index first), while a table would cost its mode's size: (0, 2^40) is
  // empty, but its second mode is not (NOTE [ Offset-table budget ]).
  if (layout.size() == 0) return out;
  for (const int64_t e : extents) {
    if (e == 0) return out;
  }
  const auto modes = TopLevelModes(layout);
  const int64_t lead = static_cast<int64_t>(extents.size()) - modes.size();
  for (size_t p = 0; p < extents.size(); ++p) {
    const int64_t j = static_cast<int64_t>(p) - lead;
    if (j < 0) continue;  // A new leading mode: broadcast.
    const Layout& mode = modes[j];
    const bool broadcast = mode.size() == 1 && extents[p] != 1 && !prefix;
    out[p] = MakeModeAccess(mode, broadcast);
  }
  return out;
}

std::vector<int64_t> RowMajorOffsets(absl::Span<const Layout> modes, int begin,
                                     int end) {
  std::vector<int64_t> extents;
  std::array<std::vector<ModeAccess>, 1> access;
  int64_t count = 1;
  for (int j = begin; j < end; ++j) {
    extents.push_back(modes[j].size());
    access[0].push_back(MakeModeAccess(modes[j], /*broadcast=*/false));
    count *= modes[j].size();  // At most the layout's size.
  }
  std::vector<int64_t> offsets;
  offsets.reserve(count);
  ForEachIndex<1>(extents, access, {0}, [&](const std::array<int64_t, 1>& i) {
    offsets.push_back(i[0]);
  });
  return offsets;
}

bool SameModeSizes(const Layout& a, const Layout& b) {
  const auto a_modes = TopLevelModes(a);
  const auto b_modes = TopLevelModes(b);
  if (a_modes.size() != b_modes.size()) return false;
  for (size_t m = 0; m < a_modes.size(); ++m) {
    if (a_modes[m].size() != b_modes[m].size()) return false;
  }
  return true;
}

}  // namespace ops_internal
}  // namespace strata
