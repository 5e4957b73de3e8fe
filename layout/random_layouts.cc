#include "layout/random_layouts.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace strata {
namespace testing {

IntTuple RandomLayouts::Nest(absl::Span<const int64_t> leaves, int max_depth) {
  if (leaves.size() == 1 && (max_depth == 0 || Uniform(0, 2) != 0)) {
    return IntTuple(leaves[0]);
  }
  if (max_depth == 0) return IntTuple::Flat(leaves);
  // Split into 1..n groups, each nested recursively.
  std::vector<IntTuple> groups;
  size_t begin = 0;
  while (begin < leaves.size()) {
    const size_t len = Uniform(1, leaves.size() - begin);
    groups.push_back(Nest(leaves.subspan(begin, len), max_depth - 1));
    begin += len;
  }
  return IntTuple::Tuple(groups);
}

IntTuple RandomLayouts::Shape(int max_leaves, int64_t max_extent, int max_depth,
                              int64_t max_size) {
  const int n = Uniform(1, max_leaves);
  std::vector<int64_t> leaves;
  int64_t size = 1;
  for (int k = 0; k < n; ++k) {
    const int64_t limit =
        std::max<int64_t>(1, std::min(max_extent, max_size / size));
    const int64_t extent = Uniform(1, limit);
    size *= extent;
    leaves.push_back(extent);
  }
  return Nest(leaves, max_depth);
}

Layout RandomLayouts::Any(int max_leaves, int64_t max_extent,
                          int64_t max_stride, int max_depth) {
  IntTuple shape = Shape(max_leaves, max_extent, max_depth);
  IntTuple stride = shape.TransformLeaves(
      [&](size_t, int64_t) { return Uniform(-max_stride, max_stride); });
  return *Layout::Create(shape, stride);
}

Layout RandomLayouts::Injective(int max_leaves, int64_t max_extent,
                                int max_depth, bool gaps) {
  return CompactInRandomOrder(Shape(max_leaves, max_extent, max_depth), gaps);
}

Layout RandomLayouts::CompactInRandomOrder(const IntTuple& shape, bool gaps) {
  const auto extents = shape.leaves();
  std::vector<size_t> order(extents.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng_);
  std::vector<int64_t> strides(extents.size());
  int64_t running = 1;
  for (size_t k : order) {
    if (gaps && Uniform(0, 3) == 0) running *= Uniform(2, 3);
    strides[k] = running;
    running *= extents[k];
  }
  return *Layout::Create(shape, shape.TransformLeaves([&](size_t i, int64_t) {
    return strides[i];
  }));
}

Layout RandomLayouts::DividingTiler(int64_t size) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= size; ++d) {
    if (size % d == 0) divisors.push_back(d);
  }
  const int64_t tile = divisors[Uniform(0, divisors.size() - 1)];
  // Factor the tile into up to three extents.
  std::vector<int64_t> extents;
  int64_t rest = tile;
  while (rest > 1 && extents.size() < 2) {
    std::vector<int64_t> factors;
    for (int64_t d = 2; d <= rest; ++d) {
      if (rest % d == 0) factors.push_back(d);
    }
    const int64_t f = factors[Uniform(0, factors.size() - 1)];
    extents.push_back(f);
    rest /= f;
  }
  if (rest > 1 || extents.empty()) extents.push_back(rest);
  IntTuple shape =
      extents.size() == 1 ? IntTuple(extents[0]) : IntTuple::Flat(extents);
  return *Layout::ColumnMajor(shape);
}

Layout RandomLayouts::InjectiveWithStrideZero(int max_leaves,
                                              int64_t max_extent,
                                              int max_depth) {
  const Layout injective = Injective(max_leaves, max_extent, max_depth);
  const bool all = Uniform(0, 9) == 0;
  IntTuple stride = injective.stride().TransformLeaves(
      [&](size_t, int64_t d) { return all || Uniform(0, 2) == 0 ? 0 : d; });
  Layout zeroed = *Layout::Create(injective.shape(), stride);
  if (Uniform(0, 1) == 0) return zeroed;
  // A new stride-0 leaf, nested with the layout or beside it.
  const Layout extra =
      *Layout::Create(Uniform(1, std::max<int64_t>(1, max_extent)), 0);
  if (Uniform(0, 1) == 0) {
    return *Layout::Create(IntTuple::Tuple({extra.shape(), zeroed.shape()}),
                           IntTuple::Tuple({extra.stride(), zeroed.stride()}));
  }
  return *Layout::Create(IntTuple::Tuple({zeroed.shape(), extra.shape()}),
                         IntTuple::Tuple({zeroed.stride(), extra.stride()}));
}

Layout RandomLayouts::WithDegenerateModes(const Layout& layout,
                                          int64_t max_extent,
                                          int64_t max_stride) {
  std::vector<IntTuple> shapes;
  std::vector<IntTuple> strides;
  auto degenerate = [&] {
    if (Uniform(0, 1) == 0) {
      shapes.push_back(IntTuple(1));
      strides.push_back(IntTuple(Uniform(-max_stride, max_stride)));
    } else {
      shapes.push_back(IntTuple(Uniform(1, max_extent)));
      strides.push_back(IntTuple(0));
    }
  };
  const int rank = layout.shape().is_leaf() ? 1 : layout.rank();
  for (int i = 0; i < rank; ++i) {
    if (Uniform(0, 2) == 0) degenerate();
    const Layout mode = layout.mode(i);
    if (Uniform(0, 2) == 0) {
      const IntTuple one(1);
      const IntTuple any(Uniform(-max_stride, max_stride));
      const bool first = Uniform(0, 1) == 0;
      shapes.push_back(first ? IntTuple::Tuple({one, mode.shape()})
                             : IntTuple::Tuple({mode.shape(), one}));
      strides.push_back(first ? IntTuple::Tuple({any, mode.stride()})
                              : IntTuple::Tuple({mode.stride(), any}));
    } else {
      shapes.push_back(mode.shape());
      strides.push_back(mode.stride());
    }
  }
  if (Uniform(0, 2) == 0) degenerate();
  return *Layout::Create(IntTuple::Tuple(shapes), IntTuple::Tuple(strides));
}

}  // namespace testing
}  // namespace strata
