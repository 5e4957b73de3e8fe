// WriteGguf (checkpoint/gguf.h, NOTE [ GGUF out ]).
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "checkpoint/gguf.h"
#include "dtype/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "layout/layout.h"
#include "ops/dequantize.h"
#include "ops/quantize.h"
#include "tests/test_util.h"
#include "util/errors.h"
#include "views/views.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
using testing::RandomNormal;
using testing::ReadFileBytes;
using testing::TempPath;

const char kGolden[] = "tests/golden/gguf/";

std::string Float32Bytes(const Tensor& t) {
  auto values = Dequantize(t, *dtypes::Float32());
  EXPECT_TRUE(values.ok()) << FormatError(values.status());
  return std::string(static_cast<const char*>(values->carrier()->data()),
                     values->size() * 4);
}

std::vector<TensorToWrite> ToWrites(const Gguf& gguf) {
  std::vector<TensorToWrite> out;
  for (const GgufTensor& t : gguf.tensors) {
    EXPECT_TRUE(t.tensor.ok()) << t.name;
    out.push_back(ToWrite(t.name, *t.tensor));
  }
  return out;
}

// A file gguf-py's writer laid out (the golden's reference) is written back
// byte for byte from what ReadGguf made of it: every plain type, q8_0, q4_0,
// mxfp4, a rank-4 tensor, an empty one and a scalar, metadata of every type.
TEST(WriteGgufTest, ReadThenWrittenIsTheSameFileByteForByte) {
  const std::string golden = absl::StrCat(kGolden, "mixed_v3.gguf");
  auto read = ReadGguf(golden);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  const std::string path = TempPath("rewritten.gguf");
  ASSERT_TRUE(WriteGguf(path, ToWrites(*read), read->metadata).ok());
  EXPECT_EQ(ReadFileBytes(path), ReadFileBytes(golden));
}

// Quantized Tensors of every GGUF block type read back with the same values;
// a view of one (a slice of rows, a permute of the leading modes) writes the
// same values as its compact copy.
TEST(WriteGgufTest, BlockTypesReadBackWithTheirValuesFromAnyLayout) {
  for (const CompoundDType* format :
       {dtypes::Q8_0(), dtypes::Q4_0(), dtypes::MXFP4()}) {
    SCOPED_TRACE(format->name());
    const Tensor x = RandomNormal({3, 4, 96}, 7);
    auto q = QuantizeBlockScaled(x, *format, 2);
    ASSERT_TRUE(q.ok()) << FormatError(q.status());
    auto permuted = Permute(*q, {1, 0, 2});
    ASSERT_TRUE(permuted.ok()) << FormatError(permuted.status());
    auto sliced = Slice(*q, 1, 1, 4, 2);
    ASSERT_TRUE(sliced.ok()) << FormatError(sliced.status());
    std::vector<TensorToWrite> writes;
    writes.push_back(ToWrite("q", *q));
    writes.push_back(ToWrite("permuted", *permuted));
    writes.push_back(ToWrite("sliced", *sliced));
    const std::string path = TempPath("blocks.gguf");
    ASSERT_TRUE(WriteGguf(path, std::move(writes), {}).ok());
    auto read = ReadGguf(path);
    ASSERT_TRUE(read.ok()) << FormatError(read.status());
    ASSERT_EQ(read->tensors.size(), 3u);
    const Tensor* sources[] = {&*q, &*permuted, &*sliced};
    for (int i = 0; i < 3; ++i) {
      const GgufTensor& t = read->tensors[i];
      ASSERT_TRUE(t.tensor.ok()) << t.name << FormatError(t.tensor.status());
      EXPECT_EQ(&t.tensor->dtype(), format);
      EXPECT_EQ(t.tensor->shape(), sources[i]->shape());
      EXPECT_EQ(Float32Bytes(*t.tensor), Float32Bytes(*sources[i])) << t.name;
    }
  }
}

TEST(WriteGgufTest, WhatGgufCannotHoldIsRefusedBeforeTheFileIsCreated) {
  const std::string path = TempPath("refused.gguf");
  std::remove(path.c_str());
  const auto expect_refused =
      [&](std::vector<TensorToWrite> writes,
          std::vector<std::pair<std::string, GgufValue>> metadata,
          const std::string& message) {
        const absl::Status status =
            WriteGguf(path, std::move(writes), metadata);
        EXPECT_TRUE(IsValueError(status)) << status;
        EXPECT_THAT(std::string(status.message()), HasSubstr(message));
        EXPECT_FALSE(std::ifstream(path).good());
      };
  const Tensor x = RandomNormal({2, 3, 1, 1, 32}, 1);
  std::vector<TensorToWrite> w;
  w.push_back(ToWrite("five", x));
  expect_refused(std::move(w), {}, "GGUF tensors have at most 4 dims");
  auto fp8 =
      QuantizeBlockScaled(RandomNormal({4, 128}, 2),
                          *dtypes::FP8E4M3Block128x128(), kBlocksOfTheFormat);
  ASSERT_TRUE(fp8.ok());
  w.clear();
  w.push_back(ToWrite("fp8", *fp8));
  expect_refused(std::move(w), {}, "has no GGUF type");
  TensorToWrite odd;
  odd.name = "odd";
  odd.dtype = dtypes::Q8_0();
  odd.shape = {2, 33};
  w.clear();
  w.push_back(odd);
  expect_refused(std::move(w), {}, "must be a multiple of 32");
  const Tensor y = RandomNormal({2, 32}, 3);
  w.clear();
  w.push_back(ToWrite("a", y));
  w.push_back(ToWrite("a", y));
  expect_refused(std::move(w), {}, "written twice");
  GgufValue bad_alignment;
  bad_alignment.type = GgufType::kUInt32;
  bad_alignment.bits = 48;
  expect_refused({}, {{"general.alignment", bad_alignment}},
                 "general.alignment must be a UINT32 power of two");
  GgufValue one;
  one.type = GgufType::kUInt8;
  expect_refused({}, {{"k", one}, {"k", one}}, "given twice");
}

// general.alignment set by the metadata places every tensor at a multiple of
// it, as ReadGguf checks.
TEST(WriteGgufTest, AlignmentFromTheMetadata) {
  GgufValue alignment;
  alignment.type = GgufType::kUInt32;
  alignment.bits = 256;
  std::vector<TensorToWrite> writes;
  writes.push_back(ToWrite("a", RandomNormal({3}, 1)));
  writes.push_back(ToWrite("b", RandomNormal({5, 2}, 2)));
  const std::string path = TempPath("aligned.gguf");
  ASSERT_TRUE(
      WriteGguf(path, std::move(writes), {{"general.alignment", alignment}})
          .ok());
  auto read = ReadGguf(path);
  ASSERT_TRUE(read.ok()) << FormatError(read.status());
  EXPECT_EQ(read->alignment, 256);
  EXPECT_EQ(read->data_offset % 256, 0);
  ASSERT_EQ(read->tensors.size(), 2u);
  EXPECT_EQ(read->tensors[1].tensor->shape(), (std::vector<int64_t>{5, 2}));
}

}  // namespace
}  // namespace strata
