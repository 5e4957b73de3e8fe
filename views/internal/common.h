// The internals the view families share (views/*_views.cc, one file per
// family): how a view writes its block, the mode specs, the flat one-level
// writers, the index of a layout's modes, MapModes, the narrowing of deeper
// levels. Header-only so that every family inlines them as one file did.
#ifndef STRATA_VIEWS_INTERNAL_COMMON_H_
#define STRATA_VIEWS_INTERNAL_COMMON_H_

#include <algorithm>
#include <cassert>
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
#include "views/narrow_level.h"
#include "views/view_paths.h"

namespace strata {
namespace views_internal {

using Modes = absl::InlinedVector<Layout, 4>;

// The layout of `modes`: one integer mode stays an integer layout.
inline absl::StatusOr<Layout> FromTopModes(absl::Span<const Layout> modes) {
  if (modes.size() == 1 && modes[0].shape().is_leaf()) return modes[0];
  return MakeLayout(modes);
}

// Validates the draft (NOTE [ Views build in place ] in
// core/representation.cc) and wraps it as the view's Tensor.
inline absl::StatusOr<Tensor> Publish(Representation::ViewDraft& draft) {
  if (absl::Status status = draft.Check(); !status.ok()) return status;
  return MakeTensor(std::move(draft).Take());
}

// Publish for a view that keeps every level's reach (NOTE [ Views that keep
// their reach ] in core/representation.cc): only the dtype's rules run.
inline absl::StatusOr<Tensor> PublishKeepingReach(
    Representation::ViewDraft& draft) {
  STRATA_RETURN_IF_ERROR(draft.CheckKeepingReach());
  return MakeTensor(std::move(draft).Take());
}

// Publish for a view that only rearranges modes (NOTE [ Verdicts that views
// keep ] in dtype/representation_rule.h): PublishKeepingReach, less the
// rules that keep their verdict under it.
inline absl::StatusOr<Tensor> PublishRearrangingModes(
    Representation::ViewDraft& draft) {
  STRATA_RETURN_IF_ERROR(draft.CheckRearrangingModes());
  return MakeTensor(std::move(draft).Take());
}

// Publish for `slice` of `source`, the representation the draft started
// from (NOTE [ Slices stay inside their source ] in core/representation.cc
// and NOTE [ Verdicts that slices keep ] in dtype/representation_rule.h):
// the rules that do not keep their verdict on it.
inline absl::StatusOr<Tensor> PublishSlice(Representation::ViewDraft& draft,
                                           const Representation& source,
                                           const ModeSlice& slice) {
  STRATA_RETURN_IF_ERROR(draft.CheckSlice(source, slice));
  return MakeTensor(std::move(draft).Take());
}

// A layout the view computed for S_0 that is not one: Create's TypeError.
inline absl::Status NotAnAdjacentLayout(const absl::Status& status) {
  return TypeErrorCat("adjacent level 0: not a Layout: ", status.message());
}

// One mode of an offset-free view: mode `source` of the input, or (source < 0)
// a new integer mode of `extent` with stride 0.
using ModeSpec = LayoutAssembler::ModeSpec;
using ModeSpecs = layout_internal::SmallVector<ModeSpec, 8>;

// Writes mode specs into a ModeSpecs sized once for at most `capacity` of
// them: one store per spec, where push_back checks the capacity and reloads
// the size on every call. Finish drops the capacity not written.
class SpecWriter {
 public:
  explicit SpecWriter(ModeSpecs* out) : out_(out) {}
  SpecWriter(ModeSpecs* out, size_t capacity) : out_(out) { Start(capacity); }
  void Start(size_t capacity) {
    out_->resize_for_overwrite(capacity);
    begin_ = next_ = out_->data();
  }
  void Append(ModeSpec spec) { *next_++ = spec; }
  void Finish() { out_->truncate(next_ - begin_); }

 private:
  ModeSpecs* out_;
  ModeSpec* begin_ = nullptr;
  ModeSpec* next_ = nullptr;
};

// A size multiplied as Layout::Create multiplies the leaves: the product of
// the positive extents, overflow-checked even beside an extent of 0, then 0
// where an extent is 0 (NOTE [ Layout bounds ] in layout/layout.cc). Meant
// for a local: as a member, the product went through memory at every step.
class LeafProduct {
 public:
  void Multiply(int64_t extent) {
    empty_ |= extent == 0;
    overflow_ |=
        __builtin_mul_overflow(product_, extent == 0 ? 1 : extent, &product_);
  }
  bool overflows() const { return overflow_; }
  // Precondition: !overflows().
  int64_t size() const { return empty_ ? 0 : product_; }

 private:
  int64_t product_ = 1;
  bool empty_ = false;
  bool overflow_ = false;
};

// MapModes' other writer, for a flat source of one level (NOTE [ One-level
// flat views ] in core/representation.cc): each spec names its mode's extent
// and stride at once, into buffers for at most LayoutAssembler::kFlatBuffer
// modes (Start with more makes it refuse), and a broadcast's size is
// multiplied as Layout::Create multiplies the leaves (the product of the
// positive extents, overflow-checked, then 0 where an extent is 0).
template <bool kBroadcasts>
class FlatModeWriter {
 public:
  static constexpr int kCapacity = LayoutAssembler::kFlatBuffer;
  explicit FlatModeWriter(const Layout& source)
      : source_extents_(source.shape().leaves().data()),
        source_strides_(source.stride().leaves().data()) {}
  void Start(size_t capacity) { fits_ = capacity <= kCapacity; }
  void Append(ModeSpec spec) {
    if (!fits_) return;
    const bool kept = spec.source >= 0;
    const int64_t extent = kept ? source_extents_[spec.source] : spec.extent;
    extents_[n_] = extent;
    strides_[n_] = kept ? source_strides_[spec.source] : spec.stride;
    ++n_;
  }
  // A broadcast's size, once, in locals: multiplied into a member mode by
  // mode, the product went through memory at every step (a store and a
  // load on the chain of multiplies: 35% of BroadcastTo's time).
  void Finish() {
#ifndef NDEBUG
    finished_ = true;
#endif
    if (!kBroadcasts || !fits_) return;
    LeafProduct product;
    for (int k = 0; k < n_; ++k) product.Multiply(extents_[k]);
    overflow_ = product.overflows();
    if (!overflow_) size_ = product.size();
  }

  // Whether the modes fit the buffers, and (for a broadcast) their size
  // fits int64.
  bool fits() const { return fits_ && !overflow_; }
  int num_modes() const { return n_; }
  // A broadcast's number of elements. Preconditions: Finish() was called
  // (checked in builds without NDEBUG: the size is multiplied there), and
  // fits().
  int64_t num_elements() const {
    assert(finished_ && "FlatModeWriter::Finish before num_elements");
    return size_;
  }
  const int64_t* extents() const { return extents_; }
  const int64_t* strides() const { return strides_; }

 private:
  const int64_t* source_extents_;
  const int64_t* source_strides_;
  bool fits_ = false;
  bool overflow_ = false;
  int n_ = 0;
  int64_t size_ = 1;
#ifndef NDEBUG
  bool finished_ = false;
#endif
  // Whole buffers (FlatLayout copies them whole).
  int64_t extents_[kCapacity] = {};
  int64_t strides_[kCapacity] = {};
};

// Representation::OneLevelFlatView's representation as the view's Tensor
// (NOTE [ One-level flat views ] in core/representation.cc): the one place
// its error convention meets the views' StatusOr. Always inlined: as a call
// it cost 20-40 instructions per view.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::StatusOr<Tensor> OneLevelFlatTensor(
    const Representation& rep, int64_t offset, int n, const int64_t* extents,
    const int64_t* strides, const LayoutAssembler::DerivedBounds& bounds) {
  absl::Status error;
  auto view = Representation::OneLevelFlatView(rep, offset, n, extents, strides,
                                               bounds, &error);
  if (view == nullptr) return error;
  return MakeTensor(std::move(view));
}

// Whether every top-level mode of `tuple` is one leaf: an integer, or a tuple
// whose only inner node is its root.
inline bool IsFlat(const IntTuple& tuple) {
  return tuple.tokens().size() == tuple.leaves().size() + 1 || tuple.is_leaf();
}

// Where the top-level modes of a layout's shape lie, and their extents:
// without a table when every mode is one leaf (mode i is then leaf i and
// token i + 1), else read in one walk of the tokens into arrays on the stack
// (on the heap beyond kInlineModes modes).
class ModeIndex {
 public:
  using ModeTable = LayoutAssembler::ModeTable;

  explicit ModeIndex(const IntTuple& shape) : flat_(IsFlat(shape)) {
    if (flat_) {
      size_ = shape.num_leaves();
      extents_ = shape.leaves();
      return;
    }
    // TopElements' walk, with each mode's extent taken in the same pass.
    // Locals and raw pointers: a store to the int32_t tables may alias the
    // int members, which each iteration would then reload.
    const int32_t* tokens = shape.tokens().data();
    const int64_t* leaves = shape.leaves().data();
    const int n = tokens[0];
    size_ = n;
    int32_t* token_at = inline_token_;
    int32_t* leaf_at = inline_leaf_;
    int64_t* extent_at = inline_extent_;
    if (n > kInlineModes) {
      heap_positions_.resize(2 * (static_cast<size_t>(n) + 1));
      heap_extents_.resize(n);
      token_at = heap_positions_.data();
      leaf_at = token_at + n + 1;
      extent_at = heap_extents_.data();
    }
    int token = 1;
    int leaf = 0;
    for (int i = 0; i < n; ++i) {
      token_at[i] = token;
      leaf_at[i] = leaf;
      if (tokens[token] == IntTuple::kLeafToken) {  // An integer mode.
        extent_at[i] = leaves[leaf];
        ++token;
        ++leaf;
        continue;
      }
      // A hierarchical mode: its tokens walked, its leaves multiplied as
      // they pass (bounded by the product of the positive extents, NOTE
      // [ Layout bounds ]).
      int64_t e = 1;
      int pending = 1;  // Nodes of the mode still to visit.
      while (pending > 0) {
        const int32_t t = tokens[token++];
        --pending;
        if (t == IntTuple::kLeafToken) {
          e *= leaves[leaf++];
        } else {
          pending += t;
        }
      }
      extent_at[i] = e;
    }
    token_at[n] = token;
    leaf_at[n] = leaf;
    table_ = {token_at, leaf_at};
    extents_ = absl::MakeConstSpan(extent_at, n);
  }
  ModeIndex(const ModeIndex&) = delete;
  ModeIndex& operator=(const ModeIndex&) = delete;

  int size() const { return size_; }
  // Whether every mode is one leaf (mode i is leaf i).
  bool flat() const { return flat_; }
  int leaf(int i) const { return flat_ ? i : table_.leaf[i]; }
  int token(int i) const { return flat_ ? i + 1 : table_.token[i]; }
  // The extent of each mode.
  absl::Span<const int64_t> extents() const { return extents_; }
  // The mode table of the shape, or nullptr where every mode is one leaf
  // (LayoutAssembler::GatherModes).
  const ModeTable* table() const { return flat_ ? nullptr : &table_; }

 private:
  static constexpr int kInlineModes = 16;
  bool flat_;
  int size_;
  ModeTable table_ = {nullptr, nullptr};
  absl::Span<const int64_t> extents_;  // The shape's leaves, or the below.
  // Uninitialized: the walk writes the first size_ + 1 entries.
  int32_t inline_token_[kInlineModes + 1];
  int32_t inline_leaf_[kInlineModes + 1];
  int64_t inline_extent_[kInlineModes];
  std::vector<int32_t> heap_positions_;  // token, then leaf, positions.
  std::vector<int64_t> heap_extents_;
};

// The size of the layout the specs name, as Layout::Create computes it: the
// product of the leaves of positive extent, overflow-checked even where
// another leaf is 0 (NOTE [ Layout bounds ]), then 0 if a leaf is 0; nullopt
// where it overflows. The specs drop modes of extent 1 only, so where `layout`
// is not empty that product is its size times the new modes' extents.
inline std::optional<int64_t> SpecsSize(const Layout& layout,
                                        const ModeIndex& modes,
                                        absl::Span<const ModeSpec> specs) {
  LeafProduct product;
  if (layout.size() > 0) {
    // The common case: the kept modes' product is the source's size, and
    // only the new modes multiply it.
    product.Multiply(layout.size());
    for (const ModeSpec& m : specs) {
      if (m.source < 0) product.Multiply(m.extent);
    }
  } else {
    // An empty source: every leaf of the kept modes counts too (NOTE
    // [ Layout bounds ]).
    const auto extents = layout.shape().leaves();
    for (const ModeSpec& m : specs) {
      if (m.source < 0) {
        product.Multiply(m.extent);
      } else {
        for (int k = modes.leaf(m.source); k < modes.leaf(m.source + 1); ++k)
          product.Multiply(extents[k]);
      }
    }
  }
  if (product.overflows()) return std::nullopt;
  return product.size();
}

// Applies an offset-free view, given as mode specs over the input's top-level
// modes, to L_0 and S_0 alike (S_0 has L_0's shape, so the same specs apply).
// Every such view keeps the indices each layout reaches: the specs rearrange
// modes, drop modes of extent 1 and add modes of stride 0 (new modes, or
// modes of extent 1 widened by a broadcast). So bounds are copied (NOTE
// [ Layout bounds ] in layout/layout.cc), only a broadcast (`kBroadcasts`:
// its new modes may have extents other than 1) computes the new size, and
// only the dtype's rules check the result (NOTE [ Views that keep their
// reach ] in core/representation.cc), except those that keep their verdict
// when modes rearrange, as these views do (NOTE [ Verdicts that views keep ]
// in dtype/representation_rule.h). A flat one-level source takes
// OneLevelFlatView; otherwise one pass writes L_0 and S_0
// (LayoutAssembler::GatherModes).
template <bool kBroadcasts, typename MakeSpecs>
inline absl::StatusOr<Tensor> MapModes(const Tensor& tensor,
                                       MakeSpecs make_specs) {
  const Representation& rep = TensorAccess::representation(tensor);
  const Layout& l0 = rep.subtensor(0).placement;
  if (rep.num_levels() == 1 && IsFlat(l0.shape())) {
    // NOTE [ One-level flat views ] in core/representation.cc: mode i of L_0
    // is leaf i, so each spec is its mode's extent and stride at once.
    FlatModeWriter<kBroadcasts> flat(l0);
    STRATA_RETURN_IF_ERROR(make_specs(l0.shape().leaves(), flat));
    if (flat.fits()) {
      const int64_t size = kBroadcasts ? flat.num_elements() : l0.size();
      return OneLevelFlatTensor(
          rep, rep.subtensor(0).offset, flat.num_modes(), flat.extents(),
          flat.strides(),
          LayoutAssembler::DerivedBounds::KeepingReach(size, l0, nullptr));
    }
    // More modes than the buffers hold, or a size that overflows (which
    // GatherModes reports as Layout::Create does): the specs again, below.
  }
  const ModeIndex modes(l0.shape());
  ModeSpecs specs;
  SpecWriter writer(&specs);
  STRATA_RETURN_IF_ERROR(make_specs(modes.extents(), writer));
  const absl::Span<const ModeSpec> span(specs.data(), specs.size());
  // nullopt where the size overflows: GatherModes then reports it as
  // Layout::Create does.
  const std::optional<int64_t> size =
      kBroadcasts ? SpecsSize(l0, modes, span) : l0.size();
  // S_0 has L_0's shape: the same specs gather its strides.
  const Layout* s0 =
      rep.num_levels() > 1 ? &rep.adjacent_layouts()[0] : nullptr;
  LayoutAssembler::DerivedBounds bounds;
  if (size.has_value())
    bounds = LayoutAssembler::DerivedBounds::KeepingReach(*size, l0, s0);
  Representation::ViewDraft draft(rep);
  STRATA_RETURN_IF_ERROR(LayoutAssembler::GatherModes(
      l0, modes.table(), s0, span, size.has_value() ? &bounds : nullptr,
      &draft.placement(0), s0 != nullptr ? &draft.adjacent(0) : nullptr));
  return PublishRearrangingModes(draft);
}

// Errors of the public views begin with the function's name (the factory's and
// the dtype rules' errors get it as context).
// In place, so that the public function returns its Impl's StatusOr without
// a move.
inline void NameError(absl::string_view op, absl::StatusOr<Tensor>* result) {
  if (absl::StartsWith(result->status().message(), absl::StrCat(op, ": "))) {
    return;
  }
  *result = WithContext(result->status(), op);
}
inline void Named(absl::string_view op, absl::StatusOr<Tensor>* result) {
  if (ABSL_PREDICT_FALSE(!result->ok())) NameError(op, result);
}

inline absl::Status CheckDim(absl::string_view op, int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank) {
    return ValueErrorCat(op, ": dim ", dim, " is out of range for rank ", rank);
  }
  return absl::OkStatus();
}

// Deeper levels of NOTE [ The view invariant ]: the view reaches level i
// through `reached` (a layout over the new level-(i-1) shape, relative to
// linear index `base` of level i), which the view wrote as the draft's S_0.
// Narrows level i to the box of its leaf grid that the view reaches (NOTE
// [ Boxes of a level's leaf grid ]), moves base's image into the level's
// offset, rewrites the adjacent layout into the box, and continues below.
inline absl::Status NarrowLevels(const Representation& rep, int64_t base,
                                 Representation::ViewDraft* draft) {
  views_internal::LevelBox box;
  for (int level = 1; level < rep.num_levels(); ++level) {
    Layout& reached = draft->adjacent(level - 1);
    // Nothing is reached: deeper levels stay.
    if (reached.size() == 0) return absl::OkStatus();
    // Written in place: on error the draft is discarded.
    if (absl::Status narrowed = views_internal::NarrowLevelInto(
            rep.subtensor(level).placement, base, reached,
            /*write_whole=*/false, &box, &draft->placement(level), &reached);
        !narrowed.ok()) {
      return ValueErrorCat("level ", level,
                           " cannot be narrowed exactly: ", narrowed.message());
    }
    // The whole level is still reached: it stays.
    if (box.whole) return absl::OkStatus();
    if (!CheckedAdd(draft->offset(level), box.offset_shift,
                    &draft->offset(level))) {
      return ValueErrorCat("level ", level, " offset overflows");
    }
    if (level + 1 == rep.num_levels()) break;
    // Level level+1 is reached through S_level restricted to the box.
    const Layout& next = rep.adjacent_layouts()[level];
    const auto next_strides = next.stride().leaves();
    base = 0;
    absl::InlinedVector<int64_t, 8> strides(next_strides.size());
    bool moves = false;
    for (size_t a = 0; a < next_strides.size(); ++a) {
      base += box.start[a] * next_strides[a];      // Reached: no overflow.
      strides[a] = box.step[a] * next_strides[a];  // Reached, too.
      moves |= strides[a] != 0;
    }
    // Strides all 0 (a tensor scale's S_i) reach index 0 alone: bounds
    // known without a pass over the leaves.
    LayoutAssembler::DerivedBounds constant = {draft->placement(level).size(),
                                               0, 0};
    STRATA_RETURN_IF_ERROR(LayoutAssembler::WithShapeOf(
        draft->placement(level), strides, &draft->adjacent(level),
        moves ? nullptr : &constant));
    // That one index, base 0, of a level of one index: the whole level,
    // which stays, as NarrowLevelInto would find.
    if (!moves && base == 0 && rep.subtensor(level + 1).placement.size() == 1) {
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

inline absl::Status NegativeTargetExtent(absl::string_view op,
                                         absl::Span<const int64_t> shape) {
  return ValueErrorCat(op, ": shape ", IntTuple::Flat(shape).ToString(),
                       " has a negative extent");
}
// Inline, the message out of line: the success path is one loop.
inline absl::Status CheckTargetExtents(absl::string_view op,
                                       absl::Span<const int64_t> shape) {
  // An early exit: GCC widens a loop without one into vector code whose
  // set-up costs more than five extents.
  for (int64_t e : shape) {
    if (ABSL_PREDICT_FALSE(e < 0)) return NegativeTargetExtent(op, shape);
  }
  return absl::OkStatus();
}

}  // namespace views_internal
}  // namespace strata

#endif  // STRATA_VIEWS_INTERNAL_COMMON_H_
