// ConvertCheckpoint and ParseShardSize (convert/convert.h).
#include "convert/convert.h"

#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/gguf.h"
#include "dtype/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "layout/layout.h"
#include "ops/dequantize.h"
#include "ops/quantize.h"
#include "tests/test_util.h"
#include "util/errors.h"

namespace strata {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::RandomNormal;
using testing::ReadFileBytes;
using testing::TempPath;
using ::testing::UnorderedElementsAre;

void Remove(const std::string& path) {
  ASSERT_EQ(std::system(absl::StrCat("rm -rf '", path, "'").c_str()), 0);
}

std::string ValuesAs(const Tensor& t, const SimpleDType& dtype) {
  auto values = Dequantize(t, dtype);
  EXPECT_TRUE(values.ok()) << FormatError(values.status());
  return std::string(static_cast<const char*>(values->carrier()->data()),
                     values->size() * dtype.bits() / 8);
}

const CheckpointTensor* Find(const Checkpoint& c, const std::string& name) {
  for (const CheckpointTensor& t : c.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// A small DeepSeek-style directory: two shards, a weight's scales in the
// other shard than its codes, a bf16 norm, a config.json.
struct Source {
  std::string dir;
  Tensor proj, up, norm;
};

Source MakeSource(const std::string& name) {
  Source s{TempPath(name), RandomNormal({1}, 0), RandomNormal({1}, 0),
           RandomNormal({1}, 0)};
  Remove(s.dir);
  s.proj =
      *QuantizeBlockScaled(RandomNormal({200, 300}, 1),
                           *dtypes::FP8E4M3Block128x128(), kBlocksOfTheFormat);
  s.up =
      *QuantizeBlockScaled(RandomNormal({64, 96}, 2),
                           *dtypes::FP8E4M3Block128x128(), kBlocksOfTheFormat);
  s.norm = *Dequantize(RandomNormal({96}, 3), *dtypes::BFloat16());
  std::vector<TensorToWrite> writes;
  writes.push_back(ToWrite("model.layers.0.proj.weight", s.proj));
  writes.push_back(ToWrite("model.layers.0.norm.weight", s.norm));
  writes.push_back(ToWrite("model.layers.0.up.weight", s.up));
  WriteCheckpointOptions options;
  options.max_shard_size = 64'000;
  options.files = {
      {"config.json",
       "{\"model_type\": \"deepseek_v3\", \"quantization_config\": "
       "{\"quant_method\": \"fp8\"}, \"hidden_size\": 96}"},
      {"tokenizer.json", "{}"}};
  auto written = WriteCheckpoint(s.dir, std::move(writes), options);
  EXPECT_TRUE(written.ok()) << FormatError(written.status());
  return s;
}

// Scenario: a DeepSeek-style directory converts to bfloat16 with the values
// Dequantize gives (the DeepSeek rule), plain tensors copied, config.json's
// quantization_config removed, the other files copied.
TEST(ConvertCheckpointTest, DirectoryToBFloat16) {
  const Source s = MakeSource("fp8_dir");
  const std::string dst = TempPath("bf16_dir");
  Remove(dst);
  ConvertOptions options;
  options.to = "bfloat16";
  auto report = ConvertCheckpoint(s.dir, dst, options);
  ASSERT_TRUE(report.ok()) << FormatError(report.status());
  EXPECT_THAT(report->converted, ElementsAre("model.layers.0.proj.weight",
                                             "model.layers.0.up.weight"));
  EXPECT_THAT(report->copied, ElementsAre("model.layers.0.norm.weight"));
  EXPECT_TRUE(report->refused.empty());
  EXPECT_THAT(report->other_files,
              ElementsAre("config.json", "tokenizer.json"));
  EXPECT_EQ(report->output_bytes, (200 * 300 + 64 * 96 + 96) * 2);
  auto read = ReadCheckpoint(dst);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  ASSERT_EQ(read->tensors.size(), 3u);
  const Tensor& proj = *Find(*read, "model.layers.0.proj.weight")->tensor;
  EXPECT_EQ(&proj.dtype(), dtypes::BFloat16());
  EXPECT_EQ(ValuesAs(proj, *dtypes::BFloat16()),
            ValuesAs(s.proj, *dtypes::BFloat16()));
  EXPECT_EQ(ValuesAs(*Find(*read, "model.layers.0.up.weight")->tensor,
                     *dtypes::BFloat16()),
            ValuesAs(s.up, *dtypes::BFloat16()));
  EXPECT_EQ(ValuesAs(*Find(*read, "model.layers.0.norm.weight")->tensor,
                     *dtypes::BFloat16()),
            ValuesAs(s.norm, *dtypes::BFloat16()));
  EXPECT_EQ(
      ReadFileBytes(absl::StrCat(dst, "/config.json")),
      "{\n  \"model_type\": \"deepseek_v3\",\n  \"hidden_size\": 96\n}\n");
  EXPECT_EQ(ReadFileBytes(absl::StrCat(dst, "/tokenizer.json")), "{}");
  // The source is untouched, and the destination is not written twice.
  auto again = ConvertCheckpoint(s.dir, dst, options);
  EXPECT_TRUE(IsValueError(again.status()));
  EXPECT_THAT(std::string(again.status().message()), HasSubstr("exists"));
}

// Scenario: to a block-scaled format, the *.weight tensors of rank >= 2 that
// --only finds and --skip does not are quantized; config.json gets DeepSeek's
// fp8 entry.
TEST(ConvertCheckpointTest, QuantizesTheChosenWeights) {
  const Source s = MakeSource("fp8_dir2");
  const std::string bf16 = TempPath("bf16_dir2");
  const std::string fp8 = TempPath("fp8_again");
  Remove(bf16);
  Remove(fp8);
  ConvertOptions to_bf16;
  to_bf16.to = "bfloat16";
  ASSERT_TRUE(ConvertCheckpoint(s.dir, bf16, to_bf16).ok());
  ConvertOptions options;
  options.to = "fp8_e4m3_block128x128_ue8m0";
  options.skip = "norm|up";
  auto report = ConvertCheckpoint(bf16, fp8, options);
  ASSERT_TRUE(report.ok()) << FormatError(report.status());
  EXPECT_THAT(report->converted, ElementsAre("model.layers.0.proj.weight"));
  EXPECT_THAT(report->copied, UnorderedElementsAre("model.layers.0.norm.weight",
                                                   "model.layers.0.up.weight"));
  auto read = ReadCheckpoint(fp8);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  const Tensor& proj = *Find(*read, "model.layers.0.proj.weight")->tensor;
  EXPECT_EQ(&proj.dtype(), dtypes::FP8E4M3Block128x128UE8M0());
  auto bf16_read = ReadCheckpoint(bf16);
  ASSERT_TRUE(bf16_read.ok());
  auto expected = QuantizeBlockScaled(
      *Find(*bf16_read, "model.layers.0.proj.weight")->tensor,
      *dtypes::FP8E4M3Block128x128UE8M0(), kBlocksOfTheFormat);
  ASSERT_TRUE(expected.ok()) << FormatError(expected.status());
  EXPECT_EQ(ValuesAs(proj, *dtypes::Float32()),
            ValuesAs(*expected, *dtypes::Float32()));
  EXPECT_THAT(ReadFileBytes(absl::StrCat(fp8, "/config.json")),
              HasSubstr("\"scale_fmt\": \"ue8m0\""));
  // --only narrows; a tensor the destination cannot hold (nvfp4 blocks 16
  // values of the last dim: 300 is no multiple) is refused, the others
  // written (exit 1).
  const std::string nv = TempPath("nvfp4_ts_dir");
  Remove(nv);
  ConvertOptions nvfp4;
  nvfp4.to = "nvfp4_ts";
  nvfp4.only = "proj|up";
  nvfp4.skip = "";
  auto partial = ConvertCheckpoint(bf16, nv, nvfp4);
  ASSERT_TRUE(partial.ok()) << FormatError(partial.status());
  EXPECT_THAT(partial->converted, ElementsAre("model.layers.0.up.weight"));
  EXPECT_THAT(partial->copied, ElementsAre("model.layers.0.norm.weight"));
  ASSERT_EQ(partial->refused.size(), 1u);
  EXPECT_EQ(partial->refused[0].first, "model.layers.0.proj.weight");
  EXPECT_THAT(std::string(partial->refused[0].second.message()),
              HasSubstr("not blocked by 16"));
  auto nv_read = ReadCheckpoint(nv);
  ASSERT_TRUE(nv_read.ok()) << FormatError(nv_read.status());
  EXPECT_EQ(nv_read->tensors.size(), 2u);
}

// Scenario: a q8_0 GGUF out, whose values are ggml's quantization of the
// source's (Requantize), read back by ReadGguf.
TEST(ConvertCheckpointTest, GgufOut) {
  const Source s = MakeSource("fp8_dir3");
  const std::string gguf = TempPath("out.gguf");
  Remove(gguf);
  ConvertOptions options;
  options.to = "q8_0";
  auto report = ConvertCheckpoint(s.dir, gguf, options);
  ASSERT_TRUE(report.ok()) << FormatError(report.status());
  EXPECT_THAT(report->files, ElementsAre(gguf));
  // ggml blocks 32 values of the last dim: (200, 300) is refused.
  ASSERT_EQ(report->refused.size(), 1u);
  EXPECT_EQ(report->refused[0].first, "model.layers.0.proj.weight");
  auto read = ReadGguf(gguf);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  ASSERT_EQ(read->tensors.size(), 2u);
  for (const GgufTensor& t : read->tensors) {
    ASSERT_TRUE(t.tensor.ok()) << t.name;
    if (t.name == "model.layers.0.norm.weight") {
      EXPECT_EQ(t.ggml_type, "BF16");
    } else {
      EXPECT_EQ(t.ggml_type, "Q8_0");
    }
  }
}

TEST(ConvertCheckpointTest, BadArgumentsAndDestinations) {
  const Source s = MakeSource("fp8_dir4");
  const std::string dst = TempPath("never");
  Remove(dst);
  const auto refused = [&](ConvertOptions options, const std::string& to,
                           const std::string& message) {
    auto report = ConvertCheckpoint(s.dir, to, options);
    EXPECT_TRUE(IsValueError(report.status())) << report.status();
    EXPECT_THAT(std::string(report.status().message()), HasSubstr(message));
  };
  ConvertOptions o;
  o.to = "int8";
  refused(o, dst, "is neither bfloat16");
  o.to = "nosuchformat";
  refused(o, dst, "is neither bfloat16");
  o.to = "bfloat16";
  o.scale_layout = ScaleLayout::kRowMajor;
  refused(o, dst, "has no scales");
  o.to = "mxfp8_e4m3";
  o.scale_layout = ScaleLayout::kSwizzled128x4;
  refused(o, dst, "store scales row-major only");
  o.scale_layout.reset();
  o.only = "(";
  refused(o, dst, "is not a regular expression");
  o.only.clear();
  refused(o, s.dir, "the source is never written");
  refused(o, absl::StrCat(s.dir, "/inside"), "the source is never written");
  std::ofstream(TempPath("not_a_checkpoint.txt")) << "hello";
  auto not_checkpoint =
      ConvertCheckpoint(TempPath("not_a_checkpoint.txt"), dst, o);
  EXPECT_FALSE(not_checkpoint.ok());
  EXPECT_FALSE(std::ifstream(dst).good());
  DIR* d = opendir(::testing::TempDir().c_str());
  ASSERT_NE(d, nullptr);
  while (const dirent* e = readdir(d)) {
    EXPECT_EQ(std::string(e->d_name).find("never"), std::string::npos);
  }
  closedir(d);
}

TEST(ParseShardSizeTest, BytesAndUnitsAsHuggingFaceHub) {
  EXPECT_EQ(*ParseShardSize("12345"), 12345);
  EXPECT_EQ(*ParseShardSize("5GB"), 5'000'000'000);
  EXPECT_EQ(*ParseShardSize("500 MB"), 500'000'000);
  EXPECT_EQ(*ParseShardSize("2KiB"), 2048);
  EXPECT_EQ(*ParseShardSize("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(*ParseShardSize("1TB"), 1'000'000'000'000);
  for (const char* bad :
       {"", "GB", "5 gb", "-1", "0", "1.", ".5GB", "5XB", "0.0001KB",
        "99999999999999999999", "9999999999TiB"}) {
    EXPECT_TRUE(IsValueError(ParseShardSize(bad).status())) << bad;
  }
}

}  // namespace
}  // namespace strata
