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

Tensor Iota(absl::string_view layout, const SimpleDType* dtype, int64_t offset,
            double scale) {
  const Layout l = L(layout);
  auto carrier = *HostCarrier::Create(dtype, offset + l.cosize());
  Tensor t = *Tensor::Create(carrier, offset, l);
  const std::vector<int64_t> shape = t.shape();
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t k = 0; k < t.size(); ++k) {
    int64_t rest = k;
    for (size_t j = shape.size(); j-- > 0;) {
      c[j] = rest % shape[j];
      rest /= shape[j];
    }
    EXPECT_TRUE(SetItem(t, IntTuple::Flat(c), Scalar::Float(scale * k)).ok());
  }
  return t;
}

}  // namespace testing
}  // namespace strata
