// Issue 39's reproductions, each a regression test: hostile checkpoint files
// (deep JSON nesting in every field of a safetensors header, headers padded
// with what is not a space, empty block-scaled GGUF tensors, 1-D weights that
// only look like a convention) and what the readers answer. The CLI's exact
// integers are tested in tools/strata_cli_test.sh; the time per tensor of
// large headers in checkpoint/checkpoint_benchmark.cc.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/gguf.h"
#include "checkpoint/safetensors.h"
#include "core/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/errors.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string Safetensors(const std::string& header, const std::string& data) {
  return SafetensorsLengthPrefix(header.size()) + header + data;
}

std::string Nested(int depth, const std::string& inner) {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

std::string NestedObject(int depth, const std::string& inner) {
  std::string out;
  for (int k = 0; k < depth; ++k) out += "{\"a\":";
  out += inner;
  out += std::string(depth, '}');
  return out;
}

constexpr char kTensor[] =
    R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

// Reproduction 1: 10^5 levels under "dtype", "shape", "data_offsets", an
// unknown key, "__metadata__", or as a tensor's whole value crashed the
// reader (a stack overflow) or were accepted; every one is now "not a
// safetensors file" naming where and how deep, as serde_json refuses them.
TEST(HostileSafetensorsTest, DeepNestingInEveryFieldIsRefusedNamingTheKey) {
  const int deep = 100000;
  struct Case {
    std::string header;
    std::string where;
  };
  const std::vector<Case> cases = {
      {absl::StrCat(R"({"a":{"dtype":)", Nested(deep, ""),
                    R"(,"shape":[2],"data_offsets":[0,8]}})"),
       R"("a" > "dtype")"},
      {absl::StrCat(R"({"a":{"dtype":"F32","shape":)", Nested(deep, "2"),
                    R"(,"data_offsets":[0,8]}})"),
       R"("a" > "shape")"},
      {absl::StrCat(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)",
                    Nested(deep, "0"), "}}"),
       R"("a" > "data_offsets")"},
      {absl::StrCat(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":)",
           Nested(deep, ""), "}}"),
       R"("a" > "x")"},
      {absl::StrCat(R"({"__metadata__":)", NestedObject(deep, R"("1")"), ",",
                    kTensor, "}"),
       R"("__metadata__" > "a" > "a")"},
      {absl::StrCat(R"({"a":)", Nested(deep, ""), "}"), R"("a")"},
      {Nested(deep, ""), "the root"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.where);
    const auto read = ReadSafetensors(WriteFile(
        "deep.safetensors", Safetensors(c.header, std::string(8, 0))));
    ASSERT_FALSE(read.ok());
    EXPECT_TRUE(IsValueError(read.status())) << read.status();
    const std::string message(read.status().message());
    EXPECT_THAT(message,
                StartsWith("ReadSafetensors: not a safetensors file: the "
                           "header nests values deeper than 128 levels"));
    EXPECT_THAT(message, HasSubstr("depth 129 under " + c.where));
    EXPECT_LT(message.size(), 500u);
    // The dispatcher answers the same.
    const auto any = ReadCheckpoint(WriteFile(
        "deep.safetensors", Safetensors(c.header, std::string(8, 0))));
    EXPECT_EQ(any.status(), read.status());
  }
}

// The limit is one number for every path: 128 levels (the root is 1, a tensor
// entry 2) parse, 129 do not.
TEST(HostileSafetensorsTest, NestingUpTo128LevelsIsJson) {
  // Root (1) > entry (2) > "x" with 126 arrays: 128 levels.
  const std::string ok = absl::StrCat(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":)",
      Nested(126, ""), "}}");
  const auto read = ReadSafetensors(
      WriteFile("d128.safetensors", Safetensors(ok, std::string(8, 0))));
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->tensors.size(), 1u);
  EXPECT_TRUE(read->tensors[0].tensor.ok()) << read->tensors[0].tensor.status();
  const std::string deeper = absl::StrCat(
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":)",
      Nested(127, ""), "}}");
  const auto refused = ReadSafetensors(
      WriteFile("d129.safetensors", Safetensors(deeper, std::string(8, 0))));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr(R"(depth 129 under "a" > "x")"));
}

// Reproduction 2 (its correctness half; the time per tensor is
// BM_ReadSafetensorsHeader): 2 x 10^5 tensors read back in header order, and
// so does the "__metadata__" order, which the parser no longer keeps itself.
TEST(HostileSafetensorsTest, ManyTensorsReadInHeaderOrder) {
  const int n = 200000;
  std::string header = R"({"__metadata__":{"z":"1","a":"2","m":"3"})";
  for (int k = n; k-- > 0;) {
    absl::StrAppend(&header, ",\"t", k,
                    R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]})");
  }
  header += "}";
  const auto read =
      ReadSafetensors(WriteFile("many.safetensors", Safetensors(header, "")));
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->tensors.size(), static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    ASSERT_EQ(read->tensors[k].name, absl::StrCat("t", n - 1 - k));
    ASSERT_TRUE(read->tensors[k].tensor.ok());
  }
  const std::vector<std::pair<std::string, std::string>> metadata = {
      {"z", "1"}, {"a", "2"}, {"m", "3"}};
  EXPECT_EQ(read->metadata, metadata);
}

// Reproduction 4: NUL bytes inside the declared header length were accepted
// (nlohmann's lexer ends its input at a NUL); the format pads with spaces.
TEST(HostileSafetensorsTest, AHeaderPaddedByAnythingButSpacesIsRefused) {
  const std::string json = absl::StrCat("{", kTensor, "}");
  for (const std::string& padding :
       {std::string("\0\0\0\0", 4), std::string("  \0", 3), std::string("\n"),
        std::string("\t "), std::string(" \r"), std::string("\0{}", 3)}) {
    SCOPED_TRACE(absl::CHexEscape(padding));
    const auto read = ReadSafetensors(WriteFile(
        "padded.safetensors", Safetensors(json + padding, std::string(8, 0))));
    ASSERT_FALSE(read.ok());
    EXPECT_TRUE(IsValueError(read.status()));
    EXPECT_THAT(std::string(read.status().message()),
                StartsWith("ReadSafetensors: not a safetensors file: byte "));
    EXPECT_THAT(std::string(read.status().message()),
                HasSubstr("spaces (0x20)"));
  }
  // A NUL inside the JSON, before its end, is named at its byte.
  const auto inner = ReadSafetensors(WriteFile(
      "nul.safetensors",
      Safetensors(std::string("{\"a\":\0{}}", 9), std::string(8, 0))));
  EXPECT_THAT(std::string(inner.status().message()),
              HasSubstr("byte 5 of the header is NUL"));
  // Spaces are the format's padding.
  const auto spaces = ReadSafetensors(WriteFile(
      "spaces.safetensors", Safetensors(json + "       ", std::string(8, 0))));
  ASSERT_TRUE(spaces.ok()) << spaces.status();
  EXPECT_TRUE(spaces->tensors[0].tensor.ok());
}

// A GGUF file of one tensor of `type` with dims (innermost first) and no data.
std::string EmptyGguf(uint32_t type, const std::vector<uint64_t>& dims) {
  std::string out = "GGUF";
  const auto put = [&](uint64_t v, int bytes) {
    for (int k = 0; k < bytes; ++k)
      out.push_back(static_cast<char>(v >> (8 * k)));
  };
  put(3, 4);  // Version.
  put(1, 8);  // Tensors.
  put(0, 8);  // Metadata.
  put(1, 8);
  out += "w";
  put(dims.size(), 4);
  for (uint64_t d : dims) put(d, 8);
  put(type, 4);
  put(0, 8);  // Offset.
  out.append((32 - out.size() % 32) % 32, '\0');
  return out;
}

// Reproduction 3: empty q8_0 / q4_0 / MXFP4 tensors import as empty Tensors,
// as an empty F32 one does (they were refused: "empty placement ... lies past
// the end of the carrier (size 0 ...)").
TEST(HostileGgufTest, EmptyBlockScaledTensorsImportAsEmptyTensors) {
  struct Case {
    uint32_t type;
    const char* dtype;
  };
  for (const Case c : {Case{8, "q8_0"}, Case{2, "q4_0"}, Case{39, "mxfp4"},
                       Case{0, "float32"}}) {
    for (const std::vector<uint64_t>& dims :
         {std::vector<uint64_t>{64, 0}, std::vector<uint64_t>{0},
          std::vector<uint64_t>{32, 0, 3}, std::vector<uint64_t>{0, 5}}) {
      SCOPED_TRACE(absl::StrCat(c.dtype, " dims ", dims.size()));
      const auto read =
          ReadGguf(WriteFile("empty.gguf", EmptyGguf(c.type, dims)));
      ASSERT_TRUE(read.ok()) << read.status();
      ASSERT_EQ(read->tensors.size(), 1u);
      const auto& t = read->tensors[0].tensor;
      ASSERT_TRUE(t.ok()) << t.status();
      EXPECT_EQ(t->dtype().name(), c.dtype);
      std::vector<int64_t> shape(dims.rbegin(), dims.rend());
      EXPECT_EQ(t->shape(), shape);
    }
  }
}

// Past the reproductions: an array of 10^7 empty strings (80 MB of file)
// took 2 GB of GgufValues; strings and arrays inside metadata arrays now have
// one budget per file, kMaxGgufMetadataItems.
TEST(HostileGgufTest, MetadataArraysOfManySmallItemsHaveABudget) {
  const auto file = [](uint64_t strings) {
    std::string out = "GGUF";
    const auto put = [&](uint64_t v, int bytes) {
      for (int k = 0; k < bytes; ++k)
        out.push_back(static_cast<char>(v >> (8 * k)));
    };
    put(3, 4);
    put(0, 8);  // Tensors.
    put(1, 8);  // Metadata.
    put(1, 8);
    out += "a";
    put(9, 4);  // ARRAY
    put(8, 4);  // of STRING
    put(strings, 8);
    out.append(8 * strings, '\0');  // Each an empty string.
    return out;
  };
  const auto many = ReadGguf(
      WriteFile("many_strings.gguf",
                file(static_cast<uint64_t>(kMaxGgufMetadataItems) + 1)));
  ASSERT_FALSE(many.ok());
  EXPECT_TRUE(IsValueError(many.status()));
  EXPECT_THAT(std::string(many.status().message()),
              HasSubstr("(kMaxGgufMetadataItems)"));
  const auto some = ReadGguf(WriteFile("some_strings.gguf", file(100000)));
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_EQ(some->metadata[0].second.items.size(), 100000u);
}

// Reproduction 5's reader half: a 1-D F8_E4M3 weight with a (2)
// weight_scale_inv was imported as block128x128, a 1-D MXFP8 weight with a
// (2) weight_scale as mxfp8_e4m3: the table shows (N, K), so each is a
// ValueError for P. A 1-D weight with a per-tensor scale is the table's
// (...,K) convention and still imports.
TEST(HostileSafetensorsTest,
     OneDimensionalWeightsAreTheTablesOnlyWhereItShowsOne) {
  struct Case {
    std::string header;
    std::string data;
    const char* expect;  // A dtype, or a message fragment of P's refusal.
    bool ok;
  };
  const std::vector<Case> cases = {
      {R"({"l.weight":{"dtype":"F8_E4M3","shape":[256],"data_offsets":[0,256]},)"
       R"("l.weight_scale_inv":{"dtype":"F32","shape":[2],"data_offsets":[256,264]}})",
       std::string(264, '\0'), "need at least two dims", false},
      {R"({"l.weight":{"dtype":"F8_E4M3","shape":[64],"data_offsets":[0,64]},)"
       R"("l.weight_scale":{"dtype":"U8","shape":[2],"data_offsets":[64,66]}})",
       std::string(66, '\0'), "need scales of shape (...,N,K/32)", false},
      {R"({"l.weight":{"dtype":"U8","shape":[32],"data_offsets":[0,32]},)"
       R"("l.weight_scale":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[32,36]},)"
       R"("l.weight_scale_2":{"dtype":"F32","shape":[],"data_offsets":[36,40]}})",
       std::string(40, '\0'), "need block scales of shape (...,N,K/16)", false},
      {R"({"l.weight":{"dtype":"F8_E4M3","shape":[64],"data_offsets":[0,64]},)"
       R"("l.weight_scale":{"dtype":"F32","shape":[],"data_offsets":[64,68]}})",
       std::string(68, '\0'), "fp8_e4m3_tensorwise", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expect);
    const auto read = ReadSafetensors(
        WriteFile("oned.safetensors", Safetensors(c.header, c.data)));
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_EQ(read->tensors.size(), 1u);
    EXPECT_EQ(read->tensors[0].name, "l.weight");
    const auto& t = read->tensors[0].tensor;
    if (c.ok) {
      ASSERT_TRUE(t.ok()) << t.status();
      EXPECT_EQ(t->dtype().name(), c.expect);
    } else {
      ASSERT_FALSE(t.ok());
      EXPECT_TRUE(IsValueError(t.status()));
      EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.expect));
    }
  }
}

}  // namespace
}  // namespace strata
