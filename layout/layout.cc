#include "layout/layout.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

namespace {

// The checks of ComputeBounds with their messages (the fast loop there only
// says whether one fails).
absl::Status ComputeBoundsWithMessages(const IntTuple& shape,
                                       const IntTuple& stride,
                                       int64_t* size_out, int64_t* max_out,
                                       int64_t* min_out) {
  const auto extents = shape.leaves();
  const auto strides = stride.leaves();
  for (size_t k = 0; k < extents.size(); ++k) {
    if (extents[k] < 0) {
      return ValueErrorCat("layout ", shape.ToString(), ":", stride.ToString(),
                           ": extent ", extents[k], " of leaf ", k,
                           " is negative");
    }
  }
  // NOTE [ Layout bounds ]
  // The bounds are checked over the leaves of positive extent even when
  // another leaf is 0, so that every mode of an empty layout (Layout::mode,
  // TopLevelModes) is itself a valid layout. A non-empty layout's bounds are
  // sums over its leaves, max_index of (extent - 1) * stride over the
  // positive strides and min_index over the negative ones, whatever the
  // leaves' order and nesting: leaves of extent 1 or stride 0 add 0, so
  // adding, removing or reordering them, or widening a stride-0 leaf, keeps
  // the bounds (LayoutAssembler::GatherModes), and replacing one leaf
  // changes them by that leaf's part (Slice's DerivedBounds).
  int64_t size = 1;
  int64_t max_index = 0;
  int64_t min_index = 0;
  bool empty = false;
  for (size_t k = 0; k < extents.size(); ++k) {
    if (extents[k] == 0) {
      empty = true;
      continue;
    }
    int64_t span = 0;
    int64_t* bound = strides[k] >= 0 ? &max_index : &min_index;
    if (!CheckedMul(size, extents[k], &size)) {
      return ValueErrorCat("layout ", shape.ToString(), ":", stride.ToString(),
                           ": the size overflows int64 at leaf ", k,
                           " (extent ", extents[k], ")");
    }
    if (!CheckedMul(extents[k] - 1, strides[k], &span) ||
        !CheckedAdd(*bound, span, bound)) {
      return ValueErrorCat("layout ", shape.ToString(), ":", stride.ToString(),
                           ": the ", strides[k] >= 0 ? "largest" : "smallest",
                           " index overflows int64 at leaf ", k, " (extent ",
                           extents[k], ", stride ", strides[k], ")");
    }
  }
  if (max_index == INT64_MAX) {  // cosize() == max_index + 1 must fit.
    return ValueErrorCat("layout ", shape.ToString(), ":", stride.ToString(),
                         ": the largest index ", max_index,
                         " leaves no room for cosize (largest index + 1) "
                         "in int64");
  }
  if (empty) {
    // No coordinate exists, so no index is reachable: size, cosize and bounds
    // are 0.
    size = max_index = min_index = 0;
  }
  *size_out = size;
  *max_out = max_index;
  *min_out = min_index;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Layout> Layout::Create(IntTuple shape, IntTuple stride) {
  if (!shape.SameStructure(stride)) {
    return ValueErrorCat("stride ", stride.ToString(),
                         " is not congruent with shape ", shape.ToString());
  }
  int64_t size, max_index, min_index;
  STRATA_RETURN_IF_ERROR(
      ComputeBounds(shape, stride, &size, &max_index, &min_index));
  return Layout(std::move(shape), std::move(stride), size, max_index,
                min_index);
}

absl::Status Layout::ComputeBounds(const IntTuple& shape,
                                   const IntTuple& stride, int64_t* size_out,
                                   int64_t* max_out, int64_t* min_out) {
  // The same arithmetic as ComputeBoundsWithMessages, branch-light; any
  // failure is reported there, with its message.
  const int64_t* extents = shape.leaves().data();
  const int64_t* strides = stride.leaves().data();
  const int n = shape.num_leaves();
  int64_t size = 1, max_index = 0, min_index = 0;
  bool empty = false;
  bool overflow = false;
  for (int k = 0; k < n; ++k) {
    const int64_t e = extents[k];
    if (e <= 0) {
      if (e < 0) overflow = true;
      empty = true;
      continue;
    }
    // Both bounds are updated, one by 0: selecting one through a pointer kept
    // them in memory.
    const int64_t stride = strides[k];
    int64_t span;
    overflow |= __builtin_mul_overflow(size, e, &size);
    overflow |= __builtin_mul_overflow(e - 1, stride, &span);
    overflow |=
        __builtin_add_overflow(max_index, stride >= 0 ? span : 0, &max_index);
    overflow |=
        __builtin_add_overflow(min_index, stride >= 0 ? 0 : span, &min_index);
  }
  if (overflow || max_index == INT64_MAX) {
    return ComputeBoundsWithMessages(shape, stride, size_out, max_out, min_out);
  }
  if (empty) size = max_index = min_index = 0;
  *size_out = size;
  *max_out = max_index;
  *min_out = min_index;
  return absl::OkStatus();
}

void LayoutAssembler::TakeBounds(const DerivedBounds& bounds, Layout* out,
                                 Layout* twin_out) {
  out->size_ = bounds.size;
  out->max_index_ = bounds.max_index;
  out->min_index_ = bounds.min_index;
  if (twin_out == nullptr) return;
  twin_out->size_ = bounds.size;
  twin_out->max_index_ = bounds.twin_max_index;
  twin_out->min_index_ = bounds.twin_min_index;
}

absl::Status LayoutAssembler::SetBounds(Layout* l) {
  absl::Status status = Layout::ComputeBounds(l->shape_, l->stride_, &l->size_,
                                              &l->max_index_, &l->min_index_);
  if (!status.ok()) *l = Layout();
  return status;
}

void LayoutAssembler::WriteFlat(int n, const int64_t* extent,
                                const int64_t* stride,
                                const int64_t* twin_stride,
                                const DerivedBounds& bounds, Layout* out,
                                Layout* twin_out) {
  static_assert(kFlatBuffer == kLeaves && kLeaves < kTokens);
  // Tokens: the mode count, then one leaf token per mode (a fixed-size fill
  // below kTokens), or the integer's one leaf token.
  int32_t tokens[kTokens];
  const bool fits = n <= kLeaves;  // Then n + 1 tokens fit kTokens too.
  std::vector<int32_t> big_tokens;
  int32_t* t = tokens;
  if (fits) {
    for (int x = 1; x < kTokens; ++x) t[x] = IntTuple::kLeafToken;
  } else {
    big_tokens.resize(n + 1);
    t = big_tokens.data();
    for (int x = 1; x <= n; ++x) t[x] = IntTuple::kLeafToken;
  }
  t[0] = n == 1 ? IntTuple::kLeafToken : n;
  const int num_tokens = n == 1 ? 1 : n + 1;
  auto write = [&](auto& vector, const auto* buffer, int count) {
    if (fits) {
      vector.assign_from_buffer(buffer, count);
    } else {
      vector.assign(buffer, buffer + count);
    }
  };
  auto write_layout = [&](const int64_t* strides, Layout* l) {
    write(l->shape_.tokens_, t, num_tokens);
    write(l->shape_.leaves_, extent, n);
    write(l->stride_.tokens_, t, num_tokens);
    write(l->stride_.leaves_, strides, n);
  };
  write_layout(stride, out);
  if (twin_out != nullptr) write_layout(twin_stride, twin_out);
  TakeBounds(bounds, out, twin_out);
}

void LayoutAssembler::WithRefinedLeaves(const Layout& shaped,
                                        absl::Span<const int> counts,
                                        absl::Span<const int64_t> extents,
                                        absl::Span<const int64_t> strides,
                                        absl::Span<const int64_t> twin_strides,
                                        const DerivedBounds& bounds,
                                        Layout* out, Layout* twin_out) {
  const IntTuple& shape = shaped.shape_;
  const bool wrap = shape.is_leaf() && counts[0] > 1;
  // Each leaf becomes a tuple node and its pieces' leaf tokens: at most twice
  // as many tokens as pieces, plus the shape's inner nodes and the wrap.
  const size_t capacity =
      shape.tokens_.size() + 2 * extents.size() + (wrap ? 1 : 0);
  layout_internal::SmallVector<int32_t, 16> tokens;
  tokens.resize_for_overwrite(capacity);
  int32_t* t = tokens.data();
  int n = 0;
  if (wrap) t[n++] = 1;
  int leaf = 0;
  for (const int32_t token : shape.tokens_) {
    if (token != IntTuple::kLeafToken) {
      t[n++] = token;
      continue;
    }
    // A leaf is still one child of its parent, whatever replaces it.
    const int count = counts[leaf++];
    if (count > 1) t[n++] = count;
    for (int j = 0; j < count; ++j) t[n++] = IntTuple::kLeafToken;
  }
  auto write = [&](const int64_t* piece_strides, Layout* l) {
    l->shape_.tokens_.assign(t, t + n);
    l->stride_.tokens_.assign(t, t + n);
    l->shape_.leaves_.assign(extents.data(), extents.data() + extents.size());
    l->stride_.leaves_.assign(piece_strides, piece_strides + extents.size());
  };
  write(strides.data(), out);
  write(twin_strides.data(), twin_out);
  TakeBounds(bounds, out, twin_out);
}

absl::Status LayoutAssembler::WithShapeOf(const Layout& shaped,
                                          absl::Span<const int64_t> strides,
                                          Layout* out,
                                          const DerivedBounds* bounds) {
  Layout& l = *out;
  if (out != &shaped) {
    l.shape_ = shaped.shape_;
    l.stride_.tokens_ = shaped.stride_.tokens_;
  }
  l.stride_.leaves_.assign(strides.data(), strides.data() + strides.size());
  if (bounds == nullptr) return SetBounds(&l);
  TakeBounds(*bounds, &l, nullptr);
  return absl::OkStatus();
}

absl::Status LayoutAssembler::WithLeaves(const Layout& shaped,
                                         absl::Span<const int64_t> extents,
                                         absl::Span<const int64_t> strides,
                                         Layout* out,
                                         const DerivedBounds* bounds) {
  Layout& l = *out;
  if (out != &shaped) {
    l.shape_.tokens_ = shaped.shape_.tokens_;
    l.stride_.tokens_ = shaped.stride_.tokens_;
  }
  l.shape_.leaves_.assign(extents.data(), extents.data() + extents.size());
  l.stride_.leaves_.assign(strides.data(), strides.data() + strides.size());
  if (bounds == nullptr) return SetBounds(&l);
  TakeBounds(*bounds, &l, nullptr);
  return absl::OkStatus();
}

namespace {

// The width of the fixed-size fill of a flat layout's leaf tokens: the local
// token buffer's capacity (LayoutAssembler::kTokens, asserted there).
constexpr int kGatherTokens = 16;

// GatherModes' pass over the specs: tokens, extents and strides (and the
// twin's strides) in order, into buffers of `token_capacity` and
// `leaf_capacity` entries; false, with the counts unset, where they do not
// fit. `modes` is null where every source mode is one leaf. A
// hierarchical mode (possibly an empty tuple, with no leaf) is copied in one
// walk of its tokens, a leaf's values as its token passes (a loop of
// data-dependent length, which the compiler does not widen into vector code
// for two or three entries). The twin is a template argument, so that its
// stores cost nothing without one.
template <bool kTwin>
bool GatherSpecs(absl::Span<const LayoutAssembler::ModeSpec> specs,
                 const LayoutAssembler::ModeTable* modes,
                 const int32_t* source_tokens, const int64_t* source_extents,
                 const int64_t* source_strides,
                 const int64_t* twin_source_strides, int token_capacity,
                 int leaf_capacity, int32_t* tokens, int64_t* extents,
                 int64_t* strides, int64_t* twin_strides, int* num_tokens,
                 int* num_leaves) {
  const int n = static_cast<int>(specs.size());
  if (token_capacity < 1) return false;
  tokens[0] = n;
  int t = 1;
  int k = 0;
  if (modes == nullptr) {
    // Every mode is one token and one leaf.
    if (n + 1 > token_capacity || n > leaf_capacity) return false;
    // A fixed-size fill is a few vector stores, where a fill of n becomes a
    // call to memset.
    if (token_capacity >= kGatherTokens && n < kGatherTokens) {
      for (int x = 1; x < kGatherTokens; ++x) tokens[x] = IntTuple::kLeafToken;
    } else {
      for (int x = 1; x <= n; ++x) tokens[x] = IntTuple::kLeafToken;
    }
    t += n;
    for (const LayoutAssembler::ModeSpec& m : specs) {
      const int64_t i = m.source;
      extents[k] = i >= 0 ? source_extents[i] : m.extent;
      strides[k] = i >= 0 ? source_strides[i] : m.stride;
      if (kTwin)
        twin_strides[k] = i >= 0 ? twin_source_strides[i] : m.twin_stride;
      ++k;
    }
    *num_tokens = t;
    *num_leaves = k;
    return true;
  }
  const int32_t* token_at = modes->token;
  const int32_t* leaf_at = modes->leaf;
  for (const LayoutAssembler::ModeSpec& m : specs) {
    const int64_t i = m.source;
    int source_token = i < 0 ? 0 : token_at[i];
    int source_leaf = i < 0 ? 0 : leaf_at[i];
    if (i < 0 || source_tokens[source_token] == IntTuple::kLeafToken) {
      // A new integer mode, or an integer mode of the source (most modes).
      if (t + 1 > token_capacity || k + 1 > leaf_capacity) return false;
      tokens[t++] = IntTuple::kLeafToken;
      extents[k] = i < 0 ? m.extent : source_extents[source_leaf];
      strides[k] = i < 0 ? m.stride : source_strides[source_leaf];
      if (kTwin) {
        twin_strides[k] =
            i < 0 ? m.twin_stride : twin_source_strides[source_leaf];
      }
      ++k;
      continue;
    }
    if (t + (token_at[i + 1] - source_token) > token_capacity ||
        k + (leaf_at[i + 1] - source_leaf) > leaf_capacity) {
      return false;
    }
    int pending = 1;  // Nodes of the mode still to copy.
    while (pending > 0) {
      const int32_t token = source_tokens[source_token++];
      tokens[t++] = token;
      --pending;
      if (token != IntTuple::kLeafToken) {
        pending += token;
        continue;
      }
      extents[k] = source_extents[source_leaf];
      strides[k] = source_strides[source_leaf];
      if (kTwin) twin_strides[k] = twin_source_strides[source_leaf];
      ++k;
      ++source_leaf;
    }
  }
  *num_tokens = t;
  *num_leaves = k;
  return true;
}

}  // namespace

absl::Status LayoutAssembler::GatherModes(const Layout& source,
                                          const ModeTable* modes,
                                          const Layout* twin,
                                          absl::Span<const ModeSpec> specs,
                                          const DerivedBounds* bounds,
                                          Layout* out, Layout* twin_out) {
  const int32_t* source_tokens = source.shape_.tokens_.data();
  const int64_t* source_extents = source.shape_.leaves_.data();
  const int64_t* source_strides = source.stride_.leaves_.data();
  const int64_t* twin_source_strides =
      twin != nullptr ? twin->stride_.leaves_.data() : nullptr;
  auto gather = [&](int token_capacity, int leaf_capacity, int32_t* tokens,
                    int64_t* extents, int64_t* strides, int64_t* twin_strides,
                    int* num_tokens, int* num_leaves) {
    if (twin != nullptr) {
      return GatherSpecs<true>(specs, modes, source_tokens, source_extents,
                               source_strides, twin_source_strides,
                               token_capacity, leaf_capacity, tokens, extents,
                               strides, twin_strides, num_tokens, num_leaves);
    }
    return GatherSpecs<false>(specs, modes, source_tokens, source_extents,
                              source_strides, nullptr, token_capacity,
                              leaf_capacity, tokens, extents, strides, nullptr,
                              num_tokens, num_leaves);
  };
  // Gathered into local buffers, which no store can alias (the specs' fields
  // and the outputs' sizes are not reloaded), and written into the outputs
  // with fixed-size copies; beyond kTokens or kLeaves, counted and gathered
  // again into buffers of their size.
  static_assert(kTokens == kGatherTokens);
  int32_t local_tokens[kTokens];
  int64_t local_extents[kLeaves];
  int64_t local_strides[kLeaves];
  int64_t local_twin_strides[kLeaves];
  int num_tokens = 0;
  int num_leaves = 0;
  const bool fits =
      gather(kTokens, kLeaves, local_tokens, local_extents, local_strides,
             local_twin_strides, &num_tokens, &num_leaves);
  int32_t* tokens = local_tokens;
  int64_t* extents = local_extents;
  int64_t* strides = local_strides;
  int64_t* twin_strides = local_twin_strides;
  std::vector<int32_t> big_tokens;
  std::vector<int64_t> big_leaves;
  if (!fits) {
    int token_count = 1;
    int leaf_count = 0;
    for (const ModeSpec& m : specs) {
      const bool integer = m.source < 0 || modes == nullptr;
      token_count +=
          integer ? 1 : modes->token[m.source + 1] - modes->token[m.source];
      leaf_count +=
          integer ? 1 : modes->leaf[m.source + 1] - modes->leaf[m.source];
    }
    big_tokens.resize(token_count);
    big_leaves.resize(3 * static_cast<size_t>(leaf_count));
    tokens = big_tokens.data();
    extents = big_leaves.data();
    strides = extents + leaf_count;
    twin_strides = strides + leaf_count;
    // Counted exactly: the gather fits.
    if (!gather(token_count, leaf_count, tokens, extents, strides, twin_strides,
                &num_tokens, &num_leaves)) {
      return absl::InternalError("GatherModes: the counted buffers overflow");
    }
  }
  if (num_tokens == 2 && tokens[1] == IntTuple::kLeafToken) {
    tokens[0] = IntTuple::kLeafToken;  // One integer mode: an integer layout.
    num_tokens = 1;
  }
  auto write = [&](auto& vector, const auto* buffer, int n) {
    if (fits) {
      vector.assign_from_buffer(buffer, n);
    } else {
      vector.assign(buffer, buffer + n);
    }
  };
  write(out->shape_.tokens_, tokens, num_tokens);
  write(out->shape_.leaves_, extents, num_leaves);
  write(out->stride_.tokens_, tokens, num_tokens);
  write(out->stride_.leaves_, strides, num_leaves);
  if (twin != nullptr) {
    write(twin_out->shape_.tokens_, tokens, num_tokens);
    write(twin_out->shape_.leaves_, extents, num_leaves);
    write(twin_out->stride_.tokens_, tokens, num_tokens);
    write(twin_out->stride_.leaves_, twin_strides, num_leaves);
  }
  if (bounds == nullptr) {
    absl::Status status = SetBounds(out);
    if (status.ok() && twin != nullptr) status = SetBounds(twin_out);
    if (!status.ok()) {
      *out = Layout();
      if (twin != nullptr) *twin_out = Layout();
    }
    return status;
  }
  TakeBounds(*bounds, out, twin != nullptr ? twin_out : nullptr);
  return absl::OkStatus();
}

namespace {

absl::StatusOr<Layout> CompactLayout(IntTuple shape, bool column_major) {
  const auto extents = shape.leaves();
  absl::InlinedVector<int64_t, 8> strides(extents.size());
  int64_t running = 1;
  for (size_t n = 0; n < extents.size(); ++n) {
    const size_t k = column_major ? n : extents.size() - 1 - n;
    strides[k] = running;
    // Extents of 0 keep the running stride (as CuTe's compact layouts do).
    if (extents[k] > 0 && !CheckedMul(running, extents[k], &running)) {
      return ValueErrorCat("compact layout of shape ", shape.ToString(),
                           " overflows 64-bit strides");
    }
  }
  IntTuple stride = shape.TransformLeaves(
      [&strides](size_t i, int64_t) { return strides[i]; });
  return Layout::Create(std::move(shape), std::move(stride));
}

}  // namespace

absl::StatusOr<Layout> Layout::ColumnMajor(IntTuple shape) {
  return CompactLayout(std::move(shape), /*column_major=*/true);
}

absl::StatusOr<Layout> Layout::RowMajor(IntTuple shape) {
  return CompactLayout(std::move(shape), /*column_major=*/false);
}

Layout Layout::mode(int i) const {
  if (shape_.is_leaf()) return *this;
  // A sub-layout of a valid layout is valid, also of an empty one: its size
  // and bounds are partial products and sums of ours (NOTE [ Layout bounds ]).
  return *Create(shape_[i], stride_[i]);
}

bool Layout::HasNonNegativeStrides() const {
  for (int64_t d : stride_.leaves()) {
    if (d < 0) return false;
  }
  return true;
}

int64_t Layout::operator()(int64_t linear) const {
  const auto extents = shape_.leaves();
  const auto strides = stride_.leaves();
  const size_t n = extents.size();
  if (n == 0 || size_ == 0) return 0;  // Also no division by an extent of 0.
  // Within the precondition every partial sum is a reachable index; outside
  // it (composition's extension of the last leaf, or a caller's error) the
  // arithmetic wraps instead of being undefined.
  uint64_t index = 0;
  for (size_t k = 0; k + 1 < n; ++k) {
    index += static_cast<uint64_t>(linear % extents[k]) *
             static_cast<uint64_t>(strides[k]);
    linear /= extents[k];
  }
  return static_cast<int64_t>(index +
                              static_cast<uint64_t>(linear) *
                                  static_cast<uint64_t>(strides[n - 1]));
}

absl::StatusOr<int64_t> Layout::Crd2Idx(const IntTuple& coord) const {
  auto out_of_shape = [&]() {
    return ValueErrorCat("coordinate ", coord.ToString(),
                         " is outside the shape of layout ", ToString());
  };
  const auto ctokens = coord.tokens();
  const auto stokens = shape_.tokens();
  const auto cvalues = coord.leaves();
  const auto extents = shape_.leaves();
  const auto strides = stride_.leaves();
  if (size_ == 0) return out_of_shape();
  size_t ci = 0;
  int sj = 0;
  size_t cleaf = 0;
  int sleaf = 0;
  int64_t index = 0;
  while (ci < ctokens.size()) {
    if (ctokens[ci] != IntTuple::kLeafToken) {
      if (stokens[sj] != ctokens[ci]) {
        return ValueErrorCat("coordinate ", coord.ToString(),
                             " is not congruent with the shape of layout ",
                             ToString());
      }
      ++ci;
      ++sj;
      continue;
    }
    // A coordinate integer addresses the whole shape subtree at sj.
    const int first = sleaf;
    sj = shape_.SubtreeEnd(sj, &sleaf);
    int64_t c = cvalues[cleaf++];
    ++ci;
    int64_t extent = 1;
    for (int k = first; k < sleaf; ++k) extent *= extents[k];  // <= size_.
    if (c < 0 || c >= extent) return out_of_shape();
    for (int k = first; k < sleaf; ++k) {
      const int64_t component = k + 1 < sleaf ? c % extents[k] : c;
      if (k + 1 < sleaf) c /= extents[k];
      index += component * strides[k];
    }
  }
  return index;
}

std::string Layout::ToString() const {
  return absl::StrCat(shape_.ToString(), ":", stride_.ToString());
}

absl::InlinedVector<Layout, 4> TopLevelModes(const Layout& layout) {
  absl::InlinedVector<Layout, 4> modes;
  if (layout.shape().is_leaf()) {
    modes.push_back(layout);
  } else {
    for (int i = 0; i < layout.rank(); ++i) modes.push_back(layout.mode(i));
  }
  return modes;
}

bool FunctionallyEqual(const Layout& a, const Layout& b) {
  if (a.size() != b.size()) return false;
  for (int64_t i = 0; i < a.size(); ++i) {
    if (a(i) != b(i)) return false;
  }
  return true;
}

absl::StatusOr<int64_t> TupleProduct(const IntTuple& tuple) {
  int64_t product = 1;
  for (int64_t v : tuple.leaves()) {
    if (!CheckedMul(product, v, &product)) {
      return ValueErrorCat("size of ", tuple.ToString(), " overflows 64 bits");
    }
  }
  return product;
}

absl::StatusOr<IntTuple> Idx2Crd(int64_t index, const IntTuple& shape) {
  STRATA_ASSIGN_OR_RETURN(const int64_t size, TupleProduct(shape));
  for (int64_t v : shape.leaves()) {
    if (v < 0) {
      return ValueErrorCat("shape ", shape.ToString(),
                           " has a negative extent");
    }
  }
  if (index < 0 || index >= size) {
    return ValueErrorCat("index ", index, " is outside [0, ", size,
                         ") of shape ", shape.ToString());
  }
  const auto extents = shape.leaves();
  const size_t n = extents.size();
  return shape.TransformLeaves([&](size_t k, int64_t extent) {
    if (k + 1 == n) return index;
    const int64_t component = index % extent;
    index /= extent;
    return component;
  });
}

absl::StatusOr<Layout> ParseLayout(absl::string_view text) {
  const size_t colon = text.find(':');
  if (colon == absl::string_view::npos) {
    return TypeErrorCat("\"", text.substr(0, 80),
                        "\" is not a layout: expected SHAPE:STRIDE");
  }
  STRATA_ASSIGN_OR_RETURN(IntTuple shape, ParseIntTuple(text.substr(0, colon)));
  STRATA_ASSIGN_OR_RETURN(IntTuple stride,
                          ParseIntTuple(text.substr(colon + 1)));
  if (!shape.SameStructure(stride)) {
    return TypeErrorCat("\"", text.substr(0, 80), "\" is not a layout: stride ",
                        stride.ToString(), " is not congruent with shape ",
                        shape.ToString());
  }
  return Layout::Create(std::move(shape), std::move(stride));
}

}  // namespace strata
