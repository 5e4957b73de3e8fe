#include "layout/algebra.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/status_macros.h"
#include "layout/checked_math.h"

namespace strata {
namespace {

struct Mode {
  int64_t extent;
  int64_t stride;
  // For composition results: the coalesced mode of A this mode steps through
  // (-1 for none) and the step in units of that mode's digits.
  int a_mode = -1;
  int64_t digit_step = 1;
};
using Modes = absl::InlinedVector<Mode, 8>;

Modes Leaves(const Layout& layout) {
  Modes modes;
  const auto extents = layout.shape().leaves();
  const auto strides = layout.stride().leaves();
  for (size_t k = 0; k < extents.size(); ++k) {
    modes.push_back({extents[k], strides[k]});
  }
  return modes;
}

// The flat layout of `modes`: 1:0 when empty, s:d for one mode, else
// (s..):(d..).
absl::StatusOr<Layout> FromModes(const Modes& modes) {
  if (modes.empty()) return Layout();
  if (modes.size() == 1) {
    return Layout::Create(modes[0].extent, modes[0].stride);
  }
  absl::InlinedVector<int64_t, 8> extents;
  absl::InlinedVector<int64_t, 8> strides;
  for (const Mode& m : modes) {
    extents.push_back(m.extent);
    strides.push_back(m.stride);
  }
  return Layout::Create(IntTuple::Flat(extents), IntTuple::Flat(strides));
}

absl::Status RequirePositiveExtents(const Layout& layout,
                                    absl::string_view operation) {
  for (int64_t s : layout.shape().leaves()) {
    if (s <= 0) {
      return ValueErrorCat(operation, ": layout ", layout.ToString(),
                           " has an extent ", s,
                           "; the algebra needs extents >= 1");
    }
  }
  return absl::OkStatus();
}

absl::Status RequireNonNegativeStrides(const Layout& layout,
                                       absl::string_view operation) {
  if (!layout.HasNonNegativeStrides()) {
    return ValueErrorCat(operation, ": layout ", layout.ToString(),
                         " has a negative stride");
  }
  return absl::OkStatus();
}

Modes CoalescedModes(const Layout& layout) {
  Modes out;
  for (const Mode& m : Leaves(layout)) {
    if (m.extent == 1) continue;
    int64_t span;
    if (!out.empty() &&
        CheckedMul(out.back().extent, out.back().stride, &span) &&
        span == m.stride) {
      out.back().extent *= m.extent;  // Bounded by size(layout).
      continue;
    }
    out.push_back(m);
  }
  return out;
}

// A o (N:r) for a coalesced A given as `a_modes` (see Composition's contract).
absl::StatusOr<Modes> ComposeWithMode(const Layout& a, const Modes& a_modes,
                                      int64_t extent, int64_t stride) {
  auto inadmissible = [&](absl::string_view why) {
    return ValueErrorCat("composition ", a.ToString(), " o ", extent, ":",
                         stride, " is not admissible: ", why);
  };
  auto overflow = [&]() {
    return ValueErrorCat("composition ", a.ToString(), " o ", extent, ":",
                         stride, " overflows 64-bit arithmetic");
  };
  if (stride < 0)
    return inadmissible("the right operand has a negative stride");
  if (stride == 0) return Modes{{extent, 0}};
  Modes modes = a_modes;
  if (modes.empty()) modes.push_back({1, 0});
  const int last = static_cast<int>(modes.size()) - 1;
  // Step 1: divide out the stride. A' satisfies A'(j) == A(stride * j).
  Modes strided;
  int64_t rest = stride;
  for (size_t k = 0; k + 1 < modes.size(); ++k) {
    const Mode m = modes[k];
    if (rest == 1) {
      strided.push_back({m.extent, m.stride, static_cast<int>(k), 1});
    } else if (rest % m.extent == 0) {
      rest /= m.extent;  // The whole mode is stepped over.
    } else if (m.extent % rest == 0) {
      int64_t d;
      if (!CheckedMul(m.stride, rest, &d)) return overflow();
      strided.push_back({m.extent / rest, d, static_cast<int>(k), rest});
      rest = 1;
    } else {
      return inadmissible(absl::StrCat("stride ", rest, " and extent ",
                                       m.extent, " do not divide one another"));
    }
  }
  int64_t last_stride;
  if (!CheckedMul(modes.back().stride, rest, &last_stride)) return overflow();
  // Step 2: keep the first `extent` values. The last mode extends without
  // bound.
  Modes result;
  int64_t remaining = extent;
  for (const Mode& m : strided) {
    if (remaining == 1) break;
    if (m.extent >= remaining) {
      result.push_back({remaining, m.stride, m.a_mode, m.digit_step});
      remaining = 1;
    } else if (remaining % m.extent == 0) {
      result.push_back(m);
      remaining /= m.extent;
    } else {
      return inadmissible(absl::StrCat(
          "extent ", remaining, " is not divisible by extent ", m.extent));
    }
  }
  if (remaining > 1) result.push_back({remaining, last_stride, last, rest});
  return result;
}

// Composes A with every leaf mode of B, keeping B's structure; appends the
// modes it produced to *pieces for the distributivity check in Composition.
absl::StatusOr<Layout> ComposeImpl(const Layout& a, const Modes& a_modes,
                                   const Layout& b, Modes* pieces) {
  if (b.shape().is_leaf()) {
    STRATA_ASSIGN_OR_RETURN(
        Modes modes,
        ComposeWithMode(a, a_modes, b.shape().value(), b.stride().value()));
    pieces->insert(pieces->end(), modes.begin(), modes.end());
    return FromModes(modes);
  }
  absl::InlinedVector<Layout, 4> parts;
  for (int i = 0; i < b.rank(); ++i) {
    STRATA_ASSIGN_OR_RETURN(Layout part,
                            ComposeImpl(a, a_modes, b.mode(i), pieces));
    parts.push_back(std::move(part));
  }
  return MakeLayout(parts);
}

// NOTE [ Composition distributes over B's modes ]
// Composing mode by mode gives R(c) = sum_i A(B_i(c_i)), which equals A(sum_i
// B_i(c_i)) exactly when no digit of A's coalesced shape carries: for every
// mode k of A but the last (which extends without bound), the largest digits
// the pieces place in mode k must sum to less than s_k. A carry changes the
// value, since coalesced neighbours never satisfy d_{k+1} == s_k * d_k. So this
// check is exact, O(leaves), and rejects B whose modes overlap in A (e.g. A =
// (12,2):(6,3), B = (4,4):(2,2)).
absl::Status CheckDistributes(const Layout& a, const Modes& a_modes,
                              const Layout& b, const Modes& pieces) {
  absl::InlinedVector<int64_t, 8> digit_sum(a_modes.size(), 0);
  for (const Mode& p : pieces) {
    if (p.a_mode < 0 || p.a_mode + 1 >= static_cast<int>(a_modes.size()))
      continue;
    // Bounded by s_k for each piece, so the sum of at most #pieces terms fits.
    digit_sum[p.a_mode] += p.digit_step * (p.extent - 1);
    if (digit_sum[p.a_mode] >= a_modes[p.a_mode].extent) {
      return ValueErrorCat(
          "composition ", a.ToString(), " o ", b.ToString(),
          " is not admissible: the modes of the right operand overlap in mode ",
          p.a_mode, " (", a_modes[p.a_mode].extent, ":",
          a_modes[p.a_mode].stride,
          ") of the coalesced left operand, so A(B(c)) is not a layout");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Layout> Pad(const Layout& layout, int rank) {
  if (layout.rank() >= rank) return layout;
  absl::InlinedVector<Layout, 4> modes;
  for (int i = 0; i < layout.rank(); ++i) modes.push_back(layout.mode(i));
  while (static_cast<int>(modes.size()) < rank) modes.push_back(Layout());
  return MakeLayout(modes);
}

absl::StatusOr<Layout> ZipProduct(const Layout& a, const Layout& b,
                                  bool blocked) {
  const int rank = std::max(a.rank(), b.rank());
  if (rank == 1) {
    STRATA_ASSIGN_OR_RETURN(Layout product, LogicalProduct(a, b));
    if (blocked) return product;
    return MakeLayout({product.mode(1), product.mode(0)});
  }
  STRATA_ASSIGN_OR_RETURN(Layout padded_a, Pad(a, rank));
  STRATA_ASSIGN_OR_RETURN(Layout padded_b, Pad(b, rank));
  STRATA_ASSIGN_OR_RETURN(Layout product, LogicalProduct(padded_a, padded_b));
  const Layout block = product.mode(0);
  const Layout tiles = product.mode(1);
  absl::InlinedVector<Layout, 4> modes;
  for (int i = 0; i < rank; ++i) {
    STRATA_ASSIGN_OR_RETURN(
        Layout mode, blocked ? MakeLayout({block.mode(i), tiles.mode(i)})
                             : MakeLayout({tiles.mode(i), block.mode(i)}));
    modes.push_back(std::move(mode));
  }
  return MakeLayout(modes);
}

absl::Status RequireTilerFits(const Layout& a, absl::Span<const Layout> tiler,
                              absl::string_view operation) {
  if (static_cast<int>(tiler.size()) > a.rank()) {
    return ValueErrorCat(operation, ": tiler of ", tiler.size(),
                         " modes for layout ", a.ToString(), " of rank ",
                         a.rank());
  }
  return absl::OkStatus();
}

// Splits a by-mode logical divide ((t_0,r_0),..,(t_k,r_k),a_..) into tiles and
// rests.
absl::Status UnzipDivide(const Layout& a, absl::Span<const Layout> tiler,
                         absl::InlinedVector<Layout, 4>* tiles,
                         absl::InlinedVector<Layout, 4>* rests) {
  STRATA_RETURN_IF_ERROR(RequireTilerFits(a, tiler, "zipped_divide"));
  for (int i = 0; i < a.rank(); ++i) {
    if (i < static_cast<int>(tiler.size())) {
      STRATA_ASSIGN_OR_RETURN(Layout divided,
                              LogicalDivide(a.mode(i), tiler[i]));
      tiles->push_back(divided.mode(0));
      rests->push_back(divided.mode(1));
    } else {
      rests->push_back(a.mode(i));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Layout> MakeLayout(absl::Span<const Layout> modes) {
  absl::InlinedVector<IntTuple, 4> shapes;
  absl::InlinedVector<IntTuple, 4> strides;
  for (const Layout& m : modes) {
    shapes.push_back(m.shape());
    strides.push_back(m.stride());
  }
  return Layout::Create(IntTuple::Tuple(shapes), IntTuple::Tuple(strides));
}

Layout Coalesce(const Layout& layout) {
  if (layout.size() == 0) return *Layout::Create(0, 0);
  // Same function, so same (already validated) bounds.
  return *FromModes(CoalescedModes(layout));
}

absl::StatusOr<Layout> CoalesceByMode(const Layout& layout,
                                      const IntTuple& profile) {
  if (profile.is_leaf()) return Coalesce(layout);
  if (profile.rank() > layout.rank() || layout.shape().is_leaf()) {
    return ValueErrorCat("coalesce: profile ", profile.ToString(), " has ",
                         profile.rank(), " modes, layout ", layout.ToString(),
                         " has ", layout.rank());
  }
  absl::InlinedVector<Layout, 4> modes;
  for (int i = 0; i < layout.rank(); ++i) {
    if (i < profile.rank()) {
      STRATA_ASSIGN_OR_RETURN(Layout m,
                              CoalesceByMode(layout.mode(i), profile[i]));
      modes.push_back(std::move(m));
    } else {
      modes.push_back(layout.mode(i));
    }
  }
  return MakeLayout(modes);
}

absl::StatusOr<Layout> Composition(const Layout& a, const Layout& b) {
  STRATA_RETURN_IF_ERROR(RequirePositiveExtents(a, "composition"));
  STRATA_RETURN_IF_ERROR(RequirePositiveExtents(b, "composition"));
  const Modes a_modes = CoalescedModes(a);
  Modes pieces;
  STRATA_ASSIGN_OR_RETURN(Layout result, ComposeImpl(a, a_modes, b, &pieces));
  STRATA_RETURN_IF_ERROR(CheckDistributes(a, a_modes, b, pieces));
  return result;
}

absl::StatusOr<Layout> Composition(const Layout& a,
                                   absl::Span<const Layout> tiler) {
  STRATA_RETURN_IF_ERROR(RequireTilerFits(a, tiler, "composition"));
  if (a.shape().is_leaf() && tiler.size() == 1) return Composition(a, tiler[0]);
  absl::InlinedVector<Layout, 4> modes;
  for (int i = 0; i < a.rank(); ++i) {
    if (i < static_cast<int>(tiler.size())) {
      STRATA_ASSIGN_OR_RETURN(Layout m, Composition(a.mode(i), tiler[i]));
      modes.push_back(std::move(m));
    } else {
      modes.push_back(a.mode(i));
    }
  }
  return MakeLayout(modes);
}

absl::StatusOr<Layout> Complement(const Layout& layout, int64_t cotarget) {
  STRATA_RETURN_IF_ERROR(RequirePositiveExtents(layout, "complement"));
  STRATA_RETURN_IF_ERROR(RequireNonNegativeStrides(layout, "complement"));
  if (cotarget < 1) {
    return ValueErrorCat("complement of ", layout.ToString(), ": cotarget ",
                         cotarget, " is not positive");
  }
  Modes modes;
  for (const Mode& m : Leaves(layout)) {
    if (m.extent != 1 && m.stride != 0) modes.push_back(m);
  }
  std::sort(modes.begin(), modes.end(), [](const Mode& x, const Mode& y) {
    return x.stride != y.stride ? x.stride < y.stride : x.extent < y.extent;
  });
  Modes result;
  int64_t current = 1;
  for (const Mode& m : modes) {
    if (m.stride % current != 0) {
      return ValueErrorCat("complement of ", layout.ToString(),
                           " is not admissible: stride ", m.stride,
                           " is not a multiple of ", current,
                           " (the modes overlap or interleave)");
    }
    result.push_back({m.stride / current, current});
    if (!CheckedMul(m.extent, m.stride, &current)) {
      return ValueErrorCat("complement of ", layout.ToString(),
                           " overflows 64-bit arithmetic");
    }
  }
  result.push_back({CeilDiv(cotarget, current), current});
  STRATA_ASSIGN_OR_RETURN(Layout flat, FromModes(result));
  return Coalesce(flat);
}

absl::StatusOr<Layout> RightInverse(const Layout& layout) {
  STRATA_RETURN_IF_ERROR(RequirePositiveExtents(layout, "right_inverse"));
  const Modes modes = CoalescedModes(layout);
  // Column-major position of each coalesced mode in L's domain.
  absl::InlinedVector<int64_t, 8> position(modes.size());
  int64_t running = 1;
  for (size_t k = 0; k < modes.size(); ++k) {
    position[k] = running;
    running *= modes[k].extent;  // Bounded by size(layout).
  }
  Modes result;
  int64_t current = 1;
  while (true) {
    size_t k = 0;
    while (k < modes.size() && modes[k].stride != current) ++k;
    if (k == modes.size()) break;
    result.push_back({modes[k].extent, position[k]});
    if (!CheckedMul(current, modes[k].extent, &current)) break;
  }
  STRATA_ASSIGN_OR_RETURN(Layout flat, FromModes(result));
  return Coalesce(flat);
}

absl::StatusOr<Layout> LeftInverse(const Layout& layout) {
  STRATA_RETURN_IF_ERROR(RequirePositiveExtents(layout, "left_inverse"));
  STRATA_RETURN_IF_ERROR(RequireNonNegativeStrides(layout, "left_inverse"));
  const Layout coalesced = Coalesce(layout);
  for (const Mode& m : Leaves(coalesced)) {
    if (m.extent > 1 && m.stride == 0) {
      return ValueErrorCat("left_inverse: layout ", layout.ToString(),
                           " is not injective (a mode of extent ", m.extent,
                           " has stride 0)");
    }
  }
  auto complement = Complement(coalesced, coalesced.cosize());
  if (!complement.ok()) {
    return ValueErrorCat("left_inverse: layout ", layout.ToString(),
                         " is not injective in the admissible sense: ",
                         complement.status().message());
  }
  STRATA_ASSIGN_OR_RETURN(Layout full, MakeLayout({coalesced, *complement}));
  return RightInverse(full);
}

absl::StatusOr<Layout> LogicalDivide(const Layout& a, const Layout& b) {
  STRATA_RETURN_IF_ERROR(RequirePositiveExtents(a, "logical_divide"));
  STRATA_ASSIGN_OR_RETURN(Layout rest, Complement(b, a.size()));
  STRATA_ASSIGN_OR_RETURN(Layout tiler, MakeLayout({b, rest}));
  return Composition(a, tiler);
}

absl::StatusOr<Layout> LogicalDivide(const Layout& a,
                                     absl::Span<const Layout> tiler) {
  STRATA_RETURN_IF_ERROR(RequireTilerFits(a, tiler, "logical_divide"));
  if (a.shape().is_leaf() && tiler.size() == 1) {
    return LogicalDivide(a, tiler[0]);
  }
  absl::InlinedVector<Layout, 4> modes;
  for (int i = 0; i < a.rank(); ++i) {
    if (i < static_cast<int>(tiler.size())) {
      STRATA_ASSIGN_OR_RETURN(Layout m, LogicalDivide(a.mode(i), tiler[i]));
      modes.push_back(std::move(m));
    } else {
      modes.push_back(a.mode(i));
    }
  }
  return MakeLayout(modes);
}

absl::StatusOr<Layout> ZippedDivide(const Layout& a, const Layout& b) {
  return LogicalDivide(a, b);
}

absl::StatusOr<Layout> ZippedDivide(const Layout& a,
                                    absl::Span<const Layout> tiler) {
  absl::InlinedVector<Layout, 4> tiles;
  absl::InlinedVector<Layout, 4> rests;
  STRATA_RETURN_IF_ERROR(UnzipDivide(a, tiler, &tiles, &rests));
  STRATA_ASSIGN_OR_RETURN(Layout tile, MakeLayout(tiles));
  STRATA_ASSIGN_OR_RETURN(Layout rest, MakeLayout(rests));
  return MakeLayout({tile, rest});
}

absl::StatusOr<Layout> TiledDivide(const Layout& a, const Layout& b) {
  STRATA_ASSIGN_OR_RETURN(Layout divided, LogicalDivide(a, b));
  const Layout rest = divided.mode(1);
  absl::InlinedVector<Layout, 4> modes = {divided.mode(0)};
  for (int i = 0; i < rest.rank(); ++i) modes.push_back(rest.mode(i));
  return MakeLayout(modes);
}

absl::StatusOr<Layout> TiledDivide(const Layout& a,
                                   absl::Span<const Layout> tiler) {
  absl::InlinedVector<Layout, 4> tiles;
  absl::InlinedVector<Layout, 4> modes(1);
  STRATA_RETURN_IF_ERROR(UnzipDivide(a, tiler, &tiles, &modes));
  STRATA_ASSIGN_OR_RETURN(modes[0], MakeLayout(tiles));
  return MakeLayout(modes);
}

absl::StatusOr<Layout> LogicalProduct(const Layout& a, const Layout& b) {
  STRATA_RETURN_IF_ERROR(RequirePositiveExtents(a, "logical_product"));
  STRATA_RETURN_IF_ERROR(RequirePositiveExtents(b, "logical_product"));
  int64_t cotarget;
  if (!CheckedMul(a.size(), b.cosize(), &cotarget)) {
    return ValueErrorCat("logical_product ", a.ToString(), " x ", b.ToString(),
                         " overflows 64-bit arithmetic");
  }
  STRATA_ASSIGN_OR_RETURN(Layout rest, Complement(a, cotarget));
  STRATA_ASSIGN_OR_RETURN(Layout tiles, Composition(rest, b));
  return MakeLayout({a, tiles});
}

absl::StatusOr<Layout> BlockedProduct(const Layout& a, const Layout& b) {
  return ZipProduct(a, b, /*blocked=*/true);
}

absl::StatusOr<Layout> RakedProduct(const Layout& a, const Layout& b) {
  return ZipProduct(a, b, /*blocked=*/false);
}

}  // namespace strata
