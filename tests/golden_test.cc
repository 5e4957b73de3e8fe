// The golden text files of tests/golden/: examples dump to exactly these bytes,
// and replaying a golden file and dumping it again gives the same bytes.
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "proto/codec.h"
#include "proto/examples.h"

namespace strata {
namespace {

std::string ReadGolden(const std::string& name) {
  std::ifstream in("tests/golden/" + name + ".textproto", std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(GoldenTest, ExamplesDumpToTheGoldenBytes) {
  for (const std::string& name : ExampleNames()) {
    auto tensor = MakeExample(name);
    ASSERT_TRUE(tensor.ok());
    EXPECT_EQ(ToText(ToProto(*tensor)), ReadGolden(name)) << name;
  }
  for (const std::string name : {"mxfp4_2x32", "q4_0_4x64", "nvfp4_ts_4x64"}) {
    auto tensor = MakeExample(name);
    ASSERT_TRUE(tensor.ok());
    EXPECT_EQ(ToText(ToProto(*tensor, {/*include_data=*/true})),
              ReadGolden(name + "_data"))
        << name;
  }
}

TEST(GoldenTest, ReplayThenDumpReproducesEachGoldenFile) {
  for (const std::string name :
       {"float32_4x8", "mxfp8_4x64", "mxfp4_2x32", "mxfp4_2x32_data",
        "mxfp8_swizzled_256x256", "nvfp4_swizzled_128x64",
        "mxfp8_swizzled_padded_200x160", "mxfp8_swizzled_batched_2x128x128",
        "fp8_block128x128_576x256", "fp8_rowwise_4x64", "fp8_tensorwise_4x64",
        "fp8_block1x128_2x200", "nvfp4_ts_4x64",
        "nvfp4_ts_recip_swizzled_128x64", "q8_0_4x64", "q4_0_4x64",
        "q4_0_4x64_data", "nvfp4_ts_4x64_data"}) {
    const std::string golden = ReadGolden(name);
    auto proto = ParseText(golden);
    ASSERT_TRUE(proto.ok()) << name;
    auto tensor = Replay(*proto);
    ASSERT_TRUE(tensor.ok()) << name << ": " << tensor.status();
    const bool data = std::string(name).find("_data") != std::string::npos;
    EXPECT_EQ(ToText(ToProto(*tensor, {data})), golden) << name;
  }
}

}  // namespace
}  // namespace strata
