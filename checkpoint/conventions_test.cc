// NOTE [ Checkpoint conventions ]: every convention of formats.md section 3
// imports as one Tensor over mapped regions of the file, reaching the file's
// bytes at every level; inconsistent groups are that Tensor's ValueError
// while the rest imports; WriteSafetensors writes each format back as its
// convention, write -> read -> write byte-identical.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "checkpoint/safetensors.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "layout/layout.h"
#include "ops/quantize.h"
#include "util/errors.h"
#include "views/views.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/", name);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A safetensors file from (name, dtype, shape, bytes) entries, in order.
struct Raw {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
std::string WriteRaw(const std::string& file, const std::vector<Raw>& raws) {
  std::string header = "{", data;
  for (const Raw& r : raws) {
    if (header.size() > 1) header += ",";
    absl::StrAppend(&header, "\"", r.name, "\":{\"dtype\":\"", r.dtype,
                    "\",\"shape\":[", absl::StrJoin(r.shape, ","),
                    "],\"data_offsets\":[", data.size(), ",",
                    data.size() + r.bytes.size(), "]}");
    data += r.bytes;
  }
  header += "}";
  const std::string path = TempPath(file);
  std::ofstream(path, std::ios::binary)
      << SafetensorsLengthPrefix(header.size()) << header << data;
  return path;
}

std::string Bytes(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0x7F);  // No fp8 NaN.
  return out;
}

std::string Floats(std::vector<float> v) {
  std::string out(4 * v.size(), '\0');
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

const SafetensorsTensor* Find(const Safetensors& s, const std::string& name) {
  for (const SafetensorsTensor& t : s.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// The bits of the value code and of every scale that value coordinate c
// reaches (levels 1 and 2).
std::vector<uint64_t> Reached(const Tensor& t, const std::vector<int64_t>& c) {
  const Representation& rep = TensorAccess::representation(t);
  std::vector<uint64_t> out;
  const auto l0 = TopLevelModes(rep.subtensor(0).placement);
  const auto s0 = TopLevelModes(rep.adjacent_layouts()[0]);
  int64_t i0 = rep.subtensor(0).offset, i1 = 0;
  for (size_t j = 0; j < c.size(); ++j) {
    i0 += l0[j](c[j]);
    i1 += s0[j](c[j]);
  }
  const auto read = [&](int level, int64_t index) {
    const Subtensor& s = rep.subtensor(level);
    return ReadPacked(static_cast<const uint8_t*>(s.carrier->data()),
                      s.storage_dtype->bits(), index);
  };
  out.push_back(read(0, i0));
  const Subtensor& s1 = rep.subtensor(1);
  out.push_back(read(1, s1.offset + s1.placement(i1)));
  if (rep.num_levels() == 3) {
    const Subtensor& s2 = rep.subtensor(2);
    out.push_back(
        read(2, s2.offset + s2.placement(rep.adjacent_layouts()[1](i1))));
  }
  return out;
}

void ForEachCoord(const std::vector<int64_t>& shape,
                  const std::function<void(const std::vector<int64_t>&)>& f) {
  for (int64_t e : shape) {
    if (e == 0) return;
  }
  std::vector<int64_t> c(shape.size(), 0);
  while (true) {
    f(c);
    size_t k = c.size();
    while (k > 0 && ++c[k - 1] == shape[k - 1]) c[--k] = 0;
    if (k == 0) return;
  }
}

Tensor Source(std::vector<int64_t> shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  float* f = static_cast<float*>(carrier->mutable_data());
  for (int64_t i = 0; i < n; ++i) f[i] = normal(rng) * (1 + i % 7);
  std::vector<IntTuple> e(shape.begin(), shape.end());
  return *Tensor::Create(carrier, 0, *Layout::RowMajor(IntTuple::Tuple(e)));
}

struct Case {
  const CompoundDType* dtype;
  std::vector<int64_t> shape;
  int64_t blocked_dim;
  std::vector<std::string> members;  // Suffixes after "layer.weight".
};

// Scenario: each format writes as its convention and reads back as one Tensor
// whose every value reaches the same code and scales; write -> read -> write
// is byte-identical.
TEST(ConventionsTest, EveryFormatWritesAndReadsBackAsItsConvention) {
  const std::vector<Case> cases = {
      {dtypes::NVFP4TS(), {2, 3, 64}, 2, {"", "_scale", "_scale_2"}},
      {dtypes::NVFP4TSRecip(),
       {5, 32},
       1,
       {"_packed", "_scale", "_global_scale"}},
      {dtypes::MXFP8E4M3(), {4, 64}, 1, {"", "_scale"}},
      {dtypes::FP8E4M3Block128x128(),
       {200, 300},
       kBlocksOfTheFormat,
       {"", "_scale_inv"}},
      {dtypes::FP8E4M3Block128x128(),
       {2, 130, 129},
       kBlocksOfTheFormat,
       {"", "_scale_inv"}},
      {dtypes::FP8E4M3Tensorwise(),
       {3, 40},
       kBlocksOfTheFormat,
       {"", "_scale"}},
      {dtypes::FP8E4M3Rowwise(),
       {2, 3, 40},
       kBlocksOfTheFormat,
       {"", "_scale"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dtype->name());
    auto q = QuantizeBlockScaled(Source(c.shape, 7), *c.dtype, c.blocked_dim);
    ASSERT_TRUE(q.ok()) << q.status();
    const std::string a = TempPath("a.safetensors"),
                      b = TempPath("b.safetensors");
    ASSERT_TRUE(WriteSafetensors(
                    a, {{"model.layer.weight", *q}, {"bias", Source({3}, 1)}})
                    .ok());
    // The header lists the convention's members, in order.
    const std::string bytes = ReadFile(a);
    size_t at = 0;
    for (const std::string& m : c.members) {
      at = bytes.find("\"model.layer.weight" + m + "\"", at);
      ASSERT_NE(at, std::string::npos) << m;
    }
    auto read = ReadSafetensors(a);
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_EQ(read->tensors.size(), 2u);
    const SafetensorsTensor* t = Find(*read, "model.layer.weight");
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->tensor.ok()) << t->tensor.status();
    EXPECT_EQ(&t->tensor->dtype(), c.dtype);
    EXPECT_EQ(t->tensor->shape(), c.shape);
    for (const Subtensor& s :
         TensorAccess::representation(*t->tensor).subtensors()) {
      EXPECT_EQ(s.carrier->class_name(), "mapped");
    }
    ForEachCoord(c.shape, [&](const std::vector<int64_t>& coord) {
      ASSERT_EQ(Reached(*t->tensor, coord), Reached(*q, coord));
    });
    ASSERT_TRUE(WriteSafetensors(b, {{"model.layer.weight", *t->tensor},
                                     {"bias", *read->tensors[1].tensor}})
                    .ok());
    EXPECT_EQ(ReadFile(a), ReadFile(b));
  }
}

// Review: a rowwise Tensor of one row writes its scale as per tensor (the
// same value), so write -> read -> write stays byte-identical.
TEST(ConventionsTest, OneRowRowwiseWritesPerTensor) {
  auto row = QuantizeBlockScaled(Source({40}, 3), *dtypes::FP8E4M3Rowwise(),
                                 kBlocksOfTheFormat);
  ASSERT_TRUE(row.ok()) << row.status();
  const std::string a = TempPath("row_a.safetensors"),
                    b = TempPath("row_b.safetensors");
  ASSERT_TRUE(WriteSafetensors(a, {{"x.weight", *row}}).ok());
  auto read = ReadSafetensors(a);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->tensors[0].tensor.ok()) << read->tensors[0].tensor.status();
  EXPECT_EQ(&read->tensors[0].tensor->dtype(), dtypes::FP8E4M3Tensorwise());
  ASSERT_TRUE(
      WriteSafetensors(b, {{"x.weight", *read->tensors[0].tensor}}).ok());
  EXPECT_EQ(ReadFile(a), ReadFile(b));
}

// Scenario: DeepSeek-V3's 576 rows in blocks of 128 import as one ragged
// fp8_e4m3_block128x128 Tensor; an 8-way row shard at multiples of 128 is a
// view, the ragged last shard too.
TEST(ConventionsTest, DeepSeekWeightScaleInvIsOneRaggedTensor) {
  const std::string path = WriteRaw(
      "ds.safetensors",
      {{"model.layers.0.mlp.down_proj.weight",
        "F8_E4M3",
        {576, 256},
        Bytes(576 * 256, 1)},
       {"model.layers.0.mlp.down_proj.weight_scale_inv",
        "F32",
        {5, 2},
        Floats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10})},
       {"model.layers.0.input_layernorm.weight", "BF16", {4}, Bytes(8, 2)}});
  auto read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->tensors.size(), 2u);
  const Tensor& w = *read->tensors[0].tensor;
  EXPECT_EQ(read->tensors[0].name, "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(&w.dtype(), dtypes::FP8E4M3Block128x128());
  EXPECT_EQ(TensorAccess::representation(w).subtensor(1).placement.ToString(),
            "((2,5),2):((0,2),1)");
  // Row 300, column 200 reaches scale (2, 1) = 6.
  const uint64_t scale_bits = Reached(w, {300, 200})[1];
  float scale;
  const uint32_t bits32 = static_cast<uint32_t>(scale_bits);
  std::memcpy(&scale, &bits32, 4);
  EXPECT_EQ(scale, 6.0f);
  EXPECT_TRUE(Slice(w, 0, 512, 576).ok());
  EXPECT_TRUE(Slice(w, 0, 128, 256).ok());
  EXPECT_TRUE(IsValueError(Slice(w, 0, 64, 192).status()));
  // The plain tensor beside it stays plain.
  EXPECT_EQ(&read->tensors[1].tensor->dtype(), dtypes::BFloat16());
}

// Scenario: a group whose members are present but inconsistent is a
// ValueError for X.weight, never plain byte Tensors; the rest still imports.
TEST(ConventionsTest, InconsistentGroupsAreValueErrorsForTheWeight) {
  struct Bad {
    std::vector<Raw> raws;
    std::string expect;
  };
  const std::vector<Bad> bads = {
      // ModelOpt NVFP4 without its weight_scale.
      {{{"x.weight", "U8", {4, 8}, Bytes(32, 1)},
        {"x.weight_scale_2", "F32", {}, Floats({1})}},
       "no member"},
      // Block scales of the wrong shape.
      {{{"x.weight", "U8", {4, 8}, Bytes(32, 1)},
        {"x.weight_scale", "F8_E4M3", {4, 2}, Bytes(8, 2)},
        {"x.weight_scale_2", "F32", {1}, Floats({1})}},
       "(...,N,K/16)"},
      // compressed-tensors with a bf16 global scale.
      {{{"x.weight_packed", "U8", {4, 8}, Bytes(32, 1)},
        {"x.weight_scale", "F8_E4M3", {4, 1}, Bytes(4, 2)},
        {"x.weight_global_scale", "BF16", {}, Bytes(2, 3)}},
       "must be F32"},
      // DeepSeek scales for 128-row blocks of the wrong count.
      {{{"x.weight", "F8_E4M3", {200, 128}, Bytes(200 * 128, 1)},
        {"x.weight_scale_inv", "F32", {1, 1}, Floats({1})}},
       "ceil(N/128)"},
      // An FP8 weight of bf16 with a scale: matches no convention.
      {{{"x.weight", "BF16", {4, 8}, Bytes(64, 1)},
        {"x.weight_scale", "F32", {}, Floats({1})}},
       "must be F8_E4M3"},
      // A per-channel scale of the wrong rows.
      {{{"x.weight", "F8_E4M3", {4, 8}, Bytes(32, 1)},
        {"x.weight_scale", "F32", {3, 1}, Floats({1, 2, 3})}},
       "per channel"},
      // MXFP8 scales for blocks of 16.
      {{{"x.weight", "F8_E4M3", {4, 64}, Bytes(256, 1)},
        {"x.weight_scale", "U8", {4, 4}, Bytes(16, 2)}},
       "(...,N,K/32)"},
  };
  for (const Bad& bad : bads) {
    std::vector<Raw> raws = bad.raws;
    raws.push_back({"other", "F32", {2}, Floats({1, 2})});
    auto read = ReadSafetensors(WriteRaw("bad.safetensors", raws));
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_EQ(read->tensors.size(), 2u);
    const SafetensorsTensor* x = Find(*read, "x.weight");
    ASSERT_NE(x, nullptr);
    EXPECT_TRUE(IsValueError(x->tensor.status())) << bad.expect;
    EXPECT_THAT(std::string(x->tensor.status().message()),
                HasSubstr(bad.expect));
    EXPECT_TRUE(Find(*read, "other")->tensor.ok());
  }
  // A lone weight, or a lone input_scale, is plain.
  auto plain = ReadSafetensors(WriteRaw(
      "plain.safetensors", {{"x.weight", "BF16", {2}, Bytes(4, 1)},
                            {"x.input_scale", "F32", {}, Floats({2})}}));
  ASSERT_TRUE(plain.ok());
  ASSERT_EQ(plain->tensors.size(), 2u);
  EXPECT_EQ(&plain->tensors[0].tensor->dtype(), dtypes::BFloat16());
}

// Scenario: per-tensor and per-channel FP8 scales, and leading expert modes.
TEST(ConventionsTest, FP8PerTensorPerChannelAndExperts) {
  auto read = ReadSafetensors(
      WriteRaw("fp8.safetensors",
               {{"a.weight", "F8_E4M3", {4, 8}, Bytes(32, 1)},
                {"a.weight_scale", "F32", {1}, Floats({2})},
                {"b.weight", "F8_E4M3", {4, 8}, Bytes(32, 2)},
                {"b.weight_scale", "F32", {4, 1}, Floats({1, 2, 3, 4})},
                {"c.weight", "F8_E4M3", {4, 8}, Bytes(32, 3)},
                {"c.weight_scale", "F32", {4}, Floats({1, 2, 3, 4})},
                {"e.weight", "U8", {2, 4, 8}, Bytes(64, 4)},
                {"e.weight_scale", "F8_E4M3", {2, 4, 1}, Bytes(8, 5)},
                {"e.weight_scale_2", "F32", {}, Floats({0.5f})}}));
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->tensors.size(), 4u);
  EXPECT_EQ(&read->tensors[0].tensor->dtype(), dtypes::FP8E4M3Tensorwise());
  EXPECT_EQ(&read->tensors[1].tensor->dtype(), dtypes::FP8E4M3Rowwise());
  EXPECT_EQ(&read->tensors[2].tensor->dtype(), dtypes::FP8E4M3Rowwise());
  ASSERT_TRUE(read->tensors[3].tensor.ok()) << read->tensors[3].tensor.status();
  EXPECT_EQ(&read->tensors[3].tensor->dtype(), dtypes::NVFP4TS());
  EXPECT_EQ(read->tensors[3].tensor->shape(), (std::vector<int64_t>{2, 4, 16}));
  // One expert is a view.
  EXPECT_TRUE(Slice(*read->tensors[3].tensor, 0, 1, 2).ok());
}

}  // namespace
}  // namespace strata
