#include "layout/algebra.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

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

// A leaf of extent 1 never steps, so its stride does not matter.
absl::Status RequireNonNegativeStrides(const Layout& layout,
                                       absl::string_view operation) {
  const auto extents = layout.shape().leaves();
  const auto strides = layout.stride().leaves();
  for (size_t k = 0; k < extents.size(); ++k) {
    if (extents[k] > 1 && strides[k] < 0) {
      return ValueErrorCat(operation, ": layout ", layout.ToString(),
                           " has a negative stride ", strides[k], " at leaf ",
                           k, " (extent ", extents[k], ")");
    }
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

// Layouts of one shape coalesced together: a neighbour merges only where it
// merges in every operand, so each operand is still represented exactly over
// shared extents.
struct JointOperand {
  absl::InlinedVector<int64_t, 8> extents;
  std::vector<absl::InlinedVector<int64_t, 8>> strides;  // [operand][mode]
  // The operands, for messages, which name them (built only on failure:
  // every view of a block-scaled Tensor composes).
  absl::Span<const Layout> sources;
  std::string Text() const {
    std::string text;
    for (size_t j = 0; j < sources.size(); ++j) {
      absl::StrAppend(&text, j == 0 ? "" : " and ", sources[j].ToString());
    }
    return text;
  }
};

JointOperand JointCoalesce(absl::Span<const Layout> as) {
  JointOperand out;
  out.strides.resize(as.size());
  const auto extents = as[0].shape().leaves();
  for (size_t k = 0; k < extents.size(); ++k) {
    if (extents[k] == 1) continue;
    bool merges = !out.extents.empty();
    for (size_t j = 0; merges && j < as.size(); ++j) {
      int64_t span;
      merges = CheckedMul(out.extents.back(), out.strides[j].back(), &span) &&
               span == as[j].stride().leaves()[k];
    }
    if (merges) {
      out.extents.back() *= extents[k];  // Bounded by the size.
      continue;
    }
    out.extents.push_back(extents[k]);
    for (size_t j = 0; j < as.size(); ++j) {
      out.strides[j].push_back(as[j].stride().leaves()[k]);
    }
  }
  if (out.extents.empty()) {  // One element: a single mode of extent 1.
    out.extents.push_back(1);
    for (auto& strides : out.strides) strides.push_back(0);
  }
  out.sources = as;
  return out;
}

// One mode of a composition result: `extent` steps of `digit_step` digits
// through mode `a_mode` of the coalesced operand (a_mode -1: stride 0).
struct Piece {
  int64_t extent;
  int a_mode;
  int64_t digit_step;
};
using Pieces = absl::InlinedVector<Piece, 8>;

// A o (N:r) (see Composition's contract), as pieces of A's modes.
absl::StatusOr<Pieces> ComposeLeaf(const JointOperand& a, int64_t extent,
                                   int64_t stride) {
  auto inadmissible = [&](absl::string_view why) {
    return ValueErrorCat("composition ", a.Text(), " o ", extent, ":", stride,
                         " is not admissible: ", why);
  };
  // As in CuTe, a mode of extent 1 only reaches B(0) == 0, whatever its stride,
  // and a stride-0 mode only reaches A(0): both give extent:0, free of the
  // divisibility conditions.
  if (extent == 1 || stride == 0) return Pieces{{extent, -1, 0}};
  if (stride < 0) {
    return inadmissible("the right operand has a negative stride");
  }
  const int last = static_cast<int>(a.extents.size()) - 1;
  // Step 1: divide out the stride. A'(j) == A(stride * j).
  Pieces strided;
  int64_t rest = stride;
  for (int k = 0; k < last; ++k) {
    const int64_t e = a.extents[k];
    if (rest == 1) {
      strided.push_back({e, k, 1});
    } else if (rest % e == 0) {
      rest /= e;  // The whole mode is stepped over.
    } else if (e % rest == 0) {
      strided.push_back({e / rest, k, rest});
      rest = 1;
    } else {
      return inadmissible(absl::StrCat("stride ", rest, " and extent ", e,
                                       " do not divide one another"));
    }
  }
  // Step 2: keep the first `extent` values. The last mode extends without
  // bound.
  Pieces result;
  int64_t remaining = extent;
  for (const Piece& p : strided) {
    if (remaining == 1) break;
    if (p.extent >= remaining) {
      result.push_back({remaining, p.a_mode, p.digit_step});
      remaining = 1;
    } else if (remaining % p.extent == 0) {
      result.push_back(p);
      remaining /= p.extent;
    } else {
      return inadmissible(absl::StrCat(
          "extent ", remaining, " is not divisible by extent ", p.extent));
    }
  }
  if (remaining > 1) result.push_back({remaining, last, rest});
  return result;
}

// Operand j's layout of `pieces`.
absl::StatusOr<Layout> PiecesLayout(const JointOperand& a, size_t j,
                                    const Pieces& pieces) {
  Modes modes;
  for (const Piece& p : pieces) {
    int64_t stride = 0;
    if (p.a_mode >= 0 &&
        !CheckedMul(a.strides[j][p.a_mode], p.digit_step, &stride)) {
      return ValueErrorCat("composition with ", a.Text(),
                           " overflows 64-bit arithmetic");
    }
    modes.push_back({p.extent, stride});
  }
  return FromModes(modes);
}

// Composes every operand with every leaf mode of B, keeping B's structure;
// appends the pieces it produced to *all_pieces for the distributivity check.
absl::StatusOr<std::vector<Layout>> ComposeTree(const JointOperand& a,
                                                const Layout& b,
                                                Pieces* all_pieces) {
  std::vector<Layout> results;
  if (b.shape().is_leaf()) {
    STRATA_ASSIGN_OR_RETURN(
        Pieces pieces, ComposeLeaf(a, b.shape().value(), b.stride().value()));
    all_pieces->insert(all_pieces->end(), pieces.begin(), pieces.end());
    for (size_t j = 0; j < a.strides.size(); ++j) {
      STRATA_ASSIGN_OR_RETURN(Layout r, PiecesLayout(a, j, pieces));
      results.push_back(std::move(r));
    }
    return results;
  }
  std::vector<absl::InlinedVector<Layout, 4>> parts(a.strides.size());
  for (int i = 0; i < b.rank(); ++i) {
    STRATA_ASSIGN_OR_RETURN(std::vector<Layout> sub,
                            ComposeTree(a, b.mode(i), all_pieces));
    for (size_t j = 0; j < sub.size(); ++j)
      parts[j].push_back(std::move(sub[j]));
  }
  for (const auto& p : parts) {
    STRATA_ASSIGN_OR_RETURN(Layout r, MakeLayout(p));
    results.push_back(std::move(r));
  }
  return results;
}

// NOTE [ Composition distributes over B's modes ]
// Composing mode by mode gives R(c) = sum_i A(B_i(c_i)), which equals A(start +
// sum_i B_i(c_i)) - A(start) exactly when no digit of A's coalesced shape
// carries: for every mode k of A but the last (which extends without bound),
// start's digit plus the largest digits the pieces place in mode k must stay
// below s_k. A carry changes the value, since coalesced neighbours never
// satisfy d_{k+1} == s_k * d_k. So this check is exact, O(leaves), and rejects
// B whose modes overlap in A (e.g. A = (12,2):(6,3), B = (4,4):(2,2)) and
// starts that make a slice wrap (A = (2,3):(1,10), start 1, B = 2:1).
absl::Status CheckDistributes(const JointOperand& a,
                              absl::Span<const int64_t> start_digits,
                              const Layout& b, const Pieces& pieces) {
  const int last = static_cast<int>(a.extents.size()) - 1;
  absl::InlinedVector<int64_t, 8> digit_sum(start_digits.begin(),
                                            start_digits.end());
  for (const Piece& p : pieces) {
    if (p.a_mode < 0 || p.a_mode == last) continue;
    // Each term is below s_k, so the running sum (checked against s_k) cannot
    // overflow.
    digit_sum[p.a_mode] += p.digit_step * (p.extent - 1);
    if (digit_sum[p.a_mode] >= a.extents[p.a_mode]) {
      return ValueErrorCat(
          "composition ", a.Text(), " o ", b.ToString(),
          start_digits.empty() ? "" : " at an offset",
          " is not admissible: the right operand's modes overlap or wrap in "
          "mode ",
          p.a_mode, " (extent ", a.extents[p.a_mode],
          ") of the coalesced left operand, so the result is not a layout");
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

using BinaryLayoutOp = absl::StatusOr<Layout> (*)(const Layout&, const Layout&);

// The by-mode form of `op`: R_i = op(A_i, tiler_i) for i < tiler.size(), R_i =
// A_i beyond; a leaf A with one tiler gives op(A, tiler_0). Errors: a tiler
// longer than rank(A) (naming `operation`), and those of op.
absl::StatusOr<Layout> ByMode(const Layout& a, absl::Span<const Layout> tiler,
                              BinaryLayoutOp op, absl::string_view operation) {
  STRATA_RETURN_IF_ERROR(RequireTilerFits(a, tiler, operation));
  if (a.shape().is_leaf() && tiler.size() == 1) return op(a, tiler[0]);
  absl::InlinedVector<Layout, 4> modes;
  for (int i = 0; i < a.rank(); ++i) {
    if (i < static_cast<int>(tiler.size())) {
      STRATA_ASSIGN_OR_RETURN(Layout m, op(a.mode(i), tiler[i]));
      modes.push_back(std::move(m));
    } else {
      modes.push_back(a.mode(i));
    }
  }
  return MakeLayout(modes);
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

bool ModeAsSingleStride(const Layout& layout,
                        const IntTuple::Elements& elements, int i,
                        int64_t* extent, int64_t* stride) {
  const auto extents = layout.shape().leaves();
  const auto strides = layout.stride().leaves();
  int64_t e = 1, d = 0;
  bool started = false;
  for (int k = elements.leaf[i]; k < elements.leaf[i + 1]; ++k) {
    if (extents[k] == 1) continue;
    if (!started) {
      e = extents[k];
      d = strides[k];
      started = true;
    } else if (int64_t span; CheckedMul(e, d, &span) && strides[k] == span) {
      e *= extents[k];  // Bounded by the layout's size.
    } else {
      return false;
    }
  }
  if (extents.size() > 0 && elements.leaf[i] < elements.leaf[i + 1]) {
    // An extent-0 leaf makes the whole mode empty.
    for (int k = elements.leaf[i]; k < elements.leaf[i + 1]; ++k) {
      if (extents[k] == 0) e = 0;
    }
  }
  *extent = e;
  *stride = d;
  return true;
}

Layout Coalesce(const Layout& layout) {
  // Same function, so the same (already validated) bounds: this cannot fail;
  // were it to, the layout itself is a correct, if uncoalesced, answer.
  absl::StatusOr<Layout> coalesced = layout.size() == 0
                                         ? Layout::Create(0, 0)
                                         : FromModes(CoalescedModes(layout));
  return coalesced.ok() ? *std::move(coalesced) : layout;
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

absl::StatusOr<JointComposition> ComposeJointly(absl::Span<const Layout> as,
                                                int64_t start,
                                                const Layout& b) {
  if (as.empty()) return ValueError("composition needs a left operand");
  for (const Layout& a : as) {
    STRATA_RETURN_IF_ERROR(RequirePositiveExtents(a, "composition"));
    if (a.shape() != as[0].shape()) {
      return ValueErrorCat("joint composition: ", a.ToString(), " and ",
                           as[0].ToString(), " differ in shape");
    }
  }
  STRATA_RETURN_IF_ERROR(RequirePositiveExtents(b, "composition"));
  if (start < 0) {
    return ValueErrorCat("composition at negative offset ", start);
  }
  const JointOperand joint = JointCoalesce(as);
  // start's colexicographic digits; the last mode takes the quotient.
  const size_t n = joint.extents.size();
  absl::InlinedVector<int64_t, 8> digits(n);
  int64_t rest = start;
  for (size_t k = 0; k + 1 < n; ++k) {
    digits[k] = rest % joint.extents[k];
    rest /= joint.extents[k];
  }
  digits[n - 1] = rest;
  JointComposition out;
  for (size_t j = 0; j < as.size(); ++j) {
    int64_t base = 0;
    for (size_t k = 0; k < n; ++k) {
      int64_t term;
      if (!CheckedMul(digits[k], joint.strides[j][k], &term) ||
          !CheckedAdd(base, term, &base)) {
        return ValueErrorCat("composition ", joint.Text(), " at offset ", start,
                             " overflows 64-bit arithmetic");
      }
    }
    out.bases.push_back(base);
  }
  Pieces pieces;
  STRATA_ASSIGN_OR_RETURN(out.results, ComposeTree(joint, b, &pieces));
  STRATA_RETURN_IF_ERROR(CheckDistributes(
      joint, absl::MakeConstSpan(digits.data(), n - 1), b, pieces));
  return out;
}

absl::StatusOr<Layout> Composition(const Layout& a, const Layout& b) {
  STRATA_ASSIGN_OR_RETURN(JointComposition joint, ComposeJointly({a}, 0, b));
  return std::move(joint.results[0]);
}

absl::StatusOr<Layout> Composition(const Layout& a,
                                   absl::Span<const Layout> tiler) {
  return ByMode(a, tiler, Composition, "composition");
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
  // CuTe's construction, checked: the coalesced modes that move (stride > 0),
  // by ascending stride d_0 < d_1 < ... < d_n with extents s_k and positions
  // p_k (colexicographic weights in L's domain). Stride-0 modes are skipped:
  // their coordinate is taken as 0. R has modes
  //   (d_0, d_1/d_0, ..., d_n/d_{n-1}, s_n) : (0, p_0, ..., p_{n-1}, p_n),
  // so an index sum_k c_k d_k decodes to sum_k c_k p_k. That is exact when
  // each d_k is a multiple of the span s_{k-1} d_{k-1} of the one below.
  const Modes modes = CoalescedModes(layout);
  absl::InlinedVector<int64_t, 8> position(modes.size());
  int64_t running = 1;
  for (size_t k = 0; k < modes.size(); ++k) {
    position[k] = running;
    running *= modes[k].extent;  // Bounded by size(layout).
  }
  absl::InlinedVector<size_t, 8> order;
  for (size_t k = 0; k < modes.size(); ++k) {
    if (modes[k].stride != 0) order.push_back(k);
  }
  if (order.empty()) return Layout();  // L(i) == 0 for all i: R = 1:0.
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return modes[x].stride < modes[y].stride;
  });
  Modes result = {{modes[order[0]].stride, 0}};
  for (size_t m = 1; m < order.size(); ++m) {
    const Mode& below = modes[order[m - 1]];
    const Mode& here = modes[order[m]];
    int64_t span;
    if (!CheckedMul(below.extent, below.stride, &span) ||
        here.stride % span != 0) {
      return ValueErrorCat(
          "left_inverse: layout ", layout.ToString(),
          " is not injective in the admissible sense: coalesced stride ",
          here.stride, " is not a multiple of the span ", below.extent, "*",
          below.stride,
          " of the mode below it (the modes overlap or interleave)");
    }
    result.push_back({here.stride / below.stride, position[order[m - 1]]});
  }
  result.push_back({modes[order.back()].extent, position[order.back()]});
  auto flat = FromModes(result);
  if (!flat.ok()) {
    return ValueErrorCat(
        "left_inverse of ", layout.ToString(),
        " overflows 64-bit arithmetic: ", flat.status().message());
  }
  return Coalesce(*flat);
}

absl::StatusOr<Layout> LogicalDivide(const Layout& a, const Layout& b) {
  STRATA_RETURN_IF_ERROR(RequirePositiveExtents(a, "logical_divide"));
  STRATA_ASSIGN_OR_RETURN(Layout rest, Complement(b, a.size()));
  STRATA_ASSIGN_OR_RETURN(Layout tiler, MakeLayout({b, rest}));
  return Composition(a, tiler);
}

absl::StatusOr<Layout> LogicalDivide(const Layout& a,
                                     absl::Span<const Layout> tiler) {
  return ByMode(a, tiler, LogicalDivide, "logical_divide");
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
