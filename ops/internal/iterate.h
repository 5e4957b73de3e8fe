// The element iteration engine of the kernels: walks a logical (row-major)
// index space once, giving each operand's carrier index, with no per-element
// crd2idx.
//
// Each operand's top-level mode is either one stride after coalescing (the
// common case, including broadcast modes of stride 0) or an offset table.
// Adjacent modes merge when every operand's strides allow, so a compact Tensor
// is one loop; the innermost loop is a plain strided loop the compiler
// vectorizes when every stride is 1.
#ifndef STRATA_OPS_INTERNAL_ITERATE_H_
#define STRATA_OPS_INTERNAL_ITERATE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "layout/layout.h"

namespace strata {
namespace ops_internal {

struct ModeAccess {
  int64_t stride = 0;          // When table is empty.
  std::vector<int64_t> table;  // Else: offset of each coordinate.
  bool strided() const { return table.empty(); }
  int64_t at(int64_t c) const { return table.empty() ? c * stride : table[c]; }
};

// The access of layout mode `mode` for coordinates [0, extent): a broadcast
// (stride 0) when `broadcast`, else the mode's own offsets.
ModeAccess MakeModeAccess(const Layout& mode, bool broadcast);

// Access of each top-level mode of `layout` aligned to `extents` (trailing
// alignment, as NumPy broadcasting): missing or extent-1 modes broadcast.
// Precondition: the shapes broadcast (checked by the caller), or `prefix`
// allows operand modes longer than the iteration extents (their first
// coordinates are used).
std::vector<ModeAccess> AlignedAccess(const Layout& layout,
                                      const std::vector<int64_t>& extents,
                                      bool prefix = false);

// NOTE [ Separable compositions ]
// The accesses of L o S along each mode of `extents` (aligned as
// AlignedAccess aligns S), as offset tables, when L is additive over S's
// modes: written in L's mixed radix (its leaves, colexicographic), the S
// offsets of each mode have nonzero digits only where no other mode's do, so
// a sum of one offset per mode never carries and L of it is the sum of L of
// each. This holds where the algebra's Composition does not admit L o S
// (a grid padded to 128x4 tiles under S_0 of 200 rows), and costs O(sum of
// extents x leaves of L); where Composition admits it, its modes give the
// tables directly. nullopt when it does not hold: an S offset that is
// negative or beyond L's domain, or two modes sharing a digit.
std::optional<std::vector<ModeAccess>> SeparableComposition(
    const Layout& l, const Layout& s, const std::vector<int64_t>& extents);

// Calls f(std::array<int64_t, N> index) for every element in row-major order,
// where index[k] = bases[k] + sum over modes of operand k's offset.
template <int N, typename F>
void ForEachIndex(const std::vector<int64_t>& extents,
                  const std::array<std::vector<ModeAccess>, N>& operands,
                  const std::array<int64_t, N>& bases, F&& f) {
  for (int64_t e : extents) {
    if (e == 0) return;
  }
  // Merge strided neighbours (outer p into inner p+1) where every operand
  // allows.
  std::vector<int64_t> dims;
  std::vector<std::array<ModeAccess, N>> access;
  for (size_t p = 0; p < extents.size(); ++p) {
    std::array<ModeAccess, N> a;
    for (int k = 0; k < N; ++k) a[k] = operands[k][p];
    if (extents[p] == 1) continue;  // Contributes nothing.
    bool merge = !dims.empty();
    for (int k = 0; merge && k < N; ++k) {
      merge = access.back()[k].strided() && a[k].strided() &&
              access.back()[k].stride == a[k].stride * extents[p];
    }
    if (merge) {
      dims.back() *= extents[p];
      for (int k = 0; k < N; ++k) access.back()[k] = a[k];
      continue;
    }
    dims.push_back(extents[p]);
    access.push_back(std::move(a));
  }
  if (dims.empty()) {
    f(bases);
    return;
  }
  const size_t inner = dims.size() - 1;
  const int64_t n = dims[inner];
  bool strided = true;
  bool unit = true;
  std::array<int64_t, N> stride{};
  for (int k = 0; k < N; ++k) {
    strided = strided && access[inner][k].strided();
    stride[k] = access[inner][k].stride;
    unit = unit && stride[k] == 1;
  }
  std::vector<int64_t> counter(inner, 0);
  std::array<int64_t, N> base = bases;
  while (true) {
    if (strided && unit) {
      for (int64_t i = 0; i < n; ++i) {
        std::array<int64_t, N> idx;
        for (int k = 0; k < N; ++k) idx[k] = base[k] + i;
        f(idx);
      }
    } else if (strided) {
      for (int64_t i = 0; i < n; ++i) {
        std::array<int64_t, N> idx;
        for (int k = 0; k < N; ++k) idx[k] = base[k] + i * stride[k];
        f(idx);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        std::array<int64_t, N> idx;
        for (int k = 0; k < N; ++k) idx[k] = base[k] + access[inner][k].at(i);
        f(idx);
      }
    }
    // Odometer over the outer dims.
    size_t d = inner;
    while (d-- > 0) {
      for (int k = 0; k < N; ++k) {
        base[k] -= access[d][k].at(counter[d]);
      }
      if (++counter[d] < dims[d]) {
        for (int k = 0; k < N; ++k) base[k] += access[d][k].at(counter[d]);
        break;
      }
      counter[d] = 0;
      for (int k = 0; k < N; ++k) base[k] += access[d][k].at(0);
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// offsets[r] = L(coordinate r), r enumerating modes [begin, end) of `modes` in
// row-major order (later modes fastest), other modes at coordinate 0; the
// same walk as ForEachIndex, stored. O(product of those extents).
std::vector<int64_t> RowMajorOffsets(absl::Span<const Layout> modes, int begin,
                                     int end);

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_ITERATE_H_
