// The layout algebra of CuTe (CUTLASS), at run time and always checked.
//
// Each operation states its contract as mathematics; a call whose operands are
// not admissible returns a ValueError quoting them, never a wrong layout (CuTe
// skips these checks for run-time integers; Strata does not). All arithmetic is
// overflow-checked. Unless stated otherwise every operand must have positive
// extents.
#ifndef STRATA_LAYOUT_ALGEBRA_H_
#define STRATA_LAYOUT_ALGEBRA_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"

namespace strata {

// The layout whose modes are `modes`, in order: (m_0,...,m_k) with shape
// (shape(m_0),...,shape(m_k)). Errors: ValueError on overflow.
absl::StatusOr<Layout> MakeLayout(absl::Span<const Layout> modes);

// @post size(R) == size(L), depth(R) <= 1, and
//       R(i) == L(i) for all 0 <= i < size(L).
// Modes of extent 1 are dropped; neighbours with d_{k+1} == s_k * d_k
// merge. A layout of one element coalesces to 1:0. Any layout is admissible (an
// empty one gives 0:0).
Layout Coalesce(const Layout& layout);

// Top-level mode i of `layout` (elements = layout.shape().TopElements()) as a
// single (extent, stride) after coalescing, in O(leaves of the mode) without
// building Layouts; false when the mode needs several strides. Extent-1 modes
// give (1, 0).
bool ModeAsSingleStride(const Layout& layout,
                        const IntTuple::Elements& elements, int i,
                        int64_t* extent, int64_t* stride);

// Coalesces mode by mode following `profile`: an integer profile coalesces the
// whole layout; a tuple profile of rank r coalesces modes 0..r-1 each per
// profile[i] and keeps the other modes. @post R(i) == L(i) for all i. Errors
// (ValueError): the profile has more modes than the layout.
absl::StatusOr<Layout> CoalesceByMode(const Layout& layout,
                                      const IntTuple& profile);

// Functional composition keeping B's mode structure.
// @post R(c) == A(B(c)) for every coordinate c of B; shape(R) is congruent with
//       shape(B) at the top levels of B.
// Admissible when, with A coalesced to (s_0..s_n):(d_0..d_n), each stride r of
// B divides or is divided by the extents it crosses (stride divisibility) and
// each extent N of B is divided by the extents of the strided A it spans (shape
// divisibility); A's last mode extends without bound. As in CuTe, a leaf of B
// of extent 1 is always admissible and gives 1:0 (it reaches only B(0) == 0;
// CuTe prints another stride for the same function), and a leaf of stride 0
// gives N:0. Errors (ValueError): inadmissible operands, a negative stride in a
// leaf of B of extent > 1, overflow.
absl::StatusOr<Layout> Composition(const Layout& a, const Layout& b);
// Composition of several layouts of one shape with B at an offset, sharing one
// result shape: for every operand A_j and coordinate c of B,
//   A_j(start + B(c)) == bases[j] + results[j](c),
// and all results[j] have the same shape (the operands are coalesced jointly).
// Views use it to move a placement and its adjacent layout alike
// (NOTE [ Composition distributes over B's modes ] in algebra.cc).
// Errors (ValueError): operands of different shapes, a negative start,
// inadmissible operands, or a start whose digits carry (the shifted image is
// not a layout), overflow.
struct JointComposition {
  std::vector<Layout> results;
  std::vector<int64_t> bases;
};
absl::StatusOr<JointComposition> ComposeJointly(absl::Span<const Layout> as,
                                                int64_t start, const Layout& b);

// By-mode composition with a tiler: R_i = A_i o tiler_i for i < tiler.size(),
// R_i = A_i beyond. Errors: as Composition; tiler longer than rank(A).
absl::StatusOr<Layout> Composition(const Layout& a,
                                   absl::Span<const Layout> tiler);

// The complement of L with respect to cotarget N.
// @post R is injective with non-negative, ascending strides;
//       R(i) != L(j) unless both are 0;
//       when L is injective with cosize(L) <= N, the image of (L, R) covers
//       [0, N).
// Admissible when every stride of L (ignoring modes of extent 1 or stride 0),
// taken in ascending order, is a multiple of the span s_k*d_k of the previous
// one. Errors (ValueError): inadmissible L, a negative stride, N < 1, overflow.
absl::StatusOr<Layout> Complement(const Layout& layout, int64_t cotarget);

// @post L(R(i)) == i for all 0 <= i < size(R), and size(R) is the largest
//       such prefix CuTe's construction reaches (1:0 when only index 0
//       qualifies).
// Modes with negative strides never extend the chain. Errors: overflow.
absl::StatusOr<Layout> RightInverse(const Layout& layout);

// CuTe's quasi-inverse: stride-0 modes are skipped (their coordinate is taken
// as 0), the other coalesced modes are decoded by ascending stride.
// @post L(R(L(i))) == L(i) for all 0 <= i < size(L), size(R) >= cosize(L),
//       and R(L(i)) == i when L is injective.
// Errors (ValueError): a negative stride in a mode of extent > 1; the moving
// modes, by ascending stride, are not each a multiple of the span s*d of the
// one below (they overlap or interleave, e.g. (2,2):(3,2)); overflow.
absl::StatusOr<Layout> LeftInverse(const Layout& layout);

// logical_divide(A, B) = A o (B, complement(B, size(A))).
// @post R is (tile, rest) with R(i) == A(T(i))
//       for T = (B, complement(B, size(A))).
absl::StatusOr<Layout> LogicalDivide(const Layout& a, const Layout& b);
// By mode: R_i = logical_divide(A_i, tiler_i), further modes of A unchanged.
absl::StatusOr<Layout> LogicalDivide(const Layout& a,
                                     absl::Span<const Layout> tiler);

// zipped_divide gathers the tiles: ((t_0,t_1,..),(r_0,r_1,..,a_k,..)). With a
// layout B (one tiler), it equals logical_divide(A, B).
absl::StatusOr<Layout> ZippedDivide(const Layout& a, const Layout& b);
absl::StatusOr<Layout> ZippedDivide(const Layout& a,
                                    absl::Span<const Layout> tiler);
// tiled_divide is zipped_divide with the rest mode's top-level modes unpacked:
// ((t_0,t_1,..), r_0, r_1, .., a_k, ..).
absl::StatusOr<Layout> TiledDivide(const Layout& a, const Layout& b);
absl::StatusOr<Layout> TiledDivide(const Layout& a,
                                   absl::Span<const Layout> tiler);

// logical_product(A, B) = (A, complement(A, size(A) * cosize(B)) o B).
absl::StatusOr<Layout> LogicalProduct(const Layout& a, const Layout& b);

// With R = max(rank(A), rank(B)), both padded to rank R with 1:0 modes and
// P = logical_product(A, B) = (A, C):
// clang-format off
//   blocked_product = ((A_0, C_0), .., (A_{R-1}, C_{R-1}))
//   raked_product   = ((C_0, A_0), .., (C_{R-1}, A_{R-1}))
// clang-format on
// In the blocked product A's block varies fastest; in the raked one B's tiles
// interleave. For R == 1 the single mode is (A, C), resp. (C, A).
absl::StatusOr<Layout> BlockedProduct(const Layout& a, const Layout& b);
absl::StatusOr<Layout> RakedProduct(const Layout& a, const Layout& b);

}  // namespace strata

#endif  // STRATA_LAYOUT_ALGEBRA_H_
