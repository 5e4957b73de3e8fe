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

// A checkpoint written and read back through the umbrella: the Tensor is
// over a read-only mapped carrier.
TEST(UmbrellaTest, CheckpointsRoundTrip) {
  auto tensor = strata::Zeros(*strata::dtypes::Float32(), {4, 8});
  ASSERT_TRUE(tensor.ok());
  const std::string path = ::testing::TempDir() + "/umbrella.safetensors";
  ASSERT_TRUE(strata::WriteSafetensors(path, {{"w", *tensor}}).ok());
  auto read = strata::ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << strata::FormatError(read.status());
  ASSERT_EQ(read->tensors.size(), 1u);
  ASSERT_TRUE(read->tensors[0].tensor.ok());
  EXPECT_EQ(read->tensors[0].tensor->carrier()->class_name(), "mapped");
  EXPECT_TRUE(strata::IsValueError(
      strata::Fill(*read->tensors[0].tensor, strata::Scalar::Float(1))));
}

}  // namespace
