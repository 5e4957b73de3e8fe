// Checkpoints as they are published (checkpoints.md section 1; NOTE [ Sharded
// directories ] in checkpoint/directory.h): a Hugging Face sharded directory
// whose DeepSeek groups span shards, a single-file directory, GGUF split sets
// (tests/golden/gguf/split*, written by tools/peer/checkpoint_reference.py),
// and the hostile directories the contract answers.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/directory.h"
#include "checkpoint/safetensors.h"
#include "core/representation.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/dequantize.h"
#include "ops/quantize.h"
#include "util/errors.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

std::string NewDirectory(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/", name);
  mkdir(dir.c_str(), 0755);
  return dir;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A compact row-major Tensor of `dtype` over a host copy of `bytes`.
Tensor FromBytes(const SimpleDType& dtype, const std::vector<int64_t>& shape,
                 const void* bytes, int64_t n) {
  int64_t count = 1;
  for (int64_t e : shape) count *= e;
  auto carrier = *HostCarrier::Create(dtype, count);
  std::memcpy(carrier->mutable_data(), bytes, n);
  return *Tensor::Create(carrier, 0, *Layout::RowMajor(IntTuple::Flat(shape)));
}

std::string Bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.carrier()->data()),
                     t.size() * 4);
}

// A DeepSeek FP8 128x128 weight as its two members: the codes and the
// ceil(N/128) x ceil(K/128) float32 scale_inv.
struct Fp8Weight {
  Tensor quantized;
  Tensor codes;
  Tensor scale_inv;
};

Fp8Weight MakeFp8(int64_t n, int64_t k, float step) {
  std::vector<float> x(n * k);
  for (size_t i = 0; i < x.size(); ++i) x[i] = step * ((i * 7919) % 1000) - 3;
  const Tensor values =
      FromBytes(*dtypes::Float32(), {n, k}, x.data(), 4 * x.size());
  Tensor q = *QuantizeBlockScaled(values, *dtypes::FP8E4M3Block128x128(),
                                  kBlocksOfTheFormat);
  const Representation& rep = TensorAccess::representation(q);
  const Subtensor& codes = rep.subtensor(0);
  const Subtensor& scales = rep.subtensor(1);
  const int64_t gn = (n + 127) / 128, gk = (k + 127) / 128;
  return {
      q,
      FromBytes(*dtypes::Float8E4M3FN(), {n, k}, codes.carrier->data(), n * k),
      FromBytes(*dtypes::Float32(), {gn, gk}, scales.carrier->data(),
                4 * gn * gk)};
}

// model-00001-of-00002: layers.0.weight (its scale_inv in the other shard),
// embed.weight and an unlisted tensor; model-00002-of-00002: the scale_inv,
// and layers.1 whole.
struct Sharded {
  std::string dir;
  Fp8Weight layer0, layer1;
  Tensor embed;
};

Sharded MakeSharded(const std::string& name) {
  Sharded s{NewDirectory(name), MakeFp8(576, 300, 0.01f),
            MakeFp8(128, 256, 0.02f),
            FromBytes(*dtypes::Float32(), {2, 3},
                      std::vector<float>{1, 2, 3, 4, 5, 6}.data(), 24)};
  EXPECT_TRUE(
      WriteSafetensors(absl::StrCat(s.dir, "/model-00001-of-00002.safetensors"),
                       {{"layers.0.weight", s.layer0.codes},
                        {"embed.weight", s.embed},
                        {"unlisted.weight", s.embed}})
          .ok());
  EXPECT_TRUE(
      WriteSafetensors(absl::StrCat(s.dir, "/model-00002-of-00002.safetensors"),
                       {{"layers.0.weight_scale_inv", s.layer0.scale_inv},
                        {"layers.1.weight", s.layer1.codes},
                        {"layers.1.weight_scale_inv", s.layer1.scale_inv}})
          .ok());
  WriteText(absl::StrCat(s.dir, "/model.safetensors.index.json"),
            R"({"metadata": {"total_size": 373320, "format": "pt"},
  "weight_map": {
    "embed.weight": "model-00001-of-00002.safetensors",
    "layers.0.weight": "model-00001-of-00002.safetensors",
    "layers.0.weight_scale_inv": "model-00002-of-00002.safetensors",
    "layers.1.weight": "model-00002-of-00002.safetensors",
    "layers.1.weight_scale_inv": "model-00002-of-00002.safetensors"}})");
  return s;
}

const CheckpointTensor* Find(const Checkpoint& c, const std::string& name) {
  for (const CheckpointTensor& t : c.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// checkpoints.md section 1: the index is authoritative, groups form across
// shards, every level stays mapped from its own file.
TEST(CheckpointDirectoryTest, AShardedDeepSeekDirectoryGroupsAcrossShards) {
  const Sharded s = MakeSharded("deepseek");
  for (const std::string& path :
       {s.dir, absl::StrCat(s.dir, "/model.safetensors.index.json")}) {
    SCOPED_TRACE(path);
    auto read = ReadCheckpoint(path);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->format, "safetensors");
    ASSERT_EQ(read->tensors.size(), 3u);  // The unlisted tensor is ignored.
    EXPECT_EQ(Find(*read, "unlisted.weight"), nullptr);
    const CheckpointTensor* layer0 = Find(*read, "layers.0.weight");
    ASSERT_NE(layer0, nullptr);
    ASSERT_TRUE(layer0->tensor.ok()) << layer0->tensor.status();
    EXPECT_EQ(layer0->tensor->dtype().name(), "fp8_e4m3_block128x128");
    EXPECT_EQ(layer0->file, "model-00001-of-00002.safetensors");
    const Representation& rep = TensorAccess::representation(*layer0->tensor);
    const auto* codes =
        dynamic_cast<const MappedCarrier*>(rep.subtensor(0).carrier.get());
    const auto* scales =
        dynamic_cast<const MappedCarrier*>(rep.subtensor(1).carrier.get());
    ASSERT_NE(codes, nullptr);
    ASSERT_NE(scales, nullptr);
    EXPECT_THAT(codes->file(), HasSubstr("model-00001-of-00002"));
    EXPECT_THAT(scales->file(), HasSubstr("model-00002-of-00002"));
    EXPECT_EQ(Bytes(*Dequantize(*layer0->tensor, *dtypes::Float32())),
              Bytes(*Dequantize(s.layer0.quantized, *dtypes::Float32())));
    const CheckpointTensor* layer1 = Find(*read, "layers.1.weight");
    ASSERT_NE(layer1, nullptr);
    ASSERT_TRUE(layer1->tensor.ok()) << layer1->tensor.status();
    EXPECT_EQ(layer1->file, "model-00002-of-00002.safetensors");
    EXPECT_EQ(Bytes(*Dequantize(*layer1->tensor, *dtypes::Float32())),
              Bytes(*Dequantize(s.layer1.quantized, *dtypes::Float32())));
    const CheckpointTensor* embed = Find(*read, "embed.weight");
    ASSERT_NE(embed, nullptr);
    ASSERT_TRUE(embed->tensor.ok());
    EXPECT_EQ(Bytes(*embed->tensor), Bytes(s.embed));
    EXPECT_EQ(read->metadata, (std::vector<std::pair<std::string, std::string>>{
                                  {"format", "pt"}, {"total_size", "373320"}}));
  }
}

// Scenario: a gpt-oss MXFP4 pair whose .blocks and .scales the shards split
// imports as one mxfp4 Tensor, each level mapped from its own file, with the
// values of the same pair in one file.
TEST(CheckpointDirectoryTest, AnMxfp4PairSplitAcrossShardsIsOneTensor) {
  const std::string dir = NewDirectory("split_pair");
  std::string codes(2 * 3 * 16, '\0'), exponents(2 * 3, '\0');
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = static_cast<char>(i * 37);
  for (size_t i = 0; i < exponents.size(); ++i) {
    exponents[i] = static_cast<char>(120 + i);
  }
  const Tensor blocks =
      FromBytes(*dtypes::UInt8(), {2, 3, 16}, codes.data(), codes.size());
  const Tensor scales =
      FromBytes(*dtypes::UInt8(), {2, 3}, exponents.data(), exponents.size());
  ASSERT_TRUE(WriteSafetensors(dir + "/model-00001-of-00002.safetensors",
                               {{"experts.gate_up_proj_blocks", blocks}})
                  .ok());
  ASSERT_TRUE(WriteSafetensors(dir + "/model-00002-of-00002.safetensors",
                               {{"experts.gate_up_proj_scales", scales}})
                  .ok());
  WriteText(dir + "/model.safetensors.index.json",
            R"({"weight_map": {
              "experts.gate_up_proj_blocks": "model-00001-of-00002.safetensors",
              "experts.gate_up_proj_scales": "model-00002-of-00002.safetensors"
            }})");
  auto read = ReadCheckpoint(dir);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  ASSERT_EQ(read->tensors.size(), 1u);
  const CheckpointTensor& t = read->tensors[0];
  EXPECT_EQ(t.name, "experts.gate_up_proj");
  EXPECT_EQ(t.file, "model-00001-of-00002.safetensors");
  ASSERT_TRUE(t.tensor.ok()) << FormatError(t.tensor.status());
  EXPECT_EQ(&t.tensor->dtype(), dtypes::MXFP4());
  EXPECT_EQ(t.tensor->shape(), (std::vector<int64_t>{2, 96}));
  const std::string together = dir + "/../together.safetensors";
  ASSERT_TRUE(
      WriteSafetensors(together, {{"experts.gate_up_proj_blocks", blocks},
                                  {"experts.gate_up_proj_scales", scales}})
          .ok());
  auto one = ReadSafetensors(together);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->tensors.size(), 1u);
  EXPECT_EQ(Bytes(*Dequantize(*t.tensor, *dtypes::Float32())),
            Bytes(*Dequantize(*one->tensors[0].tensor, *dtypes::Float32())));
}

TEST(CheckpointDirectoryTest, ASingleFileDirectoryNamesItsFile) {
  const std::string dir = NewDirectory("single");
  ASSERT_TRUE(
      WriteSafetensors(absl::StrCat(dir, "/model.safetensors"),
                       {{"w", FromBytes(*dtypes::Float32(), {2},
                                        std::vector<float>{1, 2}.data(), 8)}})
          .ok());
  auto read = ReadCheckpoint(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->tensors.size(), 1u);
  EXPECT_EQ(read->tensors[0].file, "model.safetensors");
  // The file itself is still one file.
  auto file = ReadCheckpoint(absl::StrCat(dir, "/model.safetensors"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->tensors[0].file, "");
}

TEST(CheckpointDirectoryTest, AnIndexListingAnAbsentTensorFailsThatTensor) {
  const Sharded s = MakeSharded("absent");
  WriteText(
      absl::StrCat(s.dir, "/model.safetensors.index.json"),
      R"({"weight_map": {"embed.weight": "model-00001-of-00002.safetensors",
                "ghost.weight": "model-00001-of-00002.safetensors"}})");
  auto read = ReadCheckpoint(s.dir);
  ASSERT_TRUE(read.ok()) << read.status();
  const CheckpointTensor* ghost = Find(*read, "ghost.weight");
  ASSERT_NE(ghost, nullptr);
  EXPECT_TRUE(IsValueError(ghost->tensor.status()));
  EXPECT_THAT(std::string(ghost->tensor.status().message()),
              HasSubstr("lists \"ghost.weight\" in "
                        "\"model-00001-of-00002.safetensors\", which does not "
                        "hold it"));
  ASSERT_NE(Find(*read, "embed.weight"), nullptr);
  EXPECT_TRUE(Find(*read, "embed.weight")->tensor.ok());
}

// The hostile directories: each a file-level ValueError naming the file.
TEST(CheckpointDirectoryTest, HostileDirectoriesAreRefusedNamingTheFile) {
  struct Case {
    std::string name;
    std::string index;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"missing_shard",
       R"({"weight_map": {"a": "model-00009-of-00009.safetensors"}})",
       "\"model-00009-of-00009.safetensors\", which is missing"},
      {"outside", R"({"weight_map": {"a": "../model.safetensors"}})",
       "not a file name in the directory"},
      {"not_safetensors", R"({"weight_map": {"a": "garbage.safetensors"}})",
       "shard \"garbage.safetensors\""},
      {"no_weight_map", R"({"metadata": {}})", "no \"weight_map\" object"},
      {"not_string", R"({"weight_map": {"a": 3}})", "not a file name"},
      {"not_json", R"({"weight_map": )", "is not JSON"},
      {"twice", R"({"weight_map": {"a": "x", "a": "y"}})", "appears twice"},
      {"deep", std::string(200, '[') + std::string(200, ']'),
       "the index nests values deeper than 128 levels"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string dir = NewDirectory(absl::StrCat("hostile_", c.name));
    WriteText(absl::StrCat(dir, "/model.safetensors.index.json"), c.index);
    WriteText(absl::StrCat(dir, "/garbage.safetensors"), "not a checkpoint");
    const std::string outside =
        NewDirectory(absl::StrCat("elsewhere_", c.name));
    ASSERT_TRUE(
        WriteSafetensors(absl::StrCat(outside, "/x.safetensors"),
                         {{"a", FromBytes(*dtypes::Float32(), {1},
                                          std::vector<float>{1}.data(), 4)}})
            .ok());
    symlink(absl::StrCat(outside, "/x.safetensors").c_str(),
            absl::StrCat(dir, "/link.safetensors").c_str());
    const auto read = ReadCheckpoint(dir);
    ASSERT_FALSE(read.ok());
    EXPECT_TRUE(IsValueError(read.status())) << read.status();
    EXPECT_THAT(std::string(read.status().message()), HasSubstr(c.expected));
  }
  // A link out of the directory is followed (the Hugging Face cache links a
  // snapshot's files to blobs/), to a safetensors file only.
  {
    const std::string dir = NewDirectory("linked");
    const std::string outside = NewDirectory("blobs");
    ASSERT_TRUE(
        WriteSafetensors(absl::StrCat(outside, "/x"),
                         {{"a", FromBytes(*dtypes::Float32(), {1},
                                          std::vector<float>{7}.data(), 4)}})
            .ok());
    ASSERT_EQ(symlink(absl::StrCat(outside, "/x").c_str(),
                      absl::StrCat(dir, "/link.safetensors").c_str()),
              0);
    ASSERT_EQ(
        symlink("/dev/zero", absl::StrCat(dir, "/zero.safetensors").c_str()),
        0);
    WriteText(absl::StrCat(dir, "/model.safetensors.index.json"),
              R"({"weight_map": {"a": "link.safetensors"}})");
    auto linked = ReadCheckpoint(dir);
    ASSERT_TRUE(linked.ok()) << linked.status();
    ASSERT_EQ(linked->tensors.size(), 1u);
    EXPECT_TRUE(linked->tensors[0].tensor.ok());
    WriteText(absl::StrCat(dir, "/model.safetensors.index.json"),
              R"({"weight_map": {"a": "zero.safetensors"}})");
    auto zero = ReadCheckpoint(dir);
    ASSERT_FALSE(zero.ok());
    EXPECT_THAT(std::string(zero.status().message()),
                HasSubstr("not a regular file"));
  }
  // An index over kMaxIndexBytes (sparse), refused before it is read.
  const std::string dir = NewDirectory("hostile_huge");
  const std::string index = absl::StrCat(dir, "/model.safetensors.index.json");
  WriteText(index, "{");
  ASSERT_EQ(truncate(index.c_str(), kMaxIndexBytes + 1), 0);
  const auto huge = ReadCheckpoint(dir);
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(std::string(huge.status().message()),
              HasSubstr("above the limit of 100000000"));
  // A directory with nothing to read, and one with two indexes.
  const auto empty = ReadCheckpoint(NewDirectory("empty"));
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("holds no"));
  const std::string two = NewDirectory("two_indexes");
  WriteText(absl::StrCat(two, "/a.safetensors.index.json"), "{}");
  WriteText(absl::StrCat(two, "/b.safetensors.index.json"), "{}");
  const auto both = ReadCheckpoint(two);
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(std::string(both.status().message()), HasSubstr("2 indexes"));
}

// checkpoints.md section 1: a GGUF split set from any of its files or its
// directory; split.tensors.count must match what the set holds.
TEST(CheckpointDirectoryTest, GgufSplitSetsReadWholeAndCountTheirTensors) {
  for (const std::string& path :
       {std::string("tests/golden/gguf/split"),
        std::string("tests/golden/gguf/split/model-00002-of-00003.gguf")}) {
    SCOPED_TRACE(path);
    auto read = ReadCheckpoint(path);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->format, "gguf");
    ASSERT_EQ(read->tensors.size(), 3u);
    EXPECT_EQ(read->tensors[0].name, "a.f32");
    EXPECT_EQ(read->tensors[0].file, "model-00001-of-00003.gguf");
    EXPECT_EQ(read->tensors[1].file, "model-00002-of-00003.gguf");
    EXPECT_EQ(read->tensors[2].file, "model-00003-of-00003.gguf");
    for (const CheckpointTensor& t : read->tensors) {
      EXPECT_TRUE(t.tensor.ok()) << t.name << ": " << t.tensor.status();
    }
    EXPECT_EQ(read->tensors[1].tensor->dtype().name(), "q8_0");
  }
  const auto lying = ReadCheckpoint("tests/golden/gguf/split_mismatch");
  ASSERT_FALSE(lying.ok());
  EXPECT_THAT(std::string(lying.status().message()),
              HasSubstr("4 tensors expected but 3 found"));
}

}  // namespace
}  // namespace strata
