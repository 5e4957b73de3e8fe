// Reshape: by merging modes where the answer is plain, else by composition.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
using views_internal::CheckTargetExtents;
using views_internal::FromTopModes;
using views_internal::IsFlat;
using views_internal::ModeIndex;
using views_internal::Modes;
using views_internal::ModeSpecs;
using views_internal::Named;
using views_internal::NotAnAdjacentLayout;
using views_internal::OneLevelFlatTensor;
using views_internal::Publish;
using views_internal::PublishKeepingReach;
using views_internal::SpecWriter;
}  // namespace

namespace {

// Reshape without composition where the answer is plain (NOTE [ Reshape by
// merging modes ]); false where the general path must decide.
//
// NOTE [ Reshape by merging modes ]
// As a function of the row-major index, a reshape composes the Tensor's
// reversed modes with the row-major layout of the target (ReshapeImpl). When
// every target mode is a run of whole source modes a..b-1, all of extent > 1,
// the composition is plain: a run of one mode whose leaves no operand could
// coalesce (every leaf of extent > 1 and, for some operand, stride(k+1) !=
// extent(k) * stride(k)) is that mode, in L_0 and S_0 alike; a longer run of
// integer modes whose strides chain in every operand (stride(m) ==
// extent(m+1) * stride(m+1)) is one integer mode (product, stride(b-1)).
// Everything else (splits, extent-1 modes, hierarchical modes in a longer
// run, mergeable leaves) goes through composition, which these cases
// reproduce exactly (views_test: ReshapeFastPathEqualsComposition).
// Whether outer == extent * inner, the product checked: a leaf (2):(2^62) of a
// huge carrier is a valid layout whose extent * stride is not an int64.
bool Chains(int64_t outer, int64_t extent, int64_t inner) {
  int64_t product;
  return CheckedMul(extent, inner, &product) && product == outer;
}

// MergeFlatModes over raw arrays, with or without S_0's strides (kTwin).
// Each run starts at a mode of extent > 1 and takes the next while the
// product is short of the target extent, each taken mode of extent > 1 and
// chaining with the one before in every operand: every source mode ends in
// a run, so every one is checked.
template <bool kTwin>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool MergeFlatRuns(
    const int64_t* in, int n, const int64_t* l_strides,
    const int64_t* s_strides, absl::Span<const int64_t> target,
    int64_t* extents, int64_t* l_out, int64_t* s_out) {
  int a = 0;
  int j = 0;
  for (const int64_t t : target) {
    if (a == n || t <= 1 || in[a] <= 1) return false;
    int64_t product = in[a];
    int b = a + 1;
    while (product < t) {
      if (b == n || in[b] <= 1 || !CheckedMul(product, in[b], &product) ||
          !Chains(l_strides[b - 1], in[b], l_strides[b]) ||
          (kTwin && !Chains(s_strides[b - 1], in[b], s_strides[b]))) {
        return false;
      }
      ++b;
    }
    if (product != t) return false;
    extents[j] = t;
    l_out[j] = l_strides[b - 1];
    if (kTwin) s_out[j] = s_strides[b - 1];
    ++j;
    a = b;
  }
  return a == n;
}

// ReshapeByMerging's pass where every mode of L_0 (and so of S_0, where
// given) is one leaf: no leaf of a single-mode run can coalesce with another,
// so the runs are checked and their modes named in one pass over the target,
// from the leaves, into extents, l_out and s_out (target.size() entries each;
// s_out only with s0). It admits exactly what the general pass admits on such
// layouts. Always inlined (with MergeFlatRuns): Reshape's one-level flat
// path, of 27-28 ns, spent 0.5-1 ns more on the call.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool MergeFlatModes(
    const Layout& l0, const Layout* s0, absl::Span<const int64_t> target,
    int64_t* extents, int64_t* l_out, int64_t* s_out) {
  const IntTuple& shape = l0.shape();
  const int n = shape.num_leaves();
  const int64_t* in = shape.leaves().data();
  const int64_t* l_strides = l0.stride().leaves().data();
  if (s0 == nullptr) {
    return MergeFlatRuns<false>(in, n, l_strides, nullptr, target, extents,
                                l_out, s_out);
  }
  return MergeFlatRuns<true>(in, n, l_strides, s0->stride().leaves().data(),
                             target, extents, l_out, s_out);
}

// ReshapeByMerging where every mode of L_0 is one leaf (MergeFlatModes),
// written into the draft.
bool ReshapeFlatByMerging(const Representation& rep,
                          absl::Span<const int64_t> target,
                          Representation::ViewDraft* draft,
                          absl::Status* status) {
  const Layout& l0 = rep.subtensor(0).placement;
  const Layout* s0 =
      rep.num_levels() > 1 ? &rep.adjacent_layouts()[0] : nullptr;
  // The new modes' extents and strides, in buffers of at least kFlatBuffer
  // values (LayoutAssembler::WriteFlat copies them whole).
  const int m = static_cast<int>(target.size());
  constexpr int kBuffer = LayoutAssembler::kFlatBuffer;
  int64_t local[3 * kBuffer];
  std::vector<int64_t> big;
  int64_t* extents = local;
  if (m > kBuffer) {
    big.resize(3 * static_cast<size_t>(m));
    extents = big.data();
  }
  const int capacity = std::max(m, kBuffer);
  int64_t* l_out = extents + capacity;
  int64_t* s_out = l_out + capacity;
  if (!MergeFlatModes(l0, s0, target, extents, l_out, s_out)) return false;
  // Whole modes, and chains merged: the same indices, so the sources' bounds.
  LayoutAssembler::WriteFlat(
      m, extents, l_out, s_out,
      LayoutAssembler::DerivedBounds::KeepingReach(l0.size(), l0, s0),
      &draft->placement(0), s0 != nullptr ? &draft->adjacent(0) : nullptr);
  *status = absl::OkStatus();
  return true;
}

bool ReshapeByMerging(const Representation& rep,
                      absl::Span<const int64_t> target,
                      Representation::ViewDraft* draft, absl::Status* status) {
  // Every target mode takes at least one source mode: refused before either
  // pass sizes a buffer by the target (a target of 10^8 extents of 1
  // allocated 2.4 GB before its refusal).
  const IntTuple& shape = rep.subtensor(0).placement.shape();
  if (target.size() > static_cast<size_t>(shape.rank())) return false;
  // A flat L_0 that the one-pass path refuses, the general pass refuses too.
  if (IsFlat(shape)) {
    return ReshapeFlatByMerging(rep, target, draft, status);
  }
  const bool levels = rep.num_levels() > 1;
  const Layout& l0 = rep.subtensor(0).placement;
  const Layout* s0 = levels ? &rep.adjacent_layouts()[0] : nullptr;
  const ModeIndex elements(l0.shape());
  // Raw pointers: a span's operator[] checks its bound on every access.
  const int64_t* in = elements.extents().data();
  const int num_modes = elements.size();
  const int64_t* extents = l0.shape().leaves().data();
  const int64_t* l_strides = l0.stride().leaves().data();
  const int64_t* s_strides = levels ? s0->stride().leaves().data() : nullptr;
  for (int i = 0; i < num_modes; ++i)
    if (in[i] <= 1) return false;
  for (int64_t e : target)
    if (e <= 1) return false;
  // One pass: each target mode's run of source modes, checked, and the spec
  // that writes it, whole modes and chains merged, which reach the same
  // indices (NOTE [ Reshape by merging modes ]).
  ModeSpecs specs;
  SpecWriter writer(&specs, target.size());
  int a = 0;
  for (int64_t t : target) {
    if (a == num_modes) return false;
    int b = a;
    int64_t product = 1;
    while (b < num_modes && product < t) {
      if (!CheckedMul(product, in[b], &product)) return false;
      ++b;
    }
    if (product != t) return false;
    if (b - a == 1) {
      for (int k = elements.leaf(a); k + 1 < elements.leaf(a + 1); ++k) {
        if (extents[k] <= 1 || extents[k + 1] <= 1) return false;
        const bool l_merges =
            Chains(l_strides[k + 1], extents[k], l_strides[k]);
        const bool s_merges =
            !levels || Chains(s_strides[k + 1], extents[k], s_strides[k]);
        if (l_merges && s_merges) return false;
      }
      writer.Append({a, 0});
    } else {
      for (int m = a; m < b; ++m) {
        if (elements.leaf(m + 1) - elements.leaf(m) != 1 ||
            elements.token(m + 1) - elements.token(m) != 1) {
          return false;
        }
      }
      for (int m = a; m + 1 < b; ++m) {
        const int k = elements.leaf(m);
        if (!Chains(l_strides[k], extents[k + 1], l_strides[k + 1]))
          return false;
        if (levels && !Chains(s_strides[k], extents[k + 1], s_strides[k + 1]))
          return false;
      }
      const int last = elements.leaf(b - 1);
      writer.Append({-1, t, l_strides[last], levels ? s_strides[last] : 0});
    }
    a = b;
  }
  if (a != num_modes) return false;
  writer.Finish();
  const auto bounds =
      LayoutAssembler::DerivedBounds::KeepingReach(l0.size(), l0, s0);
  *status = LayoutAssembler::GatherModes(
      l0, elements.table(), s0, absl::MakeConstSpan(specs.data(), specs.size()),
      &bounds, &draft->placement(0), levels ? &draft->adjacent(0) : nullptr);
  return true;
}

}  // namespace

namespace views_internal {

absl::StatusOr<Tensor> ReshapeByComposition(const Tensor& tensor,
                                            absl::Span<const int64_t> target) {
  const IntTuple flat = IntTuple::Flat(target);
  const Representation& rep = TensorAccess::representation(tensor);
  Representation::ViewDraft draft(rep);
  STRATA_ASSIGN_OR_RETURN(Layout row_major, Layout::RowMajor(flat));
  if (tensor.size() == 0) {
    // Nothing is reached: any layout of the new shape will do.
    STRATA_ASSIGN_OR_RETURN(draft.placement(0),
                            FromTopModes(TopLevelModes(row_major)));
    if (rep.num_levels() > 1) draft.adjacent(0) = draft.placement(0);
    return Publish(draft);
  }
  // As a function of the row-major index, the Tensor is its modes in reverse
  // order.
  std::vector<Layout> reversed;
  for (int level_layout = 0; level_layout < std::min(rep.num_levels(), 2);
       ++level_layout) {
    Modes modes = TopLevelModes(level_layout == 0 ? rep.subtensor(0).placement
                                                  : rep.adjacent_layouts()[0]);
    std::reverse(modes.begin(), modes.end());
    STRATA_ASSIGN_OR_RETURN(Layout x, MakeLayout(modes));
    reversed.push_back(std::move(x));
  }
  auto joint = ComposeJointly(reversed, 0, row_major);
  if (!joint.ok()) {
    return ValueErrorCat("Reshape: ", tensor.layout().ToString(), " to ",
                         flat.ToString(),
                         " is not a view: ", joint.status().message());
  }
  STRATA_ASSIGN_OR_RETURN(draft.placement(0),
                          FromTopModes(TopLevelModes(joint->results[0])));
  if (rep.num_levels() > 1) {
    auto s0 = FromTopModes(TopLevelModes(joint->results[1]));
    if (!s0.ok()) return NotAnAdjacentLayout(s0.status());
    draft.adjacent(0) = *std::move(s0);
  }
  return Publish(draft);
}

}  // namespace views_internal

// Reshape past its one-level flat path: the checks, then merging modes in a
// draft, then composition.
static absl::StatusOr<Tensor> ReshapeImpl(const Tensor& tensor,
                                          absl::Span<const int64_t> shape,
                                          bool one_level_flat) {
  const absl::Span<const int64_t> target = shape;
  const Representation& rep = TensorAccess::representation(tensor);
  STRATA_RETURN_IF_ERROR(CheckTargetExtents("Reshape", shape));
  int64_t size = 1;
  for (int64_t e : target) {
    if (!CheckedMul(size, e, &size)) {
      return ValueErrorCat("Reshape: size of ",
                           IntTuple::Flat(shape).ToString(),
                           " overflows 64 bits");
    }
  }
  if (size != tensor.size()) {
    return ValueErrorCat("Reshape: shape ", IntTuple::Flat(shape).ToString(),
                         " has ", size, " elements, the Tensor has ",
                         tensor.size());
  }
  // A one-level flat Tensor whose modes do not merge: ReshapeByMerging's
  // general pass would not merge them either.
  if (size > 0 && !one_level_flat) {
    Representation::ViewDraft draft(rep);
    absl::Status status;
    if (ReshapeByMerging(rep, target, &draft, &status)) {
      STRATA_RETURN_IF_ERROR(status);
      return PublishKeepingReach(draft);
    }
  }
  return views_internal::ReshapeByComposition(tensor, target);
}

absl::StatusOr<Tensor> Reshape(const Tensor& tensor,
                               absl::Span<const int64_t> shape) {
  const Representation& rep = TensorAccess::representation(tensor);
  const Layout& l0 = rep.subtensor(0).placement;
  constexpr int kFlat = LayoutAssembler::kFlatBuffer;
  const bool one_level_flat =
      rep.num_levels() == 1 && shape.size() <= kFlat && IsFlat(l0.shape());
  absl::StatusOr<Tensor> result = [&]() -> absl::StatusOr<Tensor> {
    if (one_level_flat) {
      // NOTE [ One-level flat views ] in core/representation.cc, before
      // ReshapeImpl's checks: a merge makes every target extent the product
      // of its run of source extents (each > 1) and puts every source mode in
      // a run, so those checks (extents >= 0, the size's product, equal
      // sizes) would pass; where it fails, they report what is wrong.
      int64_t extents[kFlat] = {};
      int64_t strides[kFlat] = {};
      if (MergeFlatModes(l0, nullptr, shape, extents, strides, nullptr)) {
        return OneLevelFlatTensor(rep, rep.subtensor(0).offset,
                                  static_cast<int>(shape.size()), extents,
                                  strides,
                                  LayoutAssembler::DerivedBounds::KeepingReach(
                                      l0.size(), l0, nullptr));
      }
    }
    return ReshapeImpl(tensor, shape, one_level_flat);
  }();
  Named("Reshape", &result);
  return result;
}

}  // namespace strata
