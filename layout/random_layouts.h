// Seeded random layouts for property tests (testonly). Failures print the seed.
#ifndef STRATA_LAYOUT_RANDOM_LAYOUTS_H_
#define STRATA_LAYOUT_RANDOM_LAYOUTS_H_

#include <cstdint>
#include <random>

#include "layout/int_tuple.h"
#include "layout/layout.h"

namespace strata {
namespace testing {

class RandomLayouts {
 public:
  explicit RandomLayouts(uint64_t seed) : rng_(seed) {}

  int64_t Uniform(int64_t lo, int64_t hi) {  // Inclusive.
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  // A random hierarchical shape of 1..max_leaves extents in [1, max_extent],
  // nesting up to max_depth, with size at most max_size.
  IntTuple Shape(int max_leaves, int64_t max_extent, int max_depth,
                 int64_t max_size = 1 << 12);
  // A shape with a random stride in [-max_stride, max_stride] per leaf.
  Layout Any(int max_leaves, int64_t max_extent, int64_t max_stride,
             int max_depth = 2);
  // An injective layout with non-negative strides: a compact layout of a random
  // shape whose modes are placed in random order, with gaps multiplying some
  // strides.
  Layout Injective(int max_leaves, int64_t max_extent, int max_depth = 2,
                   bool gaps = true);
  // A compact layout of `shape` whose leaves are placed in random order;
  // with `gaps`, some strides are multiplied by 2 or 3 (still injective).
  Layout CompactInRandomOrder(const IntTuple& shape, bool gaps = false);
  // A compact column-major layout of a shape whose size divides `size`.
  Layout DividingTiler(int64_t size);
  // Injective(...) with a random subset of its leaves (possibly all) given
  // stride 0, and sometimes new stride-0 leaves of extent up to max_extent:
  // every mode that still moves is admissible for a left inverse.
  Layout InjectiveWithStrideZero(int max_leaves, int64_t max_extent,
                                 int max_depth = 2);
  // `layout` with degenerate modes mixed in: each top-level mode may be nested
  // with a leaf of extent 1 and a random stride in [-max_stride, max_stride],
  // and new top-level modes of extent 1 (random stride) or of stride 0 (extent
  // in [1, max_extent]) are inserted. Composition treats both specially.
  Layout WithDegenerateModes(const Layout& layout, int64_t max_extent,
                             int64_t max_stride);

  std::mt19937_64& engine() { return rng_; }

 private:
  IntTuple Nest(absl::Span<const int64_t> leaves, int max_depth);
  std::mt19937_64 rng_;
};

}  // namespace testing
}  // namespace strata

#endif  // STRATA_LAYOUT_RANDOM_LAYOUTS_H_
