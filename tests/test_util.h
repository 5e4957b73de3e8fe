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
#include "dtype/testing.h"
#include "layout/layout.h"
#include "layout/testing.h"

namespace strata {
namespace testing {

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

}  // namespace testing
}  // namespace strata

#endif  // STRATA_TESTS_TEST_UTIL_H_
