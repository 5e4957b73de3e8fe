// What another monorepo package writes: only "strata.h" and //:strata.
#include "gtest/gtest.h"
#include "strata.h"

namespace {

TEST(UmbrellaTest, TheReadmeExampleWorks) {
  auto carrier = strata::HostCarrier::Create(*strata::dtypes::Float32(), 32);
  auto layout = strata::ParseLayout("(4,8):(8,1)");  // 4x8 row-major
  auto tensor = strata::Tensor::Create(*carrier, /*offset=*/0, *layout);
  ASSERT_TRUE(tensor.ok()) << strata::FormatError(tensor.status());

  strata::Tensor a = *strata::Zeros(*strata::dtypes::Float32(), {4, 8});
  auto b = strata::Add(
      a, *strata::Permute(*strata::Zeros(*strata::dtypes::Float32(), {8, 4}),
                          {1, 0}));
  ASSERT_TRUE(b.ok());
  DLManagedTensor* exported = *strata::ToDLPack(*b);
  EXPECT_EQ(exported->dl_tensor.ndim, 2);
  exported->deleter(exported);
  EXPECT_FALSE(strata::ToText(strata::ToProto(*tensor)).empty());
}

}  // namespace
