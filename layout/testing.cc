#include "layout/testing.h"

#include <utility>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "layout/layout.h"

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

}  // namespace testing
}  // namespace strata
