// WriteCheckpoint (checkpoint/checkpoint_writer.h, NOTE [ Hugging Face
// directories out ], NOTE [ Files complete or absent ]).
#include "checkpoint/checkpoint_writer.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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
#include "checkpoint/safetensors.h"
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

std::vector<std::string> List(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") out.push_back(name);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A fresh empty directory under the test's temporary directory.
std::string FreshDir(const std::string& name) {
  const std::string dir = TempPath(name);
  std::string rm = absl::StrCat("rm -rf '", dir, "'");
  EXPECT_EQ(std::system(rm.c_str()), 0);
  EXPECT_EQ(mkdir(dir.c_str(), 0755), 0);
  return dir;
}

// n float32 values: 4n bytes.
Tensor Bytes4(int64_t n, uint32_t seed) { return RandomNormal({n}, seed); }

std::string Float32Bytes(const Tensor& t) {
  auto values = Dequantize(t, *dtypes::Float32());
  EXPECT_TRUE(values.ok()) << FormatError(values.status());
  return std::string(static_cast<const char*>(values->carrier()->data()),
                     values->size() * 4);
}

const CheckpointTensor* Find(const Checkpoint& c, const std::string& name) {
  for (const CheckpointTensor& t : c.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// Scenario: everything within max_shard_size is one model.safetensors,
// block-scaled Tensors in their convention (ue8m0 128x128 blocks as weight +
// U8 weight_scale_inv), and it reads back with the same values.
TEST(WriteCheckpointTest, EverythingThatFitsIsOneModelSafetensors) {
  const std::string dir = TempPath("one_file");
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
  const Tensor norm = RandomNormal({64}, 1);
  auto block = QuantizeBlockScaled(RandomNormal({200, 300}, 2),
                                   *dtypes::FP8E4M3Block128x128UE8M0(),
                                   kBlocksOfTheFormat);
  ASSERT_TRUE(block.ok()) << FormatError(block.status());
  auto nvfp4 =
      QuantizeBlockScaled(RandomNormal({32, 64}, 3), *dtypes::NVFP4TS(), 1);
  ASSERT_TRUE(nvfp4.ok()) << FormatError(nvfp4.status());
  std::vector<TensorToWrite> writes;
  writes.push_back(ToWrite("model.norm.weight", norm));
  writes.push_back(ToWrite("layers.0.proj.weight", *block));
  writes.push_back(ToWrite("layers.0.up.weight", *nvfp4));
  auto written = WriteCheckpoint(dir, std::move(writes), {});
  ASSERT_TRUE(written.ok()) << FormatError(written.status());
  EXPECT_THAT(written->files, ElementsAre("model.safetensors"));
  EXPECT_THAT(List(dir), ElementsAre("model.safetensors"));
  auto st = ReadSafetensors(absl::StrCat(dir, "/model.safetensors"),
                            SafetensorsReadOptions{false});
  ASSERT_TRUE(st.ok()) << FormatError(st.status());
  std::vector<std::string> names;
  for (const auto& t : st->tensors) names.push_back(t.name);
  EXPECT_THAT(
      names,
      ElementsAre("model.norm.weight", "layers.0.proj.weight",
                  "layers.0.proj.weight_scale_inv", "layers.0.up.weight",
                  "layers.0.up.weight_scale", "layers.0.up.weight_scale_2"));
  EXPECT_EQ(&st->tensors[2].tensor->dtype(), dtypes::UInt8());
  EXPECT_EQ(st->tensors[2].tensor->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_THAT(st->metadata, ElementsAre(std::make_pair(std::string("format"),
                                                       std::string("pt"))));
  EXPECT_EQ(written->total_size, 64 * 4 + 200 * 300 + 6 + 32 * 32 + 32 * 4 + 4);
  auto read = ReadCheckpoint(dir);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  ASSERT_EQ(read->tensors.size(), 3u);
  const CheckpointTensor* b = Find(*read, "layers.0.proj.weight");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->tensor.ok()) << FormatError(b->tensor.status());
  EXPECT_EQ(&b->tensor->dtype(), dtypes::FP8E4M3Block128x128UE8M0());
  EXPECT_EQ(Float32Bytes(*b->tensor), Float32Bytes(*block));
  const CheckpointTensor* u = Find(*read, "layers.0.up.weight");
  ASSERT_NE(u, nullptr);
  ASSERT_TRUE(u->tensor.ok()) << FormatError(u->tensor.status());
  EXPECT_EQ(Float32Bytes(*u->tensor), Float32Bytes(*nvfp4));
}

// Scenario: huggingface_hub's greedy split in order (a Tensor larger than the
// limit alone, in a shard appended at once), transformers' file names, the
// index with total_size and the sorted weight_map, indent 2.
TEST(WriteCheckpointTest, ShardsAreGreedyInOrderWithAnIndex) {
  const std::string dir = TempPath("sharded");
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
  std::vector<TensorToWrite> writes;
  writes.push_back(ToWrite("a", Bytes4(100, 1)));  // 400 bytes
  writes.push_back(ToWrite("b", Bytes4(100, 2)));  // 400
  writes.push_back(ToWrite("c", Bytes4(75, 3)));   // 300: a new shard
  writes.push_back(ToWrite("d", Bytes4(300, 4)));  // 1200: alone
  writes.push_back(ToWrite("e", Bytes4(25, 5)));   // 100: with c
  WriteCheckpointOptions options;
  options.max_shard_size = 1000;
  options.metadata.clear();
  options.index_metadata = {{"format", "\"pt\""}};
  auto written = WriteCheckpoint(dir, std::move(writes), options);
  ASSERT_TRUE(written.ok()) << FormatError(written.status());
  EXPECT_THAT(written->files, ElementsAre("model-00001-of-00003.safetensors",
                                          "model-00002-of-00003.safetensors",
                                          "model-00003-of-00003.safetensors",
                                          "model.safetensors.index.json"));
  EXPECT_EQ(written->total_size, 2400);
  EXPECT_EQ(ReadFileBytes(absl::StrCat(dir, "/model.safetensors.index.json")),
            R"({
  "metadata": {
    "format": "pt",
    "total_size": 2400
  },
  "weight_map": {
    "a": "model-00001-of-00003.safetensors",
    "b": "model-00001-of-00003.safetensors",
    "c": "model-00003-of-00003.safetensors",
    "d": "model-00002-of-00003.safetensors",
    "e": "model-00003-of-00003.safetensors"
  }
}
)");
  auto read = ReadCheckpoint(dir);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  ASSERT_EQ(read->tensors.size(), 5u);
  EXPECT_EQ(Find(*read, "d")->file, "model-00002-of-00003.safetensors");
  EXPECT_EQ(Float32Bytes(*Find(*read, "e")->tensor),
            Float32Bytes(Bytes4(25, 5)));
}

// A block-scaled Tensor never spans two files, however small the limit.
TEST(WriteCheckpointTest, AConventionsMembersShareOneShard) {
  const std::string dir = TempPath("members");
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
  std::vector<TensorToWrite> writes;
  for (int i = 0; i < 3; ++i) {
    auto q =
        QuantizeBlockScaled(RandomNormal({130, 256}, 10 + i),
                            *dtypes::FP8E4M3Block128x128(), kBlocksOfTheFormat);
    ASSERT_TRUE(q.ok());
    writes.push_back(ToWrite(absl::StrCat("l", i, ".weight"), *q));
  }
  WriteCheckpointOptions options;
  options.max_shard_size = 1;
  auto written = WriteCheckpoint(dir, std::move(writes), options);
  ASSERT_TRUE(written.ok()) << FormatError(written.status());
  EXPECT_EQ(written->files.size(), 4u);
  const std::string index =
      ReadFileBytes(absl::StrCat(dir, "/model.safetensors.index.json"));
  EXPECT_THAT(index, HasSubstr("\"l1.weight\": \"model-00002-of-00003"));
  EXPECT_THAT(index,
              HasSubstr("\"l1.weight_scale_inv\": \"model-00002-of-00003"));
  auto read = ReadCheckpoint(dir);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  ASSERT_EQ(read->tensors.size(), 3u);
  for (const CheckpointTensor& t : read->tensors) {
    ASSERT_TRUE(t.tensor.ok()) << t.name << FormatError(t.tensor.status());
    EXPECT_EQ(&t.tensor->dtype(), dtypes::FP8E4M3Block128x128());
  }
}

// Scenario: an existing destination is never touched without overwrite (an
// empty directory excepted); with it the old checkpoint is replaced whole.
TEST(WriteCheckpointTest, AnExistingDestinationNeedsOverwrite) {
  const std::string dir = FreshDir("existing");
  std::vector<TensorToWrite> first;
  first.push_back(ToWrite("a", Bytes4(4, 1)));
  ASSERT_TRUE(WriteCheckpoint(dir, std::move(first), {}).ok());  // Empty: OK.
  std::ofstream(absl::StrCat(dir, "/keep.txt")) << "mine";
  std::vector<TensorToWrite> second;
  second.push_back(ToWrite("b", Bytes4(4, 2)));
  auto refused = WriteCheckpoint(dir, second, {});
  EXPECT_TRUE(IsValueError(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("exists; --overwrite"));
  EXPECT_THAT(List(dir), ElementsAre("keep.txt", "model.safetensors"));
  EXPECT_THAT(List(::testing::TempDir()),
              ::testing::Not(::testing::Contains(HasSubstr("strata-tmp"))));
  WriteCheckpointOptions overwrite;
  overwrite.overwrite = true;
  ASSERT_TRUE(WriteCheckpoint(dir, std::move(second), overwrite).ok());
  EXPECT_THAT(List(dir), ElementsAre("model.safetensors"));
  auto read = ReadCheckpoint(dir);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->tensors[0].name, "b");
  // A file where the directory should be is not replaced.
  const std::string file = TempPath("a_file");
  std::ofstream(file) << "x";
  std::vector<TensorToWrite> third;
  third.push_back(ToWrite("c", Bytes4(4, 3)));
  EXPECT_TRUE(IsValueError(WriteCheckpoint(file, third, overwrite).status()));
  EXPECT_EQ(ReadFileBytes(file), "x");
}

// Scenario: a failure -- a Tensor no file can hold, a Tensor that cannot be
// made, a cancel -- leaves nothing behind; a killed writer's leftovers are
// removed by the next writer of the same destination.
TEST(WriteCheckpointTest, FailuresLeaveNothingBehind) {
  const std::string dir = TempPath("failing");
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
  const auto nothing_left = [&]() {
    EXPECT_THAT(List(::testing::TempDir()),
                ::testing::Not(::testing::Contains(HasSubstr("failing"))));
  };
  auto q8 = QuantizeBlockScaled(RandomNormal({2, 32}, 1), *dtypes::Q8_0(),
                                kBlocksOfTheFormat);
  ASSERT_TRUE(q8.ok());
  std::vector<TensorToWrite> writes;
  writes.push_back(ToWrite("a", Bytes4(4, 1)));
  writes.push_back(ToWrite("q.weight", *q8));
  auto refused = WriteCheckpoint(dir, writes, {});
  EXPECT_TRUE(IsValueError(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("has no safetensors form"));
  nothing_left();

  writes.pop_back();
  TensorToWrite failing;
  failing.name = "b";
  failing.dtype = dtypes::Float32();
  failing.shape = {4};
  failing.make = []() -> absl::StatusOr<Tensor> {
    return ValueErrorCat("cannot make b");
  };
  writes.push_back(failing);
  WriteCheckpointOptions sharded;
  sharded.max_shard_size = 16;
  auto failed = WriteCheckpoint(dir, writes, sharded);
  EXPECT_THAT(std::string(failed.status().message()),
              HasSubstr("cannot make b"));
  nothing_left();

  std::atomic<bool> cancel{true};
  WriteCheckpointOptions cancelled;
  cancelled.control.cancel = &cancel;
  writes.pop_back();
  auto stopped = WriteCheckpoint(dir, writes, cancelled);
  EXPECT_TRUE(absl::IsCancelled(stopped.status())) << stopped.status();
  nothing_left();

  // What a writer killed mid-way left (its process gone): removed.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);
  const std::string leftover = absl::StrCat(dir, ".strata-tmp-", child, "-0");
  ASSERT_EQ(mkdir(leftover.c_str(), 0755), 0);
  std::ofstream(absl::StrCat(leftover, "/model.safetensors")) << "partial";
  ASSERT_TRUE(WriteCheckpoint(dir, writes, {}).ok());
  struct stat st;
  EXPECT_NE(stat(leftover.c_str(), &st), 0);
  EXPECT_THAT(List(dir), ElementsAre("model.safetensors"));
}

TEST(WriteCheckpointTest, OtherFilesAndArguments) {
  const std::string dir = TempPath("with_files");
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
  const std::string source = TempPath("tokenizer_source.json");
  std::ofstream(source) << "{\"vocab\": 3}";
  std::vector<TensorToWrite> writes;
  writes.push_back(ToWrite("a", Bytes4(4, 1)));
  WriteCheckpointOptions options;
  options.files = {{"config.json", "{}\n"}};
  options.copied_files = {{"tokenizer.json", source}};
  ASSERT_TRUE(WriteCheckpoint(dir, writes, options).ok());
  EXPECT_THAT(List(dir), ElementsAre("config.json", "model.safetensors",
                                     "tokenizer.json"));
  EXPECT_EQ(ReadFileBytes(absl::StrCat(dir, "/tokenizer.json")),
            "{\"vocab\": 3}");
  for (const std::string& bad :
       {std::string("../x"), std::string("model.safetensors"),
        std::string("")}) {
    WriteCheckpointOptions o;
    o.files = {{bad, ""}};
    EXPECT_TRUE(IsValueError(WriteCheckpoint(dir, writes, o).status())) << bad;
  }
  WriteCheckpointOptions zero;
  zero.max_shard_size = 0;
  EXPECT_TRUE(IsValueError(WriteCheckpoint(dir, writes, zero).status()));
}

}  // namespace
}  // namespace strata
