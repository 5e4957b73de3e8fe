// Helpers that Strata's unit and acceptance tests share (testonly).
#ifndef STRATA_TESTS_TEST_UTIL_H_
#define STRATA_TESTS_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "dtype/dtype.h"
#include "dtype/registry.h"
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

}  // namespace testing
}  // namespace strata

#endif  // STRATA_TESTS_TEST_UTIL_H_
