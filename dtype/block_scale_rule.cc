#include "dtype/block_scale_rule.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/errors.h"
#include "dtype/dtype.h"
#include "layout/algebra.h"

namespace strata {
namespace {

std::vector<Layout> TopModes(const Layout& layout) {
  if (layout.shape().is_leaf()) return {layout};
  std::vector<Layout> modes;
  for (int i = 0; i < layout.rank(); ++i) modes.push_back(layout.mode(i));
  return modes;
}

}  // namespace

absl::StatusOr<int> BlockScaleRule::BlockedMode(
    const RepresentationValidationContext& context) const {
  const auto adjacent = context.adjacent_layouts();
  const auto placements = context.placement_layouts();
  const std::string dtype = context.logical_dtype().name();
  if (adjacent.empty()) {
    return ValueErrorCat(dtype,
                         ": block-scaled representations need a scale level");
  }
  const Layout& s0 = adjacent[0];
  const std::vector<Layout> s_modes = TopModes(s0);
  const std::vector<Layout> l_modes = TopModes(placements[0]);
  std::vector<int> blocked;
  std::vector<std::string> seen;
  for (size_t i = 0; i < s_modes.size(); ++i) {
    const Layout coalesced = Coalesce(s_modes[i]);
    seen.push_back(absl::StrCat("mode ", i, " -> ", coalesced.ToString()));
    const auto extents = coalesced.shape().leaves();
    const auto strides = coalesced.stride().leaves();
    if (extents.empty() || extents[0] != block_size_ || strides[0] != 0)
      continue;
    bool later_nonzero = true;
    for (size_t k = 1; k < strides.size(); ++k)
      later_nonzero &= strides[k] != 0;
    const bool broadcast = Coalesce(l_modes[i]).cosize() <= 1;
    if (later_nonzero && !broadcast) blocked.push_back(static_cast<int>(i));
  }
  if (blocked.size() == 1) return blocked[0];
  return ValueErrorCat(
      dtype, " needs one scale per aligned block of ", block_size_,
      " values along exactly one mode: S_0 coalesced by mode must be (",
      block_size_, ",...):(0,...) on one mode, but S_0 = ", s0.ToString(),
      " has ", blocked.size(), " such modes (", absl::StrJoin(seen, "; "), ")");
}

absl::Status BlockScaleRule::Validate(
    const RepresentationValidationContext& context) const {
  return BlockedMode(context).status();
}

}  // namespace strata
