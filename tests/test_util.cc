#include "tests/test_util.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "carrier/carrier.h"
#include "gtest/gtest.h"
#include "layout/int_tuple.h"
#include "ops/ops.h"
#include "ops/scalar.h"

namespace strata {
namespace testing {

Layout L(absl::string_view text) {
  absl::StatusOr<Layout> layout = ParseLayout(text);
  EXPECT_TRUE(layout.ok()) << text << ": " << layout.status();
  return layout.ok() ? *std::move(layout) : Layout();
}

void ExpectCreatedBounds(const Layout& l) {
  const absl::StatusOr<Layout> created = Layout::Create(l.shape(), l.stride());
  ASSERT_TRUE(created.ok()) << l.ToString() << ": " << created.status();
  EXPECT_EQ(l.size(), created->size()) << l.ToString();
  EXPECT_EQ(l.max_index(), created->max_index()) << l.ToString();
  EXPECT_EQ(l.min_index(), created->min_index()) << l.ToString();
}

std::vector<int64_t> RowMajorDecode(int64_t index,
                                    const std::vector<int64_t>& extents) {
  std::vector<int64_t> c(extents.size());
  for (size_t k = extents.size(); k-- > 0;) {
    c[k] = index % extents[k];
    index /= extents[k];
  }
  return c;
}

Tensor Iota(absl::string_view layout, const SimpleDType* dtype, int64_t offset,
            double scale) {
  const Layout l = L(layout);
  auto carrier = *HostCarrier::Create(*dtype, offset + l.cosize());
  Tensor t = *Tensor::Create(carrier, offset, l);
  for (int64_t k = 0; k < t.size(); ++k) {
    const IntTuple c = IntTuple::Flat(RowMajorDecode(k, t.shape()));
    EXPECT_TRUE(SetItem(t, c, Scalar::Float(scale * k)).ok());
  }
  return t;
}

}  // namespace testing
}  // namespace strata
