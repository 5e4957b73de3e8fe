// Helpers that Strata's unit and acceptance tests share (testonly).
#ifndef STRATA_TESTS_TEST_UTIL_H_
#define STRATA_TESTS_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "dtype/dtype.h"
#include "dtype/registry.h"
#include "dtype/representation_rule.h"
#include "layout/layout.h"

namespace strata {
namespace testing {

// The layout that `text` denotes ("(4,8):(8,1)", layout-cli.md). A text that
// does not parse fails the calling test and gives the empty Layout().
Layout L(absl::string_view text);

// Expects `l`'s size, max_index and min_index to be those Layout::Create
// computes for its shape and stride (for layouts whose bounds a view copied
// or derived, NOTE [ Layout bounds ] in layout/layout.cc).
void ExpectCreatedBounds(const Layout& l);

// The coordinate of row-major (C order, last mode fastest) linear index
// `index` in a box of `extents`: index = sum_k c_k * prod_{j>k} extents_j.
std::vector<int64_t> RowMajorDecode(int64_t index,
                                    const std::vector<int64_t>& extents);

// A Tensor of `layout` at `offset` in a fresh host carrier of offset +
// cosize(layout) values of `dtype`, whose logical element k in row-major order
// holds scale * k (stored through SetItem, so in dtype's conversion). The
// carrier values the layout does not reach are zero.
Tensor Iota(absl::string_view layout,
            const SimpleDType* dtype = dtypes::Float32(), int64_t offset = 0,
            double scale = 1.0);

// A compact row-major float32 Tensor of `shape` in a fresh host carrier,
// normal values (mean 0, deviation `stddev`) from a generator seeded `seed`.
Tensor RandomNormal(const std::vector<int64_t>& shape, uint32_t seed,
                    float stddev = 1.0f);

// ::testing::TempDir()/name, and the bytes of a file ("" where unreadable).
std::string TempPath(absl::string_view name);
std::string ReadFileBytes(const std::string& path);

using Coord = std::vector<int64_t>;

// The carrier index reached at every level from top-level coordinate
// `coord`: L_0's, then through S_0, L_1, S_1, ... (NOTE [ The view
// invariant ]).
std::vector<int64_t> Reached(const Tensor& t, const Coord& coord);

// Calls body for every coordinate of a box of `extents` (none if one is 0).
void ForEachCoord(const std::vector<int64_t>& extents,
                  const std::function<void(const Coord&)>& body);

// "L0=...@offset S0=... | L1=...@offset": every level, for messages.
std::string Describe(const Tensor& t);

// Checks NOTE [ The view invariant ] exhaustively: every coordinate c of
// `view` reaches, at every level, what sigma(c) reaches in `source`.
void ExpectInvariant(const Tensor& source, const Tensor& view,
                     const std::function<Coord(const Coord&)>& sigma);

// A frozen validation context for a rule alone (RepresentationRule tests).
class FrozenContext final : public RepresentationValidationContext {
 public:
  FrozenContext(const DType& dtype, std::vector<Layout> placements,
                std::vector<Layout> adjacent);
  const DType& logical_dtype() const override { return dtype_; }
  absl::Span<const SimpleDType* const> storage_dtypes() const override {
    return dtype_.storage_schema();
  }
  absl::Span<const Layout> placement_layouts() const override {
    return placements_;
  }
  absl::Span<const Layout> adjacent_layouts() const override {
    return adjacent_;
  }
  absl::Span<const IntTuple> level_shapes() const override { return shapes_; }

 private:
  const DType& dtype_;
  std::vector<Layout> placements_, adjacent_;
  std::vector<IntTuple> shapes_;
};

}  // namespace testing
}  // namespace strata

#endif  // STRATA_TESTS_TEST_UTIL_H_
