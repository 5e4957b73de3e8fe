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
  auto mxfp4 = MakeExample("mxfp4_2x32");
  ASSERT_TRUE(mxfp4.ok());
  EXPECT_EQ(ToText(ToProto(*mxfp4, {/*include_data=*/true})),
            ReadGolden("mxfp4_2x32_data"));
}

TEST(GoldenTest, ReplayThenDumpReproducesEachGoldenFile) {
  for (const std::string& name :
       {"float32_4x8", "mxfp8_4x64", "mxfp4_2x32", "mxfp4_2x32_data",
        "mxfp8_swizzled_256x256", "nvfp4_swizzled_128x64",
        "mxfp8_swizzled_padded_200x160", "mxfp8_swizzled_batched_2x128x128"}) {
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
