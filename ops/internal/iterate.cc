#include "ops/internal/iterate.h"

#include <array>
#include <cstdint>
#include <optional>
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

std::optional<std::vector<ModeAccess>> SeparableComposition(
    const Layout& l, const Layout& s, const std::vector<int64_t>& extents) {
  // Where the algebra admits L o S, its modes give the tables by leaves (as
  // MakeModeAccess builds them), cheaper than digits per offset; a mode may
  // come out refined (4096 as (32,4,32)) but indexes the same coordinates.
  const absl::StatusOr<Layout> composed = Composition(l, s);
  if (composed.ok()) {
    const auto composed_modes = TopLevelModes(*composed);
    const auto s_modes = TopLevelModes(s);
    bool same = composed_modes.size() == s_modes.size();
    for (size_t m = 0; same && m < s_modes.size(); ++m) {
      same = composed_modes[m].size() == s_modes[m].size();
    }
    if (same) return AlignedAccess(*composed, extents);
  }
  const absl::Span<const int64_t> radix = l.shape().leaves();
  const absl::Span<const int64_t> stride = l.stride().leaves();
  const int64_t domain = l.size();
  std::vector<ModeAccess> access = AlignedAccess(s, extents);
  std::vector<bool> taken(radix.size(), false);
  for (size_t m = 0; m < extents.size(); ++m) {
    const int64_t extent = access[m].strided() && access[m].stride == 0
                               ? 1  // Broadcast: offset 0 throughout.
                               : extents[m];
    std::vector<bool> digits(radix.size(), false);
    std::vector<int64_t> table(extent);
    for (int64_t c = 0; c < extent; ++c) {
      int64_t rest = access[m].at(c);
      if (rest < 0 || rest >= domain) return std::nullopt;
      uint64_t offset = 0;  // Wrapping, as Layout's own evaluation.
      for (size_t k = 0; k < radix.size() && rest > 0; ++k) {
        const int64_t digit = k + 1 == radix.size() ? rest : rest % radix[k];
        rest = k + 1 == radix.size() ? 0 : rest / radix[k];
        if (digit == 0) continue;
        digits[k] = true;
        offset +=
            static_cast<uint64_t>(digit) * static_cast<uint64_t>(stride[k]);
      }
      table[c] = static_cast<int64_t>(offset);
    }
    for (size_t k = 0; k < radix.size(); ++k) {
      if (digits[k] && taken[k]) return std::nullopt;
      taken[k] = taken[k] || digits[k];
    }
    if (extent == 1 && extents[m] != 1) {
      access[m] = ModeAccess{};  // Broadcast stays stride 0.
    } else {
      access[m].stride = 0;
      access[m].table = std::move(table);
    }
  }
  return access;
}

}  // namespace ops_internal
}  // namespace strata
