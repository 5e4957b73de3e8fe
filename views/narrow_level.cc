#include "views/narrow_level.h"

#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace views_internal {

namespace {

// x / d and x % d for x >= 0 and d > 0, by shift and mask where d is a power
// of two (leaf extents and box strides mostly are) and without dividing where
// x < d (most digits are 0): a 64-bit division costs tens of cycles.
inline int64_t Quotient(int64_t x, int64_t d) {
  if ((d & (d - 1)) == 0) return x >> __builtin_ctzll(d);
  return x < d ? 0 : x / d;
}
inline int64_t Remainder(int64_t x, int64_t d) {
  if ((d & (d - 1)) == 0) return x & (d - 1);
  return x < d ? x : x % d;
}

// gcd(a, b) for a, b >= 0 by Stein's binary algorithm: std::gcd divides, and
// a 64-bit division costs tens of cycles.
inline int64_t Gcd(int64_t a, int64_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  const int shift = __builtin_ctzll(a | b);
  a >>= __builtin_ctzll(a);
  do {
    b >>= __builtin_ctzll(b);
    if (a > b) std::swap(a, b);
    b -= a;
  } while (b != 0);
  return a << shift;
}

}  // namespace

absl::Status NarrowLevelInto(const Layout& placement, int64_t base,
                             const Layout& reached, bool write_whole,
                             LevelBox* box_out, Layout* new_placement,
                             Layout* new_adjacent) {
  // Raw pointers: a span's operator[] checks its bound on every access.
  const int64_t* const extents = placement.shape().leaves().data();
  const int64_t* const strides = placement.stride().leaves().data();
  const int leaves = placement.shape().num_leaves();
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
  const int64_t* const r_extents = reached.shape().leaves().data();
  const int64_t* const r_strides = reached.stride().leaves().data();
  const int r_leaves = reached.shape().num_leaves();
  // Scratch space, carved from one buffer on the stack (or, for large
  // layouts, the heap): the loops below read and write it through raw
  // pointers, which no store into a vector's size can alias. Every entry is
  // written before it is read: no zeroing. Its carvings: move_leaf,
  // move_last, move_stride and alpha (one per leaf of `reached`); weight
  // (leaves + 1); digits (one row per move and base's, at most r_leaves + 1
  // rows); top, common, box_extent, box_stride, box_weight, reach and
  // box_strides (one per leaf of the level).
  const int64_t scratch_size = int64_t{4} * r_leaves + (leaves + 1) +
                               int64_t{r_leaves + 1} * leaves +
                               int64_t{7} * leaves;
  constexpr int kInlineScratch = 256;
  int64_t inline_scratch[kInlineScratch];
  std::unique_ptr<int64_t[]> heap_scratch;
  int64_t* next = inline_scratch;
  if (scratch_size > kInlineScratch) {
    heap_scratch.reset(new int64_t[scratch_size]);
    next = heap_scratch.get();
  }
  auto carve = [&next](int64_t n) {
    int64_t* begin = next;
    next += n;
    return begin;
  };
  // The leaves of `reached` that move: leaf, last coordinate n_k - 1, and
  // stride, one entry per move.
  int64_t* const move_leaf = carve(r_leaves);
  int64_t* const move_last = carve(r_leaves);
  int64_t* const move_stride = carve(r_leaves);
  // The re-expressed strides, one per leaf of `reached`, summed into below
  // (zeroed here: a loop of its own became a call to memset).
  int64_t* const alpha = carve(r_leaves);
  int num_moves = 0;
  int64_t last_index = base;
  for (int k = 0; k < r_leaves; ++k) {
    alpha[k] = 0;
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
    move_leaf[num_moves] = k;
    move_last[num_moves] = r_extents[k] - 1;
    move_stride[num_moves] = r_strides[k];
    ++num_moves;
  }
  if (last_index >= size) {
    return refuse(
        absl::StrCat("it reaches past the level's last index ", size - 1));
  }
  // Colexicographic weights of the leaves; bounded by size.
  int64_t* const weight = carve(leaves + 1);
  // The running product in a register: through memory, each step waited
  // on the store of the one before.
  int64_t running_weight = 1;
  for (int a = 0; a < leaves; ++a) {
    weight[a] = running_weight;
    running_weight *= extents[a];
  }
  weight[leaves] = running_weight;

  LevelBox& out = *box_out;
  out.start.resize_for_overwrite(leaves);
  out.step.assign(leaves, 1);
  out.extent.assign(leaves, 1);
  out.offset_shift = 0;
  int64_t* const start = out.start.data();
  int64_t* const step = out.step.data();
  int64_t* const extent = out.extent.data();
  // base's digits: the box's start. Extents of 0 leave the level empty,
  // excluded by base < size.
  {
    int64_t rest = base;
    for (int a = 0; a < leaves; ++a) {
      start[a] = Remainder(rest, extents[a]);
      rest = Quotient(rest, extents[a]);
    }
  }
  // Where no leaf overflows on its own (slices, and boxes of whole leaves),
  // every run is one leaf: its largest digit and step come from one pass
  // over the moves' digits, with no runs to merge. Each move's digits are
  // read off as the pass goes, low leaves first, until none are left (most
  // strides are one digit).
  int64_t* const top = carve(leaves);
  int64_t* const common = carve(leaves);
  for (int a = 0; a < leaves; ++a) {
    top[a] = start[a];
    common[a] = 0;
  }
  bool overflows = false;
  for (int j = 0; j < num_moves; ++j) {
    const int64_t last = move_last[j];
    int64_t rest = move_stride[j];  // Below size: it ends within the leaves.
    for (int a = 0; rest != 0 && a < leaves; ++a) {
      const int64_t d = Remainder(rest, extents[a]);
      rest = Quotient(rest, extents[a]);
      if (d == 0) continue;  // No term, and gcd(g, 0) = g.
      int64_t term;
      overflows |= __builtin_mul_overflow(last, d, &term);
      overflows |= __builtin_add_overflow(top[a], term, &top[a]);
      common[a] = Gcd(common[a], d);
    }
  }
  for (int a = 0; a < leaves; ++a) overflows |= top[a] >= extents[a];
  if (!overflows) {
    for (int a = 0; a < leaves; ++a) {
      if (common[a] == 0) continue;  // Nothing moves along leaf a.
      step[a] = common[a];
      extent[a] = Quotient(top[a] - start[a], common[a]) + 1;
    }
  } else {
    // Every digit the search reads, decomposed once (one division per leaf
    // and value, where reading each digit afresh divides three times): row 0
    // holds base's digits, row 1 + j those of move_stride[j].
    const int values = num_moves + 1;
    int64_t* const digits = carve(int64_t{values} * leaves);
    for (int v = 0; v < values; ++v) {
      int64_t rest = v == 0 ? base : move_stride[v - 1];
      int64_t* row = digits + v * leaves;
      for (int a = 0; a < leaves; ++a) {
        row[a] = Remainder(rest, extents[a]);
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
        if (!CheckedMul(move_last[j], digit(j + 1, r), &term) ||
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

    for (int r = 0; r < runs(); ++r) {
      const int a = first[r];
      const int b = first[r + 1] - 1;
      if (a == b) {
        int64_t run_step = 0;
        for (int j = 1; j < values; ++j) run_step = Gcd(run_step, digit(j, r));
        if (run_step == 0) continue;  // Nothing moves along leaf a.
        step[a] = run_step;
        extent[a] = (largest(r) - start[a]) / run_step + 1;
        continue;
      }
      // Leaves a..b read like one: leaf a stepped seamlessly, the inner leaves
      // whole, leaf b stepped by 1 up to the largest digit reached.
      int64_t run_step = extents[a];
      for (int j = 1; j < values; ++j) run_step = Gcd(run_step, digit(j, r));
      auto wraps = [&](int leaf) {
        // The top-level mode the leaf belongs to, for the message.
        const IntTuple::Elements modes = placement.shape().TopElements();
        int mode = 0;
        while (mode + 1 < modes.size() && modes.leaf[mode + 1] <= leaf) ++mode;
        return refuse(absl::StrCat(
            "the coordinates it reaches wrap around leaf ", leaf, " (extent ",
            extents[leaf], ", in mode ", mode, ") from coordinate ",
            start[leaf], " into leaf ", leaf + 1,
            ", so no box of the level's leaves that starts there holds them"));
      };
      if (start[a] >= run_step) return wraps(a);
      for (int j = a + 1; j < b; ++j) {
        if (start[j] != 0) return wraps(j);
      }
      step[a] = run_step;
      extent[a] = extents[a] / run_step;
      for (int j = a + 1; j < b; ++j) extent[j] = extents[j];
      extent[b] = largest(r) / (weight[b] / weight[a]) - start[b] + 1;
    }
  }
  out.whole = base == 0;
  for (int a = 0; a < leaves && out.whole; ++a) {
    out.whole = extent[a] == extents[a] && (step[a] == 1 || extents[a] == 1);
  }
  if (out.whole && !write_whole) return absl::OkStatus();

  // The box as a layout of level indices, coalesced where its leaves read
  // like one; every reached index has unique digits in it.
  // Mode b of the box: box_extent[b] : box_stride[b], box_weight[b] its
  // colexicographic weight in the box.
  int64_t* const box_extent = carve(leaves);
  int64_t* const box_stride = carve(leaves);
  int64_t* const box_weight = carve(leaves);
  int modes = 0;
  int64_t box_size = 1;
  for (int a = 0; a < leaves; ++a) {
    if (extent[a] == 1) continue;
    const int64_t stride = step[a] * weight[a];  // Below size.
    int64_t seam;  // Where the previous leaf of the box ends.
    if (modes > 0 &&
        CheckedMul(box_extent[modes - 1], box_stride[modes - 1], &seam) &&
        seam == stride) {
      box_extent[modes - 1] *= extent[a];
    } else {
      box_extent[modes] = extent[a];
      box_stride[modes] = stride;
      ++modes;
    }
  }
  // How far the reached indices go along each mode of the box.
  int64_t* const reach = carve(leaves);
  for (int b = 0; b < modes; ++b) {
    box_weight[b] = box_size;
    box_size *= box_extent[b];  // At most size.
    reach[b] = 0;
  }

  for (int j = 0; j < num_moves; ++j) {
    const int64_t leaf = move_leaf[j];
    const int64_t last = move_last[j];
    int64_t rest = move_stride[j];
    for (int b = modes; b-- > 0;) {
      const int64_t q = Quotient(rest, box_stride[b]);
      if (q >= box_extent[b]) break;
      rest -= q * box_stride[b];
      alpha[leaf] += q * box_weight[b];
      reach[b] += last * q;  // At most the box's extent: checked below.
      if (reach[b] >= box_extent[b]) rest = -1;
      if (rest <= 0) break;
    }
    if (rest != 0) {  // Phase one built the box so that this never happens.
      return refuse("no box of the level's leaves re-expresses its indices");
    }
  }

  // The box as the level's placement, in the placement's own shape. Its
  // bounds are sums of the leaves' parts (NOTE [ Layout bounds ] in
  // layout/layout.cc), each at most the placement's own part: (n_a - 1) *
  // g_a <= e_a - 1 for every leaf of the box, so neither they nor the size
  // overflow.
  int64_t* const box_strides = carve(leaves);
  LayoutAssembler::DerivedBounds placement_bounds = {1, 0, 0};
  for (int a = 0; a < leaves; ++a) {
    int64_t shift;
    if (!CheckedMul(start[a], strides[a], &shift) ||
        !CheckedAdd(out.offset_shift, shift, &out.offset_shift) ||
        !CheckedMul(step[a], strides[a], &box_strides[a])) {
      return refuse("its offset overflows");
    }
    placement_bounds.size *= extent[a];
    const int64_t part = (extent[a] - 1) * box_strides[a];
    (part >= 0 ? placement_bounds.max_index : placement_bounds.min_index) +=
        part;
  }
  STRATA_RETURN_IF_ERROR(LayoutAssembler::WithLeaves(
      placement, absl::MakeConstSpan(out.extent.data(), out.extent.size()),
      absl::MakeConstSpan(box_strides, leaves), new_placement,
      &placement_bounds));
  // The reached indices re-expressed: strides alpha >= 0, the largest index
  // sum_b reach[b] * weight_b < box_size (checked above), and `reached`'s
  // size. An empty `reached` has its bounds computed.
  LayoutAssembler::DerivedBounds adjacent_bounds = {reached.size(), 0, 0};
  for (int b = 0; b < modes; ++b) {
    adjacent_bounds.max_index += reach[b] * box_weight[b];
  }
  // Last: `new_adjacent` may be `reached`.
  return LayoutAssembler::WithShapeOf(
      reached, absl::MakeConstSpan(alpha, r_leaves), new_adjacent,
      reached.size() > 0 ? &adjacent_bounds : nullptr);
}

absl::StatusOr<NarrowedLevel> NarrowLevel(const Layout& placement, int64_t base,
                                          const Layout& reached) {
  NarrowedLevel out;
  STRATA_RETURN_IF_ERROR(NarrowLevelInto(placement, base, reached,
                                         /*write_whole=*/true, &out,
                                         &out.placement, &out.adjacent));
  return out;
}

}  // namespace views_internal
}  // namespace strata
