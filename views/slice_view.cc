// Slice, with level narrowing (NOTE [ The view invariant ]).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "layout/algebra.h"
#include "layout/small_vector.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"
#include "views/internal/common.h"
#include "views/narrow_level.h"
#include "views/view_paths.h"
#include "views/views.h"

namespace strata {
namespace {
using views_internal::CheckDim;
using views_internal::FromTopModes;
using views_internal::ModeIndex;
using views_internal::Modes;
using views_internal::Named;
using views_internal::NarrowLevels;
using views_internal::NotAnAdjacentLayout;
using views_internal::OneLevelFlatTensor;
using views_internal::PublishSlice;
}  // namespace

namespace views_internal {

absl::StatusOr<Tensor> SliceByComposition(const Tensor& tensor, int64_t dim,
                                          int64_t start, int64_t count,
                                          int64_t step) {
  const Representation& rep = TensorAccess::representation(tensor);
  const Modes l_modes = TopLevelModes(rep.subtensor(0).placement);
  Representation::ViewDraft draft(rep);
  const bool levels = rep.num_levels() > 1;
  Modes s_modes;
  if (levels) s_modes = TopLevelModes(rep.adjacent_layouts()[0]);
  if (count == 0) {
    STRATA_ASSIGN_OR_RETURN(Layout empty, Layout::Create(0, 0));
    Modes l = l_modes;
    l[dim] = empty;
    STRATA_ASSIGN_OR_RETURN(draft.placement(0), FromTopModes(l));
    if (levels) {
      s_modes[dim] = empty;
      auto s0 = FromTopModes(s_modes);
      if (!s0.ok()) return NotAnAdjacentLayout(s0.status());
      draft.adjacent(0) = *std::move(s0);
    }
    return PublishSlice(draft, rep, {static_cast<int>(dim), start, 0, step});
  }
  std::vector<Layout> operands = {l_modes[dim]};
  if (levels) operands.push_back(s_modes[dim]);
  STRATA_ASSIGN_OR_RETURN(Layout stepping, Layout::Create(count, step));
  auto joint = ComposeJointly(operands, start, stepping);
  if (!joint.ok()) {
    return ValueErrorCat("Slice: dim ", dim, " (", l_modes[dim].ToString(),
                         ") from ", start, " by ", step,
                         " is not a layout: ", joint.status().message());
  }
  Modes l = l_modes;
  l[dim] = joint->results[0];
  STRATA_ASSIGN_OR_RETURN(draft.placement(0), FromTopModes(l));
  if (!CheckedAdd(draft.offset(0), joint->bases[0], &draft.offset(0))) {
    return ValueError("Slice: offset overflows");
  }
  if (levels) {
    s_modes[dim] = joint->results[1];
    STRATA_ASSIGN_OR_RETURN(draft.adjacent(0), FromTopModes(s_modes));
    STRATA_RETURN_IF_ERROR(NarrowLevels(rep, joint->bases[1], &draft));
  }
  return PublishSlice(draft, rep, {static_cast<int>(dim), start, count, step});
}

}  // namespace views_internal

// Writes the draft's L_0, and S_0 where the source has levels, as the
// source's tuples with leaf `leaf` of each replaced by extent:l_stride and
// extent:s_stride (S_0 has L_0's shape); the bounds are taken where given
// (twin_bounds S_0's), computed otherwise.
static absl::Status WriteWithLeafReplaced(
    const Representation& rep, int leaf, int64_t extent, int64_t l_stride,
    int64_t s_stride, const LayoutAssembler::DerivedBounds* bounds,
    const LayoutAssembler::DerivedBounds* twin_bounds,
    Representation::ViewDraft* draft) {
  const Layout& l0 = rep.subtensor(0).placement;
  const int num_leaves = l0.shape().num_leaves();
  const int64_t* const l0_extents = l0.shape().leaves().data();
  layout_internal::SmallVector<int64_t, 8> extents, strides;
  extents.assign(l0_extents, l0_extents + num_leaves);
  extents[leaf] = extent;
  const auto leaves = [&](const layout_internal::SmallVector<int64_t, 8>& v) {
    return absl::MakeConstSpan(v.data(), v.size());
  };
  strides.assign(l0.stride().leaves().data(),
                 l0.stride().leaves().data() + num_leaves);
  strides[leaf] = l_stride;
  STRATA_RETURN_IF_ERROR(LayoutAssembler::WithLeaves(
      l0, leaves(extents), leaves(strides), &draft->placement(0), bounds));
  if (rep.num_levels() == 1) return absl::OkStatus();
  const Layout& s0 = rep.adjacent_layouts()[0];
  strides.assign(s0.stride().leaves().data(),
                 s0.stride().leaves().data() + num_leaves);
  strides[leaf] = s_stride;
  return LayoutAssembler::WithLeaves(s0, leaves(extents), leaves(strides),
                                     &draft->adjacent(0), twin_bounds);
}

// NOTE [ Slices by whole steps of a mode's last leaf ]
// A hierarchical mode (e_0, ..., e_k):(d_0, ..., d_k) decodes its coordinate
// x colexicographically, so the range [a * P, (a + c) * P) for P = e_0 * ...
// * e_(k-1) is every inner coordinate with the last one in [a, a + c): the
// same leaves with e_k replaced by c, from a * d_k -- a box of the mode's leaf
// grid, in L_0 and S_0 alike (they share the shape), with no composition and
// nothing allocated but the draft. A tensor-parallel shard of a 128x128-
// blocked weight is one: its rows are (128, N/128). Composition gives the
// same function (views_test: SliceByWholeStepsEqualsComposition); nullopt
// where the slice is not of this form.
static std::optional<absl::StatusOr<Tensor>> SliceByWholeSteps(
    const Representation& rep, const views_internal::ModeIndex& elements,
    int64_t dim, int64_t start, int64_t count) {
  const Layout& l0 = rep.subtensor(0).placement;
  const int first = elements.leaf(dim);
  const int last = elements.leaf(dim + 1) - 1;
  const auto extents = l0.shape().leaves();
  int64_t inner = 1;  // A product of a valid layout's extents: no overflow.
  for (int k = first; k < last; ++k) inner *= extents[k];
  if (inner <= 0 || start % inner != 0 || count % inner != 0) {
    return std::nullopt;
  }
  const int64_t unit = start / inner;  // < e_k: unit * d_k is reachable.
  Representation::ViewDraft draft(rep);
  if (!CheckedAdd(rep.subtensor(0).offset, unit * l0.stride().leaves()[last],
                  &draft.offset(0))) {
    return absl::StatusOr<Tensor>(ValueError("Slice: offset overflows"));
  }
  const bool levels = rep.num_levels() > 1;
  const int64_t s_stride =
      levels ? rep.adjacent_layouts()[0].stride().leaves()[last] : 0;
  if (absl::Status s = WriteWithLeafReplaced(
          rep, last, count / inner, l0.stride().leaves()[last], s_stride,
          nullptr, nullptr, &draft);
      !s.ok()) {
    return absl::StatusOr<Tensor>(s);  // Not reached: a box of a valid layout.
  }
  if (levels) {
    const absl::Status narrowed = NarrowLevels(rep, unit * s_stride, &draft);
    if (!narrowed.ok()) return absl::StatusOr<Tensor>(narrowed);
  }
  return absl::StatusOr<Tensor>(
      PublishSlice(draft, rep, {static_cast<int>(dim), start, count, 1}));
}

// A slice of an integer mode (in L_0 and S_0) by at least two elements is the
// integer mode count:(step * stride) from start * stride (what composition
// gives, views_test: SliceFastPathEqualsComposition); anything else goes
// through composition.
static absl::StatusOr<Tensor> SliceImpl(const Tensor& tensor, int64_t dim,
                                        int64_t start, int64_t stop,
                                        int64_t step) {
  const Representation& rep = TensorAccess::representation(tensor);
  const Layout& l0 = rep.subtensor(0).placement;
  const ModeIndex elements(l0.shape());
  STRATA_RETURN_IF_ERROR(CheckDim("Slice", dim, elements.size()));
  const int64_t extent = elements.extents()[dim];
  if (step <= 0) return ValueErrorCat("Slice: step ", step, " is not positive");
  if (start < 0 || start > stop || stop > extent) {
    return ValueErrorCat("Slice: [", start, ", ", stop,
                         ") is not a range within [0, ", extent,
                         "] with start <= stop (dim ", dim, ")");
  }
  // ceil((stop - start) / step) without overflow: 0 <= stop - start and
  // step > 0 (NumPy and PyTorch give 1 element for Slice(t, d, 0, 8,
  // INT64_MAX)).
  const int64_t count = CeilDiv(stop - start, step);
  const bool levels = rep.num_levels() > 1;
  const bool integer_mode = elements.token(dim + 1) - elements.token(dim) == 1;
  int64_t l_stride, s_stride = 0;
  if (count >= 2 && integer_mode &&
      CheckedMul(step, l0.stride().leaves()[elements.leaf(dim)], &l_stride) &&
      (!levels ||
       CheckedMul(
           step,
           rep.adjacent_layouts()[0].stride().leaves()[elements.leaf(dim)],
           &s_stride))) {
    const int leaf = elements.leaf(dim);
    // start < extent: start * stride is a reachable index, no overflow.
    const int64_t l_base = start * l0.stride().leaves()[leaf];
    int64_t offset;
    if (!CheckedAdd(rep.subtensor(0).offset, l_base, &offset)) {
      return ValueError("Slice: offset overflows");
    }
    // The new bounds are the source's with mode dim's part changed: leaf
    // (extent, s) becomes (count, step * s), and (count - 1) * step <=
    // extent - 1, so no sum can overflow (NOTE [ Layout bounds ] in
    // layout/layout.cc). An empty source has its bounds computed.
    auto shifted = [&](const Layout& source, int64_t stride, int64_t* max,
                       int64_t* min) {
      const int64_t old_stride = source.stride().leaves()[leaf];
      const int64_t change = (count - 1) * stride - (extent - 1) * old_stride;
      *max = source.max_index() + (old_stride >= 0 ? change : 0);
      *min = source.min_index() + (old_stride >= 0 ? 0 : change);
    };
    const bool empty = l0.size() == 0;
    constexpr int kFlat = LayoutAssembler::kFlatBuffer;
    if (!levels && !empty && elements.flat() && elements.size() <= kFlat) {
      // NOTE [ One-level flat views ] in core/representation.cc. The slice
      // fits the carrier: its new offset plus each reachable index is an
      // index the validated source reaches (start < extent, and the kept
      // coordinates are a subset of the source's), and OneLevelFlatView's
      // debug check confirms it.
      int64_t extents[kFlat] = {};
      int64_t strides[kFlat] = {};
      const int n = elements.size();
      std::copy_n(l0.shape().leaves().data(), n, extents);
      std::copy_n(l0.stride().leaves().data(), n, strides);
      extents[dim] = count;
      strides[dim] = l_stride;
      LayoutAssembler::DerivedBounds bounds;
      bounds.size = l0.size() / extent * count;
      shifted(l0, l_stride, &bounds.max_index, &bounds.min_index);
      return OneLevelFlatTensor(rep, offset, n, extents, strides, bounds);
    }
    // Every leaf kept but the mode's, which becomes count:(step * stride).
    Representation::ViewDraft draft(rep);
    const Layout* s0 = levels ? &rep.adjacent_layouts()[0] : nullptr;
    LayoutAssembler::DerivedBounds bounds = {0, 0, 0};
    LayoutAssembler::DerivedBounds twin_bounds = {0, 0, 0};
    if (!empty) {
      bounds.size = twin_bounds.size = l0.size() / extent * count;
      shifted(l0, l_stride, &bounds.max_index, &bounds.min_index);
      if (levels) {
        shifted(*s0, s_stride, &twin_bounds.max_index, &twin_bounds.min_index);
      }
    }
    // Not failing: an empty source's bounds are computed, and every part of
    // them is at most the validated source's.
    STRATA_RETURN_IF_ERROR(WriteWithLeafReplaced(
        rep, leaf, count, l_stride, s_stride, empty ? nullptr : &bounds,
        empty ? nullptr : &twin_bounds, &draft));
    draft.offset(0) = offset;
    if (levels) {
      const int64_t s_base = start * s0->stride().leaves()[leaf];
      STRATA_RETURN_IF_ERROR(NarrowLevels(rep, s_base, &draft));
    }
    return PublishSlice(draft, rep,
                        {static_cast<int>(dim), start, count, step});
  }
  if (!integer_mode && step == 1 && count > 0) {
    if (std::optional<absl::StatusOr<Tensor>> whole_steps =
            SliceByWholeSteps(rep, elements, dim, start, count)) {
      return *std::move(whole_steps);
    }
  }
  return views_internal::SliceByComposition(tensor, dim, start, count, step);
}

absl::StatusOr<Tensor> Slice(const Tensor& tensor, int64_t dim, int64_t start,
                             int64_t stop, int64_t step) {
  absl::StatusOr<Tensor> result = SliceImpl(tensor, dim, start, stop, step);
  Named("Slice", &result);
  return result;
}

}  // namespace strata
