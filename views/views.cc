#include "views/views.h"

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
#include "core/errors.h"
#include "core/representation.h"
#include "core/status_macros.h"
#include "core/tensor_access.h"
#include "layout/algebra.h"
#include "layout/checked_math.h"
#include "layout/small_vector.h"
#include "views/narrow_level.h"
#include "views/view_paths.h"

namespace strata {
namespace {

using Modes = absl::InlinedVector<Layout, 4>;

// The layout of `modes`: one integer mode stays an integer layout.
absl::StatusOr<Layout> FromTopModes(absl::Span<const Layout> modes) {
  if (modes.size() == 1 && modes[0].shape().is_leaf()) return modes[0];
  return MakeLayout(modes);
}

// Validates the draft (NOTE [ Views build in place ] in
// core/representation.cc) and wraps it as the view's Tensor.
absl::StatusOr<Tensor> Publish(Representation::ViewDraft& draft) {
  if (absl::Status status = draft.Check(); !status.ok()) return status;
  return MakeTensor(std::move(draft).Take());
}

// Publish for a view that keeps every level's reach (NOTE [ Views that keep
// their reach ] in core/representation.cc): only the dtype's rules run.
absl::StatusOr<Tensor> PublishKeepingReach(Representation::ViewDraft& draft) {
  STRATA_RETURN_IF_ERROR(draft.CheckKeepingReach());
  return MakeTensor(std::move(draft).Take());
}

// A layout the view computed for S_0 that is not one: Create's TypeError.
absl::Status NotAnAdjacentLayout(const absl::Status& status) {
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
    if (kBroadcasts) {
      empty_ |= extent == 0;
      overflow_ |=
          __builtin_mul_overflow(size_, extent == 0 ? 1 : extent, &size_);
    }
  }
  void Finish() {}

  // Whether the modes fit the buffers, and (for a broadcast) their size
  // fits int64.
  bool fits() const { return fits_ && !overflow_; }
  int num_modes() const { return n_; }
  // A broadcast's number of elements. Precondition: fits().
  int64_t num_elements() const { return empty_ ? 0 : size_; }
  const int64_t* extents() const { return extents_; }
  const int64_t* strides() const { return strides_; }

 private:
  const int64_t* source_extents_;
  const int64_t* source_strides_;
  bool fits_ = false;
  bool empty_ = false;
  bool overflow_ = false;
  int n_ = 0;
  int64_t size_ = 1;
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
bool IsFlat(const IntTuple& tuple) {
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
std::optional<int64_t> SpecsSize(const Layout& layout, const ModeIndex& modes,
                                 absl::Span<const ModeSpec> specs) {
  const bool source_empty = layout.size() == 0;
  if (!source_empty) {
    // The common case: only the new modes multiply.
    int64_t size = layout.size();
    bool empty = false;
    for (const ModeSpec& m : specs) {
      if (m.source >= 0) continue;
      if (m.extent == 0) {
        empty = true;
      } else if (__builtin_mul_overflow(size, m.extent, &size)) {
        return std::nullopt;
      }
    }
    return empty ? 0 : size;
  }
  const auto extents = layout.shape().leaves();
  int64_t size = 1;
  bool empty = false;
  bool overflow = false;
  auto multiply = [&](int64_t e) {
    empty |= e == 0;
    overflow |= __builtin_mul_overflow(size, e == 0 ? 1 : e, &size);
  };
  // An empty source: every leaf of the kept modes counts too (NOTE
  // [ Layout bounds ]).
  for (const ModeSpec& m : specs) {
    if (m.source < 0) {
      multiply(m.extent);
    } else {
      for (int k = modes.leaf(m.source); k < modes.leaf(m.source + 1); ++k)
        multiply(extents[k]);
    }
  }
  if (overflow) return std::nullopt;
  return empty ? 0 : size;
}

// Applies an offset-free view, given as mode specs over the input's top-level
// modes, to L_0 and S_0 alike (S_0 has L_0's shape, so the same specs apply).
// Every such view keeps the indices each layout reaches: the specs rearrange
// modes, drop modes of extent 1 and add modes of stride 0 (new modes, or
// modes of extent 1 widened by a broadcast). So bounds are copied (NOTE
// [ Layout bounds ] in layout/layout.cc), only a broadcast (`kBroadcasts`:
// its new modes may have extents other than 1) computes the new size, and
// only the dtype's rules check the result (NOTE [ Views that keep their
// reach ] in core/representation.cc). A flat one-level source takes
// OneLevelFlatView; otherwise one pass writes L_0 and S_0
// (LayoutAssembler::GatherModes).
template <bool kBroadcasts, typename MakeSpecs>
absl::StatusOr<Tensor> MapModes(const Tensor& tensor, MakeSpecs make_specs) {
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
  return PublishKeepingReach(draft);
}

// Errors of the public views begin with the function's name (the factory's and
// the dtype rules' errors get it as context).
// In place, so that the public function returns its Impl's StatusOr without
// a move.
void NameError(absl::string_view op, absl::StatusOr<Tensor>* result) {
  if (absl::StartsWith(result->status().message(), absl::StrCat(op, ": "))) {
    return;
  }
  *result = WithContext(result->status(), op);
}
inline void Named(absl::string_view op, absl::StatusOr<Tensor>* result) {
  if (ABSL_PREDICT_FALSE(!result->ok())) NameError(op, result);
}

absl::Status CheckDim(absl::string_view op, int64_t dim, int64_t rank) {
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
absl::Status NarrowLevels(const Representation& rep, int64_t base,
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
    for (size_t a = 0; a < next_strides.size(); ++a) {
      base += box.start[a] * next_strides[a];      // Reached: no overflow.
      strides[a] = box.step[a] * next_strides[a];  // Reached, too.
    }
    STRATA_RETURN_IF_ERROR(LayoutAssembler::WithShapeOf(
        draft->placement(level), strides, &draft->adjacent(level)));
  }
  return absl::OkStatus();
}

}  // namespace

static absl::StatusOr<Tensor> PermuteImpl(const Tensor& tensor,
                                          absl::Span<const int64_t> perm) {
  return MapModes</*kBroadcasts=*/false>(
      tensor, [&](absl::Span<const int64_t> in, auto& specs) -> absl::Status {
        const int64_t rank = in.size();
        bool valid = static_cast<int64_t>(perm.size()) == rank;
        // Which modes were named: bits of a word up to rank 64 (a vector
        // beyond, allocated only there).
        uint64_t seen_bits = 0;
        std::unique_ptr<bool[]> seen_beyond;
        if (rank > 64) seen_beyond = std::make_unique<bool[]>(rank);
        specs.Start(valid ? rank : 0);
        for (int64_t p : perm) {
          valid = valid && p >= 0 && p < rank;
          if (!valid) break;
          if (rank <= 64) {
            valid = (seen_bits >> p & 1) == 0;
            seen_bits |= uint64_t{1} << p;
          } else {
            valid = !seen_beyond[p];
            seen_beyond[p] = true;
          }
          if (!valid) break;
          specs.Append({p, 0});
        }
        specs.Finish();
        if (!valid) {
          return ValueErrorCat("Permute: (", absl::StrJoin(perm, ","),
                               ") is not a permutation of the ", rank,
                               " modes");
        }
        return absl::OkStatus();
      });
}

absl::StatusOr<Tensor> Permute(const Tensor& tensor,
                               absl::Span<const int64_t> perm) {
  absl::StatusOr<Tensor> result = PermuteImpl(tensor, perm);
  Named("Permute", &result);
  return result;
}

static absl::StatusOr<Tensor> SqueezeImpl(const Tensor& tensor,
                                          std::optional<int64_t> dim) {
  return MapModes</*kBroadcasts=*/false>(
      tensor, [&](absl::Span<const int64_t> in, auto& specs) -> absl::Status {
        if (dim.has_value()) {
          STRATA_RETURN_IF_ERROR(CheckDim("Squeeze", *dim, in.size()));
          if (in[*dim] != 1) {
            return ValueErrorCat("Squeeze: dim ", *dim, " has extent ",
                                 in[*dim],
                                 "; only a dim of extent 1 can be removed");
          }
        }
        specs.Start(in.size());
        for (size_t i = 0; i < in.size(); ++i) {
          const bool drop =
              dim.has_value() ? static_cast<int64_t>(i) == *dim : in[i] == 1;
          if (!drop) specs.Append({static_cast<int64_t>(i), 0});
        }
        specs.Finish();
        return absl::OkStatus();
      });
}

absl::StatusOr<Tensor> Squeeze(const Tensor& tensor,
                               std::optional<int64_t> dim) {
  absl::StatusOr<Tensor> result = SqueezeImpl(tensor, dim);
  Named("Squeeze", &result);
  return result;
}

static absl::StatusOr<Tensor> UnsqueezeImpl(const Tensor& tensor, int64_t dim) {
  return MapModes</*kBroadcasts=*/false>(
      tensor, [&](absl::Span<const int64_t> in, auto& specs) -> absl::Status {
        const int64_t rank = in.size();
        if (dim < 0 || dim > rank) {
          return ValueErrorCat("Unsqueeze: position ", dim,
                               " is out of range [0, ", rank, "]");
        }
        specs.Start(rank + 1);
        for (int64_t i = 0; i < rank; ++i) {
          if (i == dim) specs.Append({-1, 1});
          specs.Append({i, 0});
        }
        if (dim == rank) specs.Append({-1, 1});
        specs.Finish();
        return absl::OkStatus();
      });
}

absl::StatusOr<Tensor> Unsqueeze(const Tensor& tensor, int64_t dim) {
  absl::StatusOr<Tensor> result = UnsqueezeImpl(tensor, dim);
  Named("Unsqueeze", &result);
  return result;
}

namespace {

absl::Status NegativeTargetExtent(absl::string_view op,
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

}  // namespace

static absl::StatusOr<Tensor> BroadcastToImpl(
    const Tensor& tensor, absl::Span<const int64_t> shape_extents) {
  const auto shape = [&] { return IntTuple::Flat(shape_extents); };
  STRATA_RETURN_IF_ERROR(CheckTargetExtents("BroadcastTo", shape_extents));
  const absl::Span<const int64_t> target = shape_extents;
  return MapModes</*kBroadcasts=*/true>(
      tensor, [&](absl::Span<const int64_t> in, auto& specs) -> absl::Status {
        const int64_t rank = in.size();
        if (static_cast<int64_t>(target.size()) < rank) {
          return ValueErrorCat("BroadcastTo: shape ", shape().ToString(),
                               " has ", target.size(),
                               " modes, fewer than the Tensor's ", rank);
        }
        const int64_t lead = target.size() - rank;
        specs.Start(target.size());
        for (int64_t p = 0; p < static_cast<int64_t>(target.size()); ++p) {
          const int64_t source = p - lead;
          if (source < 0 || (in[source] == 1 && target[p] != 1)) {
            specs.Append({-1, target[p]});
          } else if (in[source] == target[p]) {
            specs.Append({static_cast<int64_t>(source), 0});
          } else {
            return ValueErrorCat("BroadcastTo: dim ", source, " of extent ",
                                 in[source], " cannot broadcast to extent ",
                                 target[p]);
          }
        }
        specs.Finish();
        return absl::OkStatus();
      });
}

absl::StatusOr<Tensor> BroadcastTo(const Tensor& tensor,
                                   absl::Span<const int64_t> shape) {
  absl::StatusOr<Tensor> result = BroadcastToImpl(tensor, shape);
  Named("BroadcastTo", &result);
  return result;
}

static absl::StatusOr<Tensor> BroadcastInDimImpl(
    const Tensor& tensor, absl::Span<const int64_t> shape_extents,
    absl::Span<const int64_t> dims) {
  const IntTuple shape = IntTuple::Flat(shape_extents);
  STRATA_RETURN_IF_ERROR(CheckTargetExtents("BroadcastInDim", shape_extents));
  const absl::Span<const int64_t> target = shape_extents;
  return MapModes</*kBroadcasts=*/true>(
      tensor, [&](absl::Span<const int64_t> in, auto& specs) -> absl::Status {
        const int64_t rank = in.size();
        bool valid = static_cast<int64_t>(dims.size()) == rank;
        for (size_t i = 0; valid && i < dims.size(); ++i) {
          valid = dims[i] >= 0 &&
                  dims[i] < static_cast<int64_t>(target.size()) &&
                  (i == 0 || dims[i] > dims[i - 1]);
        }
        if (!valid) {
          return ValueErrorCat("BroadcastInDim: dims (",
                               absl::StrJoin(dims, ","), ") must be ", rank,
                               " strictly increasing positions in shape ",
                               shape.ToString());
        }
        size_t source = 0;
        specs.Start(target.size());
        for (int64_t p = 0; p < static_cast<int64_t>(target.size()); ++p) {
          if (source < dims.size() && dims[source] == p) {
            if (in[source] == target[p]) {
              specs.Append({static_cast<int64_t>(source), 0});
            } else if (in[source] == 1) {
              specs.Append({-1, target[p]});
            } else {
              return ValueErrorCat("BroadcastInDim: dim ", source,
                                   " of extent ", in[source],
                                   " cannot broadcast to extent ", target[p]);
            }
            ++source;
          } else {
            specs.Append({-1, target[p]});
          }
        }
        specs.Finish();
        return absl::OkStatus();
      });
}

absl::StatusOr<Tensor> BroadcastInDim(const Tensor& tensor,
                                      absl::Span<const int64_t> shape,
                                      absl::Span<const int64_t> dims) {
  absl::StatusOr<Tensor> result = BroadcastInDimImpl(tensor, shape, dims);
  Named("BroadcastInDim", &result);
  return result;
}

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

// ReshapeByMerging's pass where every mode of L_0 (and so of S_0, where
// given) is one leaf: no leaf of a single-mode run can coalesce with another,
// so the runs are checked and their modes named in one pass over the target,
// from the leaves, into extents, l_out and s_out (target.size() entries each;
// s_out only with s0). It admits exactly what the general pass admits on such
// layouts.
bool MergeFlatModes(const Layout& l0, const Layout* s0,
                    absl::Span<const int64_t> target, int64_t* extents,
                    int64_t* l_out, int64_t* s_out) {
  const IntTuple& shape = l0.shape();
  const int n = shape.num_leaves();
  const int64_t* in = shape.leaves().data();
  const int64_t* l_strides = l0.stride().leaves().data();
  const int64_t* s_strides =
      s0 != nullptr ? s0->stride().leaves().data() : nullptr;
  for (int k = 0; k < n; ++k)
    if (in[k] <= 1) return false;
  int a = 0;
  int j = 0;
  for (const int64_t t : target) {
    if (t <= 1 || a == n) return false;
    int b = a;
    int64_t product = 1;
    while (b < n && product < t) {
      if (!CheckedMul(product, in[b], &product)) return false;
      ++b;
    }
    if (product != t) return false;
    // A run of integer modes merges where the strides chain in every
    // operand (NOTE [ Reshape by merging modes ]).
    for (int k = a; k + 1 < b; ++k) {
      if (!Chains(l_strides[k], in[k + 1], l_strides[k + 1])) return false;
      if (s0 != nullptr && !Chains(s_strides[k], in[k + 1], s_strides[k + 1]))
        return false;
    }
    extents[j] = t;
    l_out[j] = l_strides[b - 1];
    if (s0 != nullptr) s_out[j] = s_strides[b - 1];
    ++j;
    a = b;
  }
  return a == n;
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

static absl::StatusOr<Tensor> ReshapeImpl(const Tensor& tensor,
                                          absl::Span<const int64_t> shape) {
  STRATA_RETURN_IF_ERROR(CheckTargetExtents("Reshape", shape));
  const absl::Span<const int64_t> target = shape;
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
  const Representation& rep = TensorAccess::representation(tensor);
  const Layout& l0 = rep.subtensor(0).placement;
  constexpr int kFlat = LayoutAssembler::kFlatBuffer;
  if (size > 0 && rep.num_levels() == 1 && target.size() <= kFlat &&
      IsFlat(l0.shape())) {
    // NOTE [ One-level flat views ] in core/representation.cc; where the
    // modes do not merge, ReshapeByMerging's general pass would not either.
    int64_t extents[kFlat] = {};
    int64_t strides[kFlat] = {};
    if (MergeFlatModes(l0, nullptr, target, extents, strides, nullptr)) {
      return OneLevelFlatTensor(
          rep, rep.subtensor(0).offset, static_cast<int>(target.size()),
          extents, strides,
          LayoutAssembler::DerivedBounds::KeepingReach(size, l0, nullptr));
    }
    return views_internal::ReshapeByComposition(tensor, target);
  }
  if (size > 0) {
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
  absl::StatusOr<Tensor> result = ReshapeImpl(tensor, shape);
  Named("Reshape", &result);
  return result;
}

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
    return Publish(draft);
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
  return Publish(draft);
}

}  // namespace views_internal

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
    Representation::ViewDraft draft(rep);
    const Layout* s0 = levels ? &rep.adjacent_layouts()[0] : nullptr;
    // Every mode kept but dim, which becomes (count):(step * stride).
    ModeSpecs specs;
    SpecWriter writer(&specs, elements.size());
    for (int i = 0; i < elements.size(); ++i) {
      writer.Append(i == dim ? ModeSpec{-1, count, l_stride, s_stride}
                             : ModeSpec{i, 0});
    }
    writer.Finish();
    LayoutAssembler::DerivedBounds bounds;
    if (!empty) {
      bounds.size = l0.size() / extent * count;
      shifted(l0, l_stride, &bounds.max_index, &bounds.min_index);
      if (levels) {
        shifted(*s0, s_stride, &bounds.twin_max_index, &bounds.twin_min_index);
      }
    }
    if (absl::Status s = LayoutAssembler::GatherModes(
            l0, elements.table(), s0,
            absl::MakeConstSpan(specs.data(), specs.size()),
            empty ? nullptr : &bounds, &draft.placement(0),
            levels ? &draft.adjacent(0) : nullptr);
        !s.ok()) {
      // Not reached: an empty source's bounds are computed, and every part
      // of them is at most the validated source's.
      return s;
    }
    draft.offset(0) = offset;
    if (levels) {
      const int64_t s_base = start * s0->stride().leaves()[leaf];
      STRATA_RETURN_IF_ERROR(NarrowLevels(rep, s_base, &draft));
    }
    return Publish(draft);
  }
  return views_internal::SliceByComposition(tensor, dim, start, count, step);
}

absl::StatusOr<Tensor> Slice(const Tensor& tensor, int64_t dim, int64_t start,
                             int64_t stop, int64_t step) {
  absl::StatusOr<Tensor> result = SliceImpl(tensor, dim, start, stop, step);
  Named("Slice", &result);
  return result;
}

namespace {

// NOTE [ AsStrided by leaves ]
// A multi-level AsStrided must find, for each new coordinate, the level-0
// coordinate whose carrier index it names (the general path composes with
// L_0's left inverse, then with L_0 and S_0 jointly). Where the new layout
// walks L_0's own leaves, the answer is plain: the offset's digits in L_0's
// leaves (greedy by decreasing stride, exact when it lands: L_0 is
// injective), and each new leaf (n, d) of extent > 1 either stays (d == 0:
// it reaches one coordinate) or moves one unused leaf of L_0 of stride d by
// 1 from its digit c, with c + n - 1 below its extent -- or, from c == 0, a
// run of L_0's leaves whose strides chain (e_j * s_j is the next one's
// stride), as a whole leaves and a part of the last; the new leaf is then
// refined into the run's leaves, in L_0 and S_0 alike. Distinct new leaves
// move distinct leaves, so no digit carries: the new coordinate's carrier
// index is L_0 of that coordinate, and S_0 reads it there. Anything else
// (negative strides, a leaf moved twice, a stride L_0 lacks, an offset with
// no digits) goes through composition, which gives the same layouts
// (views_test: AsStridedFastPathEqualsComposition).
bool AsStridedByLeaves(const Representation& rep, const Layout& layout,
                       int64_t offset, Representation::ViewDraft* draft,
                       int64_t* level1_base) {
  constexpr int kMaxLeaves = 16;
  const Subtensor& level0 = rep.subtensor(0);
  const Layout& l0 = level0.placement;
  const Layout& s0 = rep.adjacent_layouts()[0];
  const int64_t delta = offset - level0.offset;
  // Raw pointers: a span's operator[] checks its bound on every access.
  const int64_t* e = l0.shape().leaves().data();
  const int64_t* s = l0.stride().leaves().data();
  const int64_t* t = s0.stride().leaves().data();
  const int m = l0.shape().num_leaves();
  if (delta < 0 || m > kMaxLeaves) return false;
  // The leaves that move, by decreasing stride.
  int order[kMaxLeaves];
  int moving = 0;
  for (int j = 0; j < m; ++j) {
    if (e[j] <= 1) continue;
    if (s[j] <= 0) return false;
    int at = moving++;
    while (at > 0 && s[order[at - 1]] < s[j]) {
      order[at] = order[at - 1];
      --at;
    }
    order[at] = j;
  }
  int64_t digit[kMaxLeaves] = {};
  int64_t rest = delta;
  for (int i = 0; i < moving; ++i) {
    const int j = order[i];
    const int64_t q = rest / s[j];
    if (q >= e[j]) return false;
    digit[j] = q;
    rest -= q * s[j];  // q * s[j] <= rest.
  }
  if (rest != 0) return false;
  // The new leaves, each as its pieces: (extent, L_0 stride, S_0 stride).
  // Each piece that moves lies on its own leaf of L_0 (`used`), so there are
  // at most m of them, and one more per new leaf that does not move.
  const int64_t* n = layout.shape().leaves().data();
  const int64_t* d = layout.stride().leaves().data();
  const int new_leaves = layout.shape().num_leaves();
  if (new_leaves > kMaxLeaves) return false;
  bool used[kMaxLeaves] = {};
  int counts[kMaxLeaves];
  constexpr int kMaxPieces = 2 * kMaxLeaves;
  int64_t extents[kMaxPieces], l_strides[kMaxPieces], s_strides[kMaxPieces];
  int num_pieces = 0;
  auto find = [&](int64_t stride) {
    for (int j = 0; j < m; ++j) {
      if (e[j] > 1 && !used[j] && s[j] == stride) return j;
    }
    return -1;
  };
  for (int k = 0; k < new_leaves; ++k) {
    if (n[k] == 1 || d[k] == 0) {
      // One coordinate, or the same one n times: stride 0 in both (an
      // extent-1 leaf's stride is 0, as composition writes it).
      counts[k] = 1;
      extents[num_pieces] = n[k];
      l_strides[num_pieces] = 0;
      s_strides[num_pieces] = 0;
      ++num_pieces;
      continue;
    }
    int j = d[k] > 0 ? find(d[k]) : -1;
    if (j < 0) return false;
    int64_t need = n[k];
    int pieces = 0;
    int previous = -1;  // The leaf of L_0 the last piece moves.
    // A piece on the next leaf of L_0 (extent-1 leaves skipped) whose strides
    // chain from the previous piece's in L_0 and S_0 alike merges with it:
    // composition coalesces those leaves jointly.
    auto add_piece = [&](int64_t extent, int64_t l_stride, int64_t s_stride) {
      int next_leaf = previous + 1;
      while (previous >= 0 && next_leaf < m && e[next_leaf] == 1) ++next_leaf;
      const bool neighbour = previous >= 0 && next_leaf == j;
      previous = j;
      int64_t l_seam, s_seam;
      const int last = num_pieces - 1;
      if (neighbour && CheckedMul(extents[last], l_strides[last], &l_seam) &&
          l_seam == l_stride &&
          CheckedMul(extents[last], s_strides[last], &s_seam) &&
          s_seam == s_stride) {
        extents[last] *= extent;  // At most n[k].
        return;
      }
      extents[num_pieces] = extent;
      l_strides[num_pieces] = l_stride;
      s_strides[num_pieces] = s_stride;
      ++num_pieces;
      ++pieces;
    };
    while (true) {
      used[j] = true;
      if (need - 1 < e[j] - digit[j]) {
        add_piece(need, s[j], t[j]);
        break;
      }
      if (digit[j] != 0 || need % e[j] != 0) return false;
      add_piece(e[j], s[j], t[j]);
      need /= e[j];
      int64_t next;
      if (!CheckedMul(e[j], s[j], &next)) return false;
      j = find(next);
      if (j < 0) return false;
    }
    counts[k] = pieces;
  }
  // S_0 at the offset's coordinate: a value S_0 reaches, so no overflow.
  int64_t base = 0;
  for (int j = 0; j < m; ++j) base += digit[j] * t[j];
  *level1_base = base;
  // The new L_0 reaches what `layout` reaches (a leaf split into pieces
  // whose strides chain is the same function), so it has its bounds. S_0's
  // are the sums of its pieces' parts (NOTE [ Layout bounds ] in
  // layout/layout.cc), each at most S_0's part on the leaf of L_0 the piece
  // lies on, a different leaf for every piece that moves: no overflow.
  LayoutAssembler::DerivedBounds bounds = {layout.size(), layout.max_index(),
                                           layout.min_index()};
  for (int p = 0; p < num_pieces; ++p) {
    const int64_t part = (extents[p] - 1) * s_strides[p];
    (part >= 0 ? bounds.twin_max_index : bounds.twin_min_index) += part;
  }
  // The new L_0, its shape refined where pieces split a leaf (a one-mode
  // layout keeps one mode, as composition's results do); S_0 takes that
  // shape with its own strides.
  LayoutAssembler::WithRefinedLeaves(
      layout, absl::MakeConstSpan(counts, new_leaves),
      absl::MakeConstSpan(extents, num_pieces),
      absl::MakeConstSpan(l_strides, num_pieces),
      absl::MakeConstSpan(s_strides, num_pieces), bounds, &draft->placement(0),
      &draft->adjacent(0));
  return true;
}

}  // namespace

static absl::StatusOr<Tensor> AsStridedImpl(const Tensor& tensor,
                                            const Layout& layout,
                                            int64_t offset, bool by_leaves) {
  if (offset < 0) {
    return ValueErrorCat("AsStrided: offset ", offset,
                         " is negative; Tensor offsets must be non-negative");
  }
  const Representation& rep = TensorAccess::representation(tensor);
  if (rep.num_levels() == 1) {
    // The given layout is L_0 as it is, checked as Create checks it.
    STRATA_ASSIGN_OR_RETURN(
        auto view,
        Representation::OneLevelViewWithPlacement(rep, offset, layout));
    return MakeTensor(std::move(view));
  }
  Representation::ViewDraft draft(rep);
  draft.offset(0) = offset;
  if (layout.size() == 0) {
    // The given layout is L_0 as it is; every other path writes its own
    // (refined where S_0 splits a leaf).
    draft.placement(0) = layout;
    STRATA_ASSIGN_OR_RETURN(
        draft.adjacent(0),
        Layout::Create(layout.shape(),
                       layout.shape().TransformLeaves(
                           [](size_t, int64_t) { return int64_t{0}; })));
    return Publish(draft);
  }
  // Map each new coordinate back to a source coordinate through L_0's left
  // inverse.
  const Subtensor& level0 = rep.subtensor(0);
  const int64_t delta = offset - level0.offset;
  // LeftInverse is only a quasi-inverse where L_0 has stride-0 modes; a
  // carrier index would then name several source coordinates, whose deeper
  // levels may differ.
  const auto l0_extents = level0.placement.shape().leaves();
  const auto l0_strides = level0.placement.stride().leaves();
  for (size_t k = 0; k < l0_extents.size(); ++k) {
    if (l0_extents[k] > 1 && l0_strides[k] == 0) {
      return ValueErrorCat(
          "AsStrided: a multi-subtensor Tensor needs an injective L_0: ",
          level0.placement.ToString(), " has a leaf of extent ", l0_extents[k],
          " with stride 0");
    }
  }
  if (by_leaves) {
    int64_t level1_base;
    if (AsStridedByLeaves(rep, layout, offset, &draft, &level1_base)) {
      STRATA_RETURN_IF_ERROR(NarrowLevels(rep, level1_base, &draft));
      return Publish(draft);
    }
  }
  auto inverse = LeftInverse(level0.placement);
  if (!inverse.ok()) {
    return ValueErrorCat(
        "AsStrided: a multi-subtensor Tensor needs an injective "
        "L_0: ",
        inverse.status().message());
  }
  auto unreached = [&](absl::string_view why) {
    return ValueErrorCat("AsStrided: ", layout.ToString(), " at offset ",
                         offset, " reaches carrier indices that level 0 (",
                         level0.placement.ToString(), " at offset ",
                         level0.offset, ") does not: ", why);
  };
  if (delta < 0) return unreached("the offset precedes level 0's offset");
  auto back = ComposeJointly({*inverse}, delta, layout);
  if (!back.ok()) return unreached(back.status().message());
  const int64_t source_start = back->bases[0];
  // The inverse sends indices L_0 does not reach to coordinates that may lie
  // beyond L_0's domain, where composition extends L_0 along its last mode and
  // can land on the index again (L_0 = (2,2):(4,1) sends 2 to coordinate 4,
  // extended to 2): every source coordinate must be one of L_0's.
  if (int64_t last;
      back->results[0].min_index() < 0 ||
      !CheckedAdd(source_start, back->results[0].max_index(), &last) ||
      last >= level0.placement.size()) {
    return unreached("they map outside level 0's coordinates");
  }
  auto forward = ComposeJointly({level0.placement, rep.adjacent_layouts()[0]},
                                source_start, back->results[0]);
  if (!forward.ok()) return unreached(forward.status().message());
  if (forward->bases[0] != delta ||
      Coalesce(forward->results[0]) != Coalesce(layout)) {
    return unreached("they are not in the image of L_0");
  }
  // The layout, refined like S_0's image, keeps its modes: composition
  // refines an integer layout 6:1 into (2,3):(1,2) and returns a one-mode
  // tuple's mode, either of which would change the view's rank.
  auto keep_modes = [&](const Layout& x) -> absl::StatusOr<Layout> {
    auto rank = [](const Layout& l) {
      return l.shape().is_leaf() ? 1 : l.shape().rank();
    };
    if (rank(x) == rank(layout)) return x;
    if (rank(layout) == 1) return MakeLayout({x});
    return ValueErrorCat("AsStrided: composition changed the rank of ",
                         layout.ToString(), " to that of ", x.ToString());
  };
  STRATA_ASSIGN_OR_RETURN(draft.placement(0), keep_modes(forward->results[0]));
  STRATA_ASSIGN_OR_RETURN(draft.adjacent(0), keep_modes(forward->results[1]));
  STRATA_RETURN_IF_ERROR(NarrowLevels(rep, forward->bases[1], &draft));
  return Publish(draft);
}

absl::StatusOr<Tensor> AsStrided(const Tensor& tensor, const Layout& layout,
                                 int64_t offset) {
  absl::StatusOr<Tensor> result =
      AsStridedImpl(tensor, layout, offset, /*by_leaves=*/true);
  Named("AsStrided", &result);
  return result;
}

namespace views_internal {

absl::StatusOr<Tensor> AsStridedByComposition(const Tensor& tensor,
                                              const Layout& layout,
                                              int64_t offset) {
  return AsStridedImpl(tensor, layout, offset, /*by_leaves=*/false);
}

}  // namespace views_internal

}  // namespace strata
