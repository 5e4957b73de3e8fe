// ReadGguf against files that an implementation Strata did not write made
// (tools/peer/gguf_reference.py, a writer and quantizers rebuilt from
// gguf-py's and ggml's definitions, by tools/peer/make_gguf_goldens.py):
// every tensor decodes, through its mapped levels, to the reference's
// dequantized values; the metadata reads back; every hostile file is refused
// at the level tests/golden/gguf/hostile/expected.txt names.
#include "checkpoint/gguf.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/float_formats.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "layout/layout.h"
#include "util/errors.h"
#include "views/views.h"

namespace strata {
namespace {

const char kDir[] = "tests/golden/gguf/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::vector<std::string>> Lines(const std::string& path,
                                            int fields) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    out.push_back(absl::StrSplit(line, absl::MaxSplits(' ', fields - 1)));
  }
  return out;
}

// The value of every element, row-major, decoded from the levels: a plain
// dtype by its value; q8_0 q x d, q4_0 (q - 8) x d, mxfp4 e2m1 x 2^(e-127).
std::vector<double> Decode(const Tensor& t) {
  const Representation& rep = TensorAccess::representation(t);
  const std::vector<int64_t> shape = t.shape();
  int64_t total = 1;
  for (int64_t e : shape) total *= e;
  std::vector<double> out;
  const auto l0 = TopLevelModes(rep.subtensor(0).placement);
  const auto s0 = rep.num_levels() > 1
                      ? TopLevelModes(rep.adjacent_layouts()[0])
                      : decltype(TopLevelModes(l0[0]))();
  std::vector<int64_t> c(shape.size(), 0);
  const auto load = [&](int level, int64_t index) {
    const Subtensor& s = rep.subtensor(level);
    const SimpleDType& d = *s.storage_dtype;
    const auto* bytes = static_cast<const uint8_t*>(s.carrier->data());
    const uint64_t bits = ReadPacked(bytes, d.bits(), index);
    if (&d == dtypes::Float32()) {
      float f;
      const uint32_t b = static_cast<uint32_t>(bits);
      std::memcpy(&f, &b, 4);
      return static_cast<double>(f);
    }
    if (&d == dtypes::Float64()) {
      double f;
      std::memcpy(&f, &bits, 8);
      return f;
    }
    if (&d == dtypes::Float16()) return static_cast<double>(HalfToFloat(bits));
    if (&d == dtypes::BFloat16()) {
      return static_cast<double>(BFloat16ToFloat(bits));
    }
    if (&d == dtypes::Float4E2M1FN()) return Float4E2M1FNFormat().Decode(bits);
    if (&d == dtypes::Float8E8M0FNU())
      return Float8E8M0FNUFormat().Decode(bits);
    if (&d == dtypes::UInt4() || &d == dtypes::UInt8()) {
      return static_cast<double>(bits);
    }
    // Signed integers.
    const int width = d.bits();
    const int64_t v =
        static_cast<int64_t>(bits << (64 - width)) >> (64 - width);
    return static_cast<double>(v);
  };
  for (int64_t r = 0; r < total; ++r) {
    int64_t i0 = rep.subtensor(0).offset, i1 = 0;
    for (size_t j = 0; j < c.size(); ++j) {
      i0 += l0[j](c[j]);
      if (!s0.empty()) i1 += s0[j](c[j]);
    }
    double v = load(0, i0);
    if (rep.num_levels() > 1) {
      const Subtensor& s = rep.subtensor(1);
      const double scale = load(1, s.offset + s.placement(i1));
      if (&t.dtype() == dtypes::Q4_0()) v -= 8;
      // float32 arithmetic, as ggml's dequantizers.
      v = static_cast<float>(static_cast<float>(v) * static_cast<float>(scale));
    }
    out.push_back(v);
    for (size_t j = c.size(); j-- > 0;) {
      if (++c[j] < shape[j]) break;
      c[j] = 0;
    }
  }
  return out;
}

TEST(GgufTest, EveryTensorDecodesToTheReferenceValues) {
  std::map<std::string, Gguf> files;
  const auto manifest = Lines(absl::StrCat(kDir, "manifest.txt"), 4);
  ASSERT_GE(manifest.size(), 15u);
  for (const auto& m : manifest) {
    ASSERT_EQ(m.size(), 4u);
    SCOPED_TRACE(absl::StrCat(m[0], " ", m[1]));
    if (!files.count(m[0])) {
      auto read = ReadGguf(absl::StrCat(kDir, m[0]));
      ASSERT_TRUE(read.ok()) << read.status();
      files.emplace(m[0], *std::move(read));
    }
    const Gguf& g = files.at(m[0]);
    const GgufTensor* t = nullptr;
    for (const GgufTensor& x : g.tensors) {
      if (x.name == m[1]) t = &x;
    }
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->tensor.ok()) << t->tensor.status();
    EXPECT_EQ(t->ggml_type, m[2]);
    const std::string shape = m[3] == "-" ? "" : std::string(m[3]);
    EXPECT_EQ(absl::StrJoin(t->tensor->shape(), ","), shape);
    for (const Subtensor& s :
         TensorAccess::representation(*t->tensor).subtensors()) {
      EXPECT_EQ(s.carrier->class_name(), "mapped");
    }
    const std::string expected =
        ReadFile(absl::StrCat(kDir, m[0], ".", m[1], ".f32"));
    const std::vector<double> got = Decode(*t->tensor);
    ASSERT_EQ(got.size() * 4, expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      float want;
      std::memcpy(&want, expected.data() + 4 * i, 4);
      const float have = static_cast<float>(got[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(have)) << i;
      } else {
        ASSERT_EQ(have, want) << "element " << i;
      }
    }
  }
}

// The reference's rendering of a value (metadata.txt's header): FLOAT32
// widened to double and printed as the shortest double.
std::string Render(const GgufValue& v) {
  if (v.type == GgufType::kFloat32) {
    GgufValue wide;
    wide.type = GgufType::kFloat64;
    const double d = v.AsDouble();
    std::memcpy(&wide.bits, &d, 8);
    return wide.ToString();
  }
  if (v.type == GgufType::kArray) {
    std::vector<std::string> parts;
    if (v.items.empty()) {
      for (uint64_t i = 0; i < v.count; ++i) {
        parts.push_back(Render(v.Element(i)));
      }
    } else {
      for (const GgufValue& item : v.items) parts.push_back(Render(item));
    }
    return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
  }
  return v.ToString();
}

std::string TypeText(const GgufValue& v) {
  if (v.type != GgufType::kArray) return GgufTypeName(v.type);
  GgufValue element;
  element.type = v.element_type;
  if (!v.items.empty()) element = v.items[0];
  return absl::StrCat("ARRAY<",
                      v.element_type == GgufType::kArray && v.items.empty()
                          ? "ARRAY"
                          : TypeText(element),
                      ">");
}

TEST(GgufTest, MetadataReadsBackInFileOrder) {
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& m : Lines(absl::StrCat(kDir, "metadata.txt"), 4)) {
    ASSERT_EQ(m.size(), 4u);
    expected[m[0]].push_back(absl::StrCat(m[1], " ", m[2], " ", m[3]));
  }
  ASSERT_EQ(expected.size(), 2u);
  for (const auto& [file, lines] : expected) {
    auto read = ReadGguf(absl::StrCat(kDir, file));
    ASSERT_TRUE(read.ok()) << read.status();
    std::vector<std::string> got;
    for (const auto& [key, value] : read->metadata) {
      got.push_back(
          absl::StrCat(key, " ", TypeText(value), " ", Render(value)));
    }
    EXPECT_EQ(got, lines) << file;
  }
  auto v2 = ReadGguf(absl::StrCat(kDir, "v2_align64.gguf"));
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->version, 2u);
  EXPECT_EQ(v2->alignment, 64);
  EXPECT_EQ(v2->data_offset % 64, 0);
}

TEST(GgufTest, HostileFilesAreRefusedAtTheirLevel) {
  const auto expected = Lines(absl::StrCat(kDir, "hostile/expected.txt"), 3);
  ASSERT_GE(expected.size(), 20u);
  for (const auto& e : expected) {
    ASSERT_GE(e.size(), 2u);
    SCOPED_TRACE(absl::StrJoin(e, " "));
    auto read = ReadGguf(absl::StrCat(kDir, "hostile/", e[0]));
    if (e[1] == "file") {
      ASSERT_FALSE(read.ok());
      EXPECT_TRUE(IsValueError(read.status())) << read.status();
      EXPECT_TRUE(absl::StartsWith(read.status().message(),
                                   "ReadGguf: not a GGUF file: "))
          << read.status();
      continue;
    }
    ASSERT_TRUE(read.ok()) << read.status();
    const std::string name(absl::StripPrefix(e[1], "tensor:"));
    int refused = 0;
    for (const GgufTensor& t : read->tensors) {
      if (t.name == name) {
        EXPECT_TRUE(IsValueError(t.tensor.status())) << t.tensor.status();
        EXPECT_NE(t.tensor.status().message().find(name), std::string::npos);
        ++refused;
      } else {
        EXPECT_TRUE(t.tensor.ok()) << t.name << ": " << t.tensor.status();
      }
    }
    EXPECT_EQ(refused, 1);
  }
}

TEST(GgufTest, OneRowOfAQuantizedTensorIsAView) {
  auto read = ReadGguf(absl::StrCat(kDir, "mixed_v3.gguf"));
  ASSERT_TRUE(read.ok());
  for (const GgufTensor& t : read->tensors) {
    if (t.name != "w_q8" && t.name != "w_q4" && t.name != "w_mxfp4") continue;
    ASSERT_TRUE(t.tensor.ok());
    auto row = Slice(*t.tensor, 0, 1, 2);
    ASSERT_TRUE(row.ok()) << t.name << ": " << row.status();
    const std::vector<double> all = Decode(*t.tensor), one = Decode(*row);
    const int64_t k = t.tensor->shape().back();
    for (int64_t i = 0; i < k; ++i) EXPECT_EQ(one[i], all[k + i]) << t.name;
    // A slice that cuts a block is refused by the rule.
    EXPECT_TRUE(IsValueError(Slice(*t.tensor, 1, 0, 16).status())) << t.name;
    // Writes through the mapped carriers are refused.
  }
}

}  // namespace
}  // namespace strata
