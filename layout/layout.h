// Layout: a CuTe-style hierarchical layout SHAPE:STRIDE, a function from
// coordinates to integer indices.
//
// For L = S:D with leaves (s_0..s_{n-1}) and (d_0..d_{n-1}):
// clang-format off
//   size(L)      = s_0 * ... * s_{n-1}
//   L(c)         = sum_k c_k * d_k for the natural (leaf-level) coordinate c;
//                  a linear coordinate i is first decoded colexicographically
//                  (first leaf fastest)
//   cosize(L)    = max_c L(c) + 1, and 0 when size(L) == 0
//   min_index(L) = min_c L(c) (negative only with negative strides)
// clang-format on
//
// Invariant (NOTE [ Layout bounds ]): Layout::Create admits only layouts whose
// size, every reachable index and cosize fit in int64_t, so that size(),
// cosize(), min_index() and crd2idx never overflow afterwards. The size and
// index bounds are checked over the leaves of positive extent even when an
// extent is 0, so that every mode of a valid layout is valid (mode() never
// fails). It caches the three bounds: validation costs O(1) per layout once
// built, O(leaves) to build.
#ifndef STRATA_LAYOUT_LAYOUT_H_
#define STRATA_LAYOUT_LAYOUT_H_

#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "layout/int_tuple.h"

namespace strata {

class Layout {
 public:
  // 1:0, the layout of one element.
  Layout() : shape_(1), stride_(0), size_(1), max_index_(0), min_index_(0) {}

  // Errors (ValueError): `stride` is not congruent with `shape` (same nesting);
  // an extent is negative; the product of the positive extents, or the
  // largest or smallest index they reach, does not fit in int64_t; the largest
  // index is INT64_MAX (cosize would not fit).
  static absl::StatusOr<Layout> Create(IntTuple shape, IntTuple stride);

  // Compact layouts of `shape`: column-major (first leaf fastest, CuTe's
  // default) and row-major (last leaf fastest, NumPy's C order). Errors as
  // Create.
  static absl::StatusOr<Layout> ColumnMajor(IntTuple shape);
  static absl::StatusOr<Layout> RowMajor(IntTuple shape);

  const IntTuple& shape() const { return shape_; }
  const IntTuple& stride() const { return stride_; }
  int rank() const { return shape_.rank(); }
  int depth() const { return shape_.depth(); }
  // Mode i as a layout (0 <= i < rank()); mode 0 of a leaf layout is the layout
  // itself.
  Layout mode(int i) const;

  int64_t size() const { return size_; }
  int64_t cosize() const { return size_ == 0 ? 0 : max_index_ + 1; }
  // Smallest and largest reachable index (both 0 for an empty layout).
  int64_t min_index() const { return min_index_; }
  int64_t max_index() const { return max_index_; }
  // Every leaf stride >= 0.
  bool HasNonNegativeStrides() const;

  // L(i) for a linear coordinate, without checks. Precondition: 0 <= i <
  // size(). Beyond size() the last leaf absorbs the quotient (composition's
  // extension); arithmetic that leaves int64 wraps (never undefined), and an
  // empty layout answers 0.
  int64_t operator()(int64_t linear) const;

  // L(c) for a linear or hierarchical coordinate weakly congruent with the
  // shape (a coordinate leaf may address a whole sub-shape linearly). Errors
  // (ValueError): the coordinate is not weakly congruent with the shape, or a
  // component lies outside its extent; the message quotes layout and
  // coordinate.
  absl::StatusOr<int64_t> Crd2Idx(const IntTuple& coord) const;

  // "SHAPE:STRIDE" in canonical notation (layout-cli.md).
  std::string ToString() const;

  // Structural equality (same shape and stride tuples). For equality as
  // functions use FunctionallyEqual.
  friend bool operator==(const Layout& a, const Layout& b) {
    return a.shape_ == b.shape_ && a.stride_ == b.stride_;
  }
  friend bool operator!=(const Layout& a, const Layout& b) { return !(a == b); }

 private:
  friend class LayoutAssembler;
  // Layout::Create's checks of a congruent shape and stride; sets the bounds.
  static absl::Status ComputeBounds(const IntTuple& shape,
                                    const IntTuple& stride, int64_t* size,
                                    int64_t* max_index, int64_t* min_index);
  Layout(IntTuple shape, IntTuple stride, int64_t size, int64_t max_index,
         int64_t min_index)
      : shape_(std::move(shape)),
        stride_(std::move(stride)),
        size_(size),
        max_index_(max_index),
        min_index_(min_index) {}
  // LayoutAssembler::FlatLayout's: tokens written in place, leaves copied
  // from whole buffers (IntTuple's preconditions).
  Layout(int32_t first_token, int num_tokens, const int64_t* extents,
         const int64_t* strides, int n, int64_t size, int64_t max_index,
         int64_t min_index)
      : shape_(first_token, num_tokens, extents, n),
        stride_(first_token, num_tokens, strides, n),
        size_(size),
        max_index_(max_index),
        min_index_(min_index) {}

  IntTuple shape_;
  IntTuple stride_;
  int64_t size_;
  int64_t max_index_;
  int64_t min_index_;
};

// Writes layouts in place from the modes of other layouts and new integer
// modes, without intermediate IntTuples, Layouts or StatusOrs (the views'
// path, NOTE [ Views build in place ] in core/representation.cc). Bounds are
// computed as Layout::Create computes them, with its errors (on error the
// outputs are 1:0), or taken from the caller, who derived them from layouts
// Create validated (NOTE [ Layout bounds ] in layout.cc); the property tests
// in views_test and layout_test compare them with Create's.
class LayoutAssembler {
 public:
  LayoutAssembler() = delete;

  // Where the top-level modes of a layout's shape lie: mode i spans tokens
  // [token[i], token[i + 1]) and leaves [leaf[i], leaf[i + 1]) of it. The
  // arrays are IntTuple::Elements' (Of) or a caller's own (the views keep
  // them on the stack), and must outlive the table.
  struct ModeTable {
    const int32_t* token;
    const int32_t* leaf;
    static ModeTable Of(const IntTuple::Elements& elements) {
      return {elements.token.data(), elements.leaf.data()};
    }
  };

  // One top-level mode of a layout GatherModes writes: top-level mode
  // `source` of the source layout, or (source < 0) a new integer mode
  // (extent):(stride), and (extent):(twin_stride) in the twin. 64-bit fields:
  // an int32_t field may alias the uint32_t size of the small vector that
  // holds the specs, which push_back would then reload after every store.
  struct ModeSpec {
    int64_t source;
    int64_t extent;
    int64_t stride = 0;
    int64_t twin_stride = 0;
  };
  // Bounds a caller derived for GatherModes' layouts from their sources' (NOTE
  // [ Layout bounds ] in layout.cc): `*out`'s size and extreme indices, and
  // the twin's (the twin has out's shape, so its size).
  struct DerivedBounds {
    int64_t size;
    int64_t max_index, min_index;
    int64_t twin_max_index = 0, twin_min_index = 0;
    // For layouts that reach exactly the indices their sources reach and
    // have `size` values (modes rearranged, modes of extent 1 added or
    // removed, new modes of stride 0, or runs of modes whose strides chain
    // merged into one: Permute, Squeeze, Unsqueeze, the broadcasts, Reshape
    // by merging): a valid layout's bounds hold for every layout of the same
    // leaves up to extent-1 and stride-0 leaves, and merged chains reach the
    // same indices; a size of 0 is an empty layout, whose bounds are 0.
    static DerivedBounds KeepingReach(int64_t size, const Layout& source,
                                      const Layout* twin) {
      if (size == 0) return {0, 0, 0, 0, 0};
      return {size, source.max_index(), source.min_index(),
              twin != nullptr ? twin->max_index() : 0,
              twin != nullptr ? twin->min_index() : 0};
    }
  };
  // Writes into `*out` the layout whose top-level modes `specs` name, read from
  // `source`, whose modes `*modes` locates (nullptr where every mode of
  // `source` is one leaf: mode i is leaf i); and, where `twin` is given, into
  // `*twin_out` the layout of the same shape whose strides are read from `twin`
  // at the same leaves (S_0 beside L_0: `twin` has `source`'s shape). One pass;
  // one integer mode stays an integer layout. With `bounds`, the layouts take
  // them, not recomputed. Precondition: Layout::Create accepts the gathered
  // leaves (the caller checked the size's product) and computes those bounds.
  // Without them, bounds are computed with Layout::Create's errors (on error
  // the outputs are 1:0). The outputs must not be `source` or `twin`.
  static absl::Status GatherModes(const Layout& source, const ModeTable* modes,
                                  const Layout* twin,
                                  absl::Span<const ModeSpec> specs,
                                  const DerivedBounds* bounds, Layout* out,
                                  Layout* twin_out);

  // Up to this many flat modes are copied whole, in fixed-size copies
  // (WriteFlat, FlatLayout).
  static constexpr int kFlatBuffer = 8;
  // Writes into `*out` the flat layout of `n` integer modes, extent[k] :
  // stride[k] (one mode: an integer layout), and where `twin_out` is given,
  // into it the layout of that shape with `twin_stride`; both take `bounds`
  // (GatherModes' precondition). Each buffer holds at least
  // max(n, kFlatBuffer) values.
  static void WriteFlat(int n, const int64_t* extent, const int64_t* stride,
                        const int64_t* twin_stride, const DerivedBounds& bounds,
                        Layout* out, Layout* twin_out);
  // The flat layout of `n` integer modes, extent[k] : stride[k] (one mode: an
  // integer layout), with the bounds `size`, `max_index` and `min_index`
  // (GatherModes' precondition), built in place: a prvalue, so that it
  // initializes a member directly (a fresh representation's placement, NOTE
  // [ One-level flat views ] in core/representation.cc). The bounds come as
  // values, not a DerivedBounds: the caller has just stored that struct one
  // field at a time, and the compiler read two fields back in one 16-byte
  // load, which cannot take its data from those stores (perf put most of
  // FlatLayout's samples there; the view's time moved within noise). Defined
  // here, to be inlined into the one block's construction: as a call it
  // cost a one-level view 1-2 ns of its 28-30 (a Zen 4, the peer binary).
  // Preconditions: 0 <= n <= kFlatBuffer, and both arrays hold kFlatBuffer
  // values.
  static Layout FlatLayout(int n, const int64_t* extent, const int64_t* stride,
                           int64_t size, int64_t max_index, int64_t min_index) {
    static_assert(kFlatBuffer + 1 <= IntTuple::kInlineTokens &&
                  kFlatBuffer <= IntTuple::kInlineLeaves);
    // The tokens: the mode count, then one leaf token per mode, or the
    // integer's one leaf token (written in place, IntTuple's constructor).
    const int32_t first_token = n == 1 ? IntTuple::kLeafToken : n;
    const int num_tokens = n == 1 ? 1 : n + 1;
    return Layout(first_token, num_tokens, extent, stride, n, size, max_index,
                  min_index);
  }

  // Writes into `*out` the layout of `shaped`'s shape with leaf k replaced by
  // the next counts[k] pieces (by that integer where counts[k] == 1, else by
  // the flat tuple of them), piece p being extents[p] : strides[p], and into
  // `*twin_out` the layout of that shape with `twin_strides`; an integer
  // `shaped` refined into a tuple stays one mode (its tuple wrapped once
  // more, as composition's results keep it). Both take `bounds` (GatherModes'
  // precondition). Preconditions: counts has one entry >= 1 per leaf of
  // `shaped`, and the spans of pieces hold their sum.
  static void WithRefinedLeaves(const Layout& shaped,
                                absl::Span<const int> counts,
                                absl::Span<const int64_t> extents,
                                absl::Span<const int64_t> strides,
                                absl::Span<const int64_t> twin_strides,
                                const DerivedBounds& bounds, Layout* out,
                                Layout* twin_out);

  // Writes into `*out` the layout of `shaped`'s shape with `strides`, one per
  // leaf: a layout congruent with one just assembled (S_0 beside L_0), built
  // without assembling its shape again. Bounds are computed, with
  // Layout::Create's errors (on error `*out` is 1:0), or taken from `bounds`
  // (GatherModes' precondition; the twin's are ignored). `out` may be
  // `shaped` (its strides are replaced); `strides` must not lie in `*out`.
  static absl::Status WithShapeOf(const Layout& shaped,
                                  absl::Span<const int64_t> strides,
                                  Layout* out,
                                  const DerivedBounds* bounds = nullptr);
  // Writes into `*out` the layout with the tuple structure of `shaped` and new
  // leaves: `extents` for its shape and `strides` for its stride, one per
  // leaf (a level narrowed to a box of its leaf grid keeps its structure).
  // Bounds are computed with Layout::Create's errors (on error `*out` is 1:0),
  // or taken from `bounds` as WithShapeOf takes them. `out` may be `shaped`;
  // the spans must not lie in `*out`.
  static absl::Status WithLeaves(const Layout& shaped,
                                 absl::Span<const int64_t> extents,
                                 absl::Span<const int64_t> strides, Layout* out,
                                 const DerivedBounds* bounds = nullptr);

 private:
  // GatherModes gathers into local buffers of these sizes (registers and
  // stack, where stores into the outputs would reload their sizes after every
  // store), and beyond them into buffers of the counted size.
  static constexpr int kTokens = 16;
  static constexpr int kLeaves = 8;
  // Layout::Create's bounds and errors for `*l`'s tuples (on error, 1:0).
  static absl::Status SetBounds(Layout* l);
  // `bounds` as `*out`'s and, where given, the twin's as `*twin_out`'s.
  static void TakeBounds(const DerivedBounds& bounds, Layout* out,
                         Layout* twin_out);
};

// The top-level modes of a Tensor's logical layout; an integer layout is one
// mode.
absl::InlinedVector<Layout, 4> TopLevelModes(const Layout& layout);

// Same size and the same value at every linear coordinate (O(size): for tests
// and tools).
bool FunctionallyEqual(const Layout& a, const Layout& b);

// idx2crd: decodes `index` colexicographically into `shape`'s hierarchical
// form. Errors (ValueError): index outside [0, size(shape)), or size(shape)
// overflows.
absl::StatusOr<IntTuple> Idx2Crd(int64_t index, const IntTuple& shape);

// Product of the leaves; ValueError on overflow.
absl::StatusOr<int64_t> TupleProduct(const IntTuple& tuple);

// Parses "SHAPE:STRIDE" (layout-cli.md), whitespace ignored.
// Errors: TypeError when the text is not a layout (syntax, or a stride not
// congruent with the shape); ValueError for out-of-range integers, negative
// extents or overflow.
absl::StatusOr<Layout> ParseLayout(absl::string_view text);

}  // namespace strata

#endif  // STRATA_LAYOUT_LAYOUT_H_
