#include "views/narrow_level.h"

#include <cstdint>
#include <numeric>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/status_macros.h"
#include "layout/checked_math.h"

namespace strata {
namespace views_internal {

namespace {

// x / d and x % d for x >= 0 and d > 0, by shift and mask where d is a power
// of two (leaf extents and box strides mostly are: a 64-bit division costs
// tens of cycles).
inline int64_t Quotient(int64_t x, int64_t d) {
  return (d & (d - 1)) == 0 ? x >> __builtin_ctzll(d) : x / d;
}
inline int64_t Remainder(int64_t x, int64_t d) {
  return (d & (d - 1)) == 0 ? x & (d - 1) : x % d;
}

}  // namespace

absl::StatusOr<NarrowedLevel> NarrowLevel(const Layout& placement, int64_t base,
                                          const Layout& reached) {
  const auto extents = placement.shape().leaves();
  const auto strides = placement.stride().leaves();
  const int leaves = static_cast<int>(extents.size());
  const int64_t size = placement.size();
  auto refuse = [&](absl::string_view why) {
    return ValueErrorCat(why, " (adjacent layout ", reached.ToString(),
                         " from index ", base, " into placement ",
                         placement.ToString(), ")");
  };
  if (base < 0 || base >= size) {
    return refuse(absl::StrCat("index ", base, " is outside the level's ", size,
                               " coordinates"));
  }
  // The leaves of `reached` that move, and the last index they reach.
  struct Move {
    size_t leaf;
    int64_t last;  // n_k - 1
    int64_t stride;
  };
  const auto r_extents = reached.shape().leaves();
  const auto r_strides = reached.stride().leaves();
  absl::InlinedVector<Move, 8> moves;
  int64_t last_index = base;
  for (size_t k = 0; k < r_extents.size(); ++k) {
    if (r_extents[k] <= 1 || r_strides[k] == 0) continue;
    if (r_strides[k] < 0) {
      return refuse(absl::StrCat(
          "adjacent stride ", r_strides[k],
          " is negative: it reaches coordinates before the view's start"));
    }
    int64_t reach;
    if (!CheckedMul(r_extents[k] - 1, r_strides[k], &reach) ||
        !CheckedAdd(last_index, reach, &last_index)) {
      last_index = size;
    }
    moves.push_back({k, r_extents[k] - 1, r_strides[k]});
  }
  if (last_index >= size) {
    return refuse(
        absl::StrCat("it reaches past the level's last index ", size - 1));
  }
  // Colexicographic weights of the leaves; bounded by size.
  absl::InlinedVector<int64_t, 9> weight(leaves + 1);
  weight[0] = 1;
  for (int a = 0; a < leaves; ++a) weight[a + 1] = weight[a] * extents[a];

  // Every digit the search reads, decomposed once (one division per leaf and
  // value, where reading each digit afresh divides three times): row 0 holds
  // base's digits, row 1 + j those of moves[j].stride.
  const int values = static_cast<int>(moves.size()) + 1;
  absl::InlinedVector<int64_t, 48> digits(values * leaves);
  for (int v = 0; v < values; ++v) {
    int64_t rest = v == 0 ? base : moves[v - 1].stride;
    for (int a = 0; a < leaves; ++a) {
      // Extents of 0 leave the level empty, excluded by base < size.
      digits[v * leaves + a] = Remainder(rest, extents[a]);
      rest = Quotient(rest, extents[a]);
    }
  }

  // Runs of merged leaves: run r covers leaves [first[r], first[r + 1]).
  absl::InlinedVector<int, 9> first(leaves + 1);
  std::iota(first.begin(), first.end(), 0);
  auto runs = [&] { return static_cast<int>(first.size()) - 1; };
  // The digit of value v (row v above) in run r: its leaves' digits in the
  // run's mixed radix, which is value / weight[first[r]] % run extent. Below
  // the run's extent, itself at most size: no overflow.
  auto digit = [&](int v, int r) {
    int64_t sum = 0, radix = 1;
    for (int a = first[r]; a < first[r + 1]; ++a) {
      sum += digits[v * leaves + a] * radix;
      radix *= extents[a];
    }
    return sum;
  };
  // The largest digit reached in run r if nothing carries into it; -1 where
  // it overflows the run.
  auto largest = [&](int r) {
    const int64_t run_extent = first[r + 1] == first[r] + 1
                                   ? extents[first[r]]
                                   : weight[first[r + 1]] / weight[first[r]];
    int64_t sum = digit(0, r);
    for (int j = 0; j < values - 1; ++j) {
      int64_t term;
      if (!CheckedMul(moves[j].last, digit(j + 1, r), &term) ||
          !CheckedAdd(sum, term, &sum) || sum >= run_extent) {
        return int64_t{-1};
      }
    }
    return sum;
  };
  for (int r = 0; r < runs();) {
    if (largest(r) >= 0) {
      ++r;
    } else if (r + 1 == runs()) {  // Excluded by last_index < size.
      return refuse("its indices overflow the level");
    } else {
      first.erase(first.begin() + r + 1);  // Merge run r with run r + 1.
    }
  }

  NarrowedLevel out;
  out.start.resize(leaves);
  out.step.assign(leaves, 1);
  out.extent.assign(leaves, 1);
  for (int a = 0; a < leaves; ++a) out.start[a] = digits[a];
  for (int r = 0; r < runs(); ++r) {
    const int a = first[r];
    const int b = first[r + 1] - 1;
    if (a == b) {
      int64_t step = 0;
      for (int j = 1; j < values; ++j) step = std::gcd(step, digit(j, r));
      if (step == 0) continue;  // Nothing moves along leaf a.
      out.step[a] = step;
      out.extent[a] = (largest(r) - out.start[a]) / step + 1;
      continue;
    }
    // Leaves a..b read like one: leaf a stepped seamlessly, the inner leaves
    // whole, leaf b stepped by 1 up to the largest digit reached.
    int64_t step = extents[a];
    for (int j = 1; j < values; ++j) step = std::gcd(step, digit(j, r));
    auto wraps = [&](int leaf) {
      // The top-level mode the leaf belongs to, for the message.
      const IntTuple::Elements modes = placement.shape().TopElements();
      int mode = 0;
      while (mode + 1 < modes.size() && modes.leaf[mode + 1] <= leaf) ++mode;
      return refuse(absl::StrCat(
          "the coordinates it reaches wrap around leaf ", leaf, " (extent ",
          extents[leaf], ", in mode ", mode, ") from coordinate ",
          out.start[leaf], " into leaf ", leaf + 1,
          ", so no box of the level's leaves that starts there holds them"));
    };
    if (out.start[a] >= step) return wraps(a);
    for (int j = a + 1; j < b; ++j) {
      if (out.start[j] != 0) return wraps(j);
    }
    out.step[a] = step;
    out.extent[a] = extents[a] / step;
    for (int j = a + 1; j < b; ++j) out.extent[j] = extents[j];
    out.extent[b] = largest(r) / (weight[b] / weight[a]) - out.start[b] + 1;
  }
  out.whole = base == 0;
  for (int a = 0; a < leaves && out.whole; ++a) {
    out.whole =
        out.extent[a] == extents[a] && (out.step[a] == 1 || extents[a] == 1);
  }

  // The box as a layout of level indices, coalesced where its leaves read
  // like one; every reached index has unique digits in it.
  struct BoxMode {
    int64_t extent, stride, weight;
  };
  absl::InlinedVector<BoxMode, 8> box;
  int64_t box_size = 1;
  for (int a = 0; a < leaves; ++a) {
    if (out.extent[a] == 1) continue;
    const int64_t stride = out.step[a] * weight[a];  // Below size.
    int64_t seam;  // Where the previous leaf of the box ends.
    if (!box.empty() &&
        CheckedMul(box.back().extent, box.back().stride, &seam) &&
        seam == stride) {
      box.back().extent *= out.extent[a];
    } else {
      box.push_back({out.extent[a], stride, 0});
    }
  }
  for (BoxMode& m : box) {
    m.weight = box_size;
    box_size *= m.extent;  // At most size.
  }
  absl::InlinedVector<int64_t, 8> alpha(r_extents.size(), 0);
  absl::InlinedVector<int64_t, 8> reach(box.size(), 0);
  for (const Move& m : moves) {
    int64_t rest = m.stride;
    for (size_t b = box.size(); b-- > 0;) {
      const int64_t q = Quotient(rest, box[b].stride);
      if (q >= box[b].extent) break;
      rest -= q * box[b].stride;
      alpha[m.leaf] += q * box[b].weight;
      reach[b] += m.last * q;  // At most the box's extent: checked below.
      if (reach[b] >= box[b].extent) rest = -1;
      if (rest <= 0) break;
    }
    if (rest != 0) {  // Phase one built the box so that this never happens.
      return refuse("no box of the level's leaves re-expresses its indices");
    }
  }

  // The box as the level's placement, in the placement's own shape.
  absl::InlinedVector<int64_t, 8> box_strides(leaves);
  for (int a = 0; a < leaves; ++a) {
    int64_t shift;
    if (!CheckedMul(out.start[a], strides[a], &shift) ||
        !CheckedAdd(out.offset_shift, shift, &out.offset_shift) ||
        !CheckedMul(out.step[a], strides[a], &box_strides[a])) {
      return refuse("its offset overflows");
    }
  }
  STRATA_ASSIGN_OR_RETURN(
      out.placement,
      Layout::Create(placement.shape().TransformLeaves(
                         [&](size_t a, int64_t) { return out.extent[a]; }),
                     placement.stride().TransformLeaves(
                         [&](size_t a, int64_t) { return box_strides[a]; })));
  STRATA_ASSIGN_OR_RETURN(
      out.adjacent,
      Layout::Create(reached.shape(),
                     reached.stride().TransformLeaves(
                         [&](size_t k, int64_t) { return alpha[k]; })));
  return out;
}

}  // namespace views_internal
}  // namespace strata
