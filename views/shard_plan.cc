#include "views/shard_plan.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/dtype.h"
#include "layout/layout.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"
#include "views/views.h"

namespace strata {
namespace {

// The non-unit leaves (extent, stride) of top-level mode `dim` of `layout`.
std::vector<std::pair<int64_t, int64_t>> ModeLeaves(const Layout& layout,
                                                    int64_t dim) {
  const auto modes = TopLevelModes(layout);
  const Layout& mode = modes[dim];
  const auto e = mode.shape().leaves();
  const auto d = mode.stride().leaves();
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t j = 0; j < e.size(); ++j) {
    if (e[j] != 1) out.emplace_back(e[j], d[j]);
  }
  return out;
}

// The most granules a layout without a closed form is searched over: the
// unions of g-ranges are quadratic in them.
constexpr int64_t kMaxSearchedGranules = 64;

// Whether every union [a*g, min(b*g, n)) of dim `dim` is a view (the last
// union ends at n: no b * g past it is formed).
bool UnionsAdmitted(const Tensor& t, int64_t dim, int64_t g, int64_t n) {
  const int64_t units = CeilDiv(n, g);
  for (int64_t a = 0; a < units; ++a) {
    for (int64_t b = a + 1; b <= units; ++b) {
      const int64_t stop = b == units ? n : b * g;
      if (!Slice(t, dim, a * g, stop).ok()) return false;
    }
  }
  return true;
}

int64_t Lcm(int64_t a, int64_t b, int64_t cap) {
  const int64_t g = std::gcd(a, b);
  int64_t l;
  return CheckedMul(a / g, b, &l) ? l : cap;
}

}  // namespace

absl::StatusOr<int64_t> ShardGranule(const Tensor& tensor, int64_t dim) {
  const std::vector<int64_t> shape = tensor.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (dim < 0 || dim >= rank) {
    return ValueErrorCat("ShardGranule: dim ", dim,
                         " is out of range for rank ", rank);
  }
  const int64_t n = shape[dim];
  if (n <= 1) return 1;
  const Representation& rep = TensorAccess::representation(tensor);
  // Level 0: the mode's leaves but the last.
  const auto l0 = ModeLeaves(rep.subtensor(0).placement, dim);
  int64_t p = 1;
  for (size_t j = 0; j + 1 < l0.size(); ++j) p *= l0[j].first;  // <= n.
  int64_t x = p;
  bool exact = true;
  if (rep.num_levels() > 1 && !l0.empty()) {
    // Level 1: where the last leaf's steps land in L_1's leaf grid.
    const auto s0 = ModeLeaves(rep.adjacent_layouts()[0], dim);
    const int64_t w = s0.empty() ? 0 : s0.back().second;
    const int64_t e = l0.back().first;
    if (w != 0) {
      const Layout& l1 = rep.subtensor(1).placement;
      const auto f = l1.shape().leaves();
      int64_t weight = 1;
      size_t j = 0;
      while (j < f.size() && (weight < w || f[j] == 1)) {
        if (!CheckedMul(weight, f[j], &weight)) break;
        ++j;
      }
      if (j < f.size() && weight == w) {
        int64_t q = 1, rem = e;
        for (; j < f.size() && rem > f[j]; ++j) {
          if (f[j] == 1) continue;
          q *= f[j];  // <= the level's size.
          rem = CeilDiv(rem, f[j]);
        }
        x = Lcm(x, p * q, n);
      } else {
        exact = false;
      }
    }
    // The rule: a non-ragged block along the dim (a scale constant along
    // the whole dim is a whole mode where the format has one, and any range
    // of it keeps its scale). A dim L_0 broadcasts holds no block.
    bool broadcast = true;
    for (const auto& leaf : l0) broadcast = broadcast && leaf.second == 0;
    const CompoundDType* c = tensor.dtype().AsCompound();
    if (c != nullptr && !broadcast) {
      const BlockScaleRule* rule = FindBlockScaleRule(*c);
      if (rule != nullptr && !rule->scaling().ragged && !s0.empty() &&
          s0.front().second == 0) {
        const BlockScaling& scaling = rule->scaling();
        const bool has_whole = scaling.other_modes == kWholeMode ||
                               std::count(scaling.blocks.begin(),
                                          scaling.blocks.end(), kWholeMode) > 0;
        int64_t block = 1;  // The leading stride-0 leaves: one block.
        for (size_t j = 0; j < s0.size() && s0[j].second == 0; ++j) {
          block *= s0[j].first;  // <= n.
        }
        if (block > 1 && (block < n || !has_whole)) x = Lcm(x, block, n);
      }
    }
  }
  if (x >= n) return n;
  if (exact) return x;
  // No closed form (S_0 steps onto no leaf of L_1: a layout a text can hold
  // but no reader or view makes): the multiples of x in turn where the
  // unions are few, else the whole dim, which is always a view.
  if (CeilDiv(n, x) > kMaxSearchedGranules) return n;
  for (int64_t g = x; g < n; g += x) {  // g < n and x <= n / 2: no overflow.
    if (UnionsAdmitted(tensor, dim, g, n)) return g;
  }
  return n;
}

absl::StatusOr<ShardPlan> PlanShards(const Tensor& tensor, int64_t dim,
                                     int64_t parts) {
  STRATA_ASSIGN_OR_RETURN(const int64_t granule, ShardGranule(tensor, dim));
  ShardPlan plan;
  plan.granule = granule;
  plan.extent = tensor.shape()[dim];
  if (parts < 1) {
    return ValueErrorCat("PlanShards: parts must be at least 1; got ", parts);
  }
  const int64_t n = plan.extent;
  const int64_t units = CeilDiv(n, granule);
  if (parts > units) {
    return ValueErrorCat("PlanShards: dim ", dim, " of extent ", n, " holds ",
                         units, " granules of ", granule, " (granule=", granule,
                         "); it cannot split into ", parts, " parts");
  }
  if (parts > kMaxShardParts) {
    // Each part is a view built now: 2^40 parts of a broadcast dim asked
    // for terabytes.
    return ResourceExhaustedErrorCat("PlanShards: ", parts,
                                     " parts exceed the limit of ",
                                     kMaxShardParts, " parts per plan");
  }
  int64_t step;
  if (!CheckedMul(parts, granule, &step) ||
      !CheckedMul(CeilDiv(n, step), step, &plan.pad)) {
    return ValueErrorCat("PlanShards: the padded extent of ", parts,
                         " parts of ", granule, " overflows int64");
  }
  const int64_t base = units / parts, extra = units % parts;
  int64_t at = 0;  // In granules.
  for (int64_t k = 0; k < parts; ++k) {
    const int64_t take = base + (k < extra ? 1 : 0);
    ShardPart part;
    part.begin = std::min(at * granule, n);
    part.end = std::min((at + take) * granule, n);
    part.view = Slice(tensor, dim, part.begin, part.end);
    plan.parts.push_back(std::move(part));
    at += take;
  }
  return plan;
}

}  // namespace strata
