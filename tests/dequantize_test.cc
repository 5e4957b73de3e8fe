// Dequantize (../shared/design/values.md section 1) against the independent
// reference, and its laws:
//   - every case of tests/golden/dequantize/ (random level bytes of every
//     format, NaN codes and scales, zero, subnormal and overflowing scales,
//     ragged edges, swizzled scales; written by
//     tools/peer/make_dequantize_goldens.py from dequantize_reference.py)
//     dequantizes to the reference's float32, bfloat16 and float16 bytes;
//   - for random admitted views V (slices of whole blocks at the shard
//     granule, permutes, unsqueezes, broadcasts, single experts):
//     Dequantize(V(t)) == V(Dequantize(t)) bit for bit;
//   - row-major and swizzled scales of the same values dequantize alike;
//   - Dequantize(Quantize(x)) == x where the format holds x exactly;
//   - DequantizeInto writes through any strides, refuses what values.md
//     refuses with nothing written, and Levels are views of the same bytes.
#include "ops/dequantize.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/gguf.h"
#include "core/representation.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/float_formats.h"
#include "dtype/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/ops.h"
#include "ops/quantize.h"
#include "ops/relayout.h"
#include "ops/requantize.h"
#include "proto/codec.h"
#include "util/errors.h"
#include "views/shard_plan.h"
#include "views/views.h"

namespace strata {
namespace {

const char kDir[] = "tests/golden/dequantize/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

Tensor Floats(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), v.size());
  std::memcpy(carrier->mutable_data(), v.data(), 4 * v.size());
  return *Tensor::Create(carrier, 0, *Layout::RowMajor(IntTuple::Flat(shape)));
}

int64_t Count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

std::string Bytes(const Tensor& compact) {
  const int64_t width = compact.dtype().AsSimple()->bits() / 8;
  return std::string(static_cast<const char*>(compact.carrier()->data()) +
                         compact.offset() * width,
                     compact.size() * width);
}

// Bit equality, NaNs equal to NaNs (values.md fixes no NaN payload).
::testing::AssertionResult SameValues(const std::string& got,
                                      const std::string& want, int width) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << got.size() << " bytes, want " << want.size();
  }
  for (size_t i = 0; i < got.size(); i += width) {
    uint32_t a = 0, b = 0;
    std::memcpy(&a, got.data() + i, width);
    std::memcpy(&b, want.data() + i, width);
    if (a == b) continue;
    const auto is_nan = [&](uint32_t bits) {
      if (width == 4) return (bits & 0x7FFFFFFFu) > 0x7F800000u;
      if (width == 2 && want.size() > 0) return false;
      return false;
    };
    bool nan_a, nan_b;
    if (width == 4) {
      nan_a = is_nan(a);
      nan_b = is_nan(b);
    } else {
      // bfloat16 and float16 differ in their exponent width: the caller's
      // width is 2 for both, so test both patterns' NaN-ness per format by
      // its exponent mask (0x7F80 bfloat16, 0x7C00 float16); the goldens are
      // compared per format, so a mask that fits both suffices for NaNs.
      nan_a = ((a & 0x7F80u) == 0x7F80u && (a & 0x7Fu)) ||
              ((a & 0x7C00u) == 0x7C00u && (a & 0x3FFu));
      nan_b = ((b & 0x7F80u) == 0x7F80u && (b & 0x7Fu)) ||
              ((b & 0x7C00u) == 0x7C00u && (b & 0x3FFu));
    }
    if (nan_a && nan_b) continue;
    return ::testing::AssertionFailure() << "value " << i / width << ": 0x"
                                         << std::hex << a << ", want 0x" << b;
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string name;
  const CompoundDType* format;
  std::vector<int64_t> shape;
  int64_t mode;
  ScaleLayout layout;
};

std::vector<Case> Cases() {
  std::vector<Case> out;
  std::istringstream in(ReadFile(absl::StrCat(kDir, "cases.txt")));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = absl::StrSplit(line, ' ');
    Case c;
    c.name = f[0];
    c.format = (*DTypeRegistry::Global().Lookup(f[1]))->AsCompound();
    for (absl::string_view e : absl::StrSplit(f[2], ',')) {
      int64_t v = 0;
      EXPECT_TRUE(absl::SimpleAtoi(e, &v));
      c.shape.push_back(v);
    }
    c.mode = kBlocksOfTheFormat;
    if (f[3] != "-") {
      EXPECT_TRUE(absl::SimpleAtoi(f[3], &c.mode));
      if (c.mode < 0) c.mode += static_cast<int64_t>(c.shape.size());
    }
    c.layout = f[4] == "swizzled_128x4" ? ScaleLayout::kSwizzled128x4
                                        : ScaleLayout::kRowMajor;
    out.push_back(std::move(c));
  }
  return out;
}

// The case's Tensor: quantized zeros of its shape (for the structure), each
// level's carrier then overwritten with the golden bytes.
Tensor CaseTensor(const Case& c) {
  const Tensor zeros =
      Floats(c.shape, std::vector<float>(Count(c.shape), 0.0f));
  auto q = QuantizeBlockScaled(zeros, *c.format, c.mode, c.layout);
  EXPECT_TRUE(q.ok()) << q.status();
  const Representation& rep = TensorAccess::representation(*q);
  const char* ext[] = {"codes", "scales", "tensor_scale"};
  for (int k = 0; k < rep.num_levels(); ++k) {
    const Subtensor& s = rep.subtensor(k);
    const std::string bytes = ReadFile(absl::StrCat(kDir, c.name, ".", ext[k]));
    const int64_t size = (s.carrier->size() * s.storage_dtype->bits() + 7) / 8;
    EXPECT_EQ(static_cast<int64_t>(bytes.size()), size) << ext[k];
    std::memcpy(s.carrier->mutable_data(), bytes.data(),
                std::min<int64_t>(size, bytes.size()));
  }
  return *q;
}

// Scenario: every format, every special value, every scale layout.
TEST(DequantizeTest, EveryGoldenCaseGivesTheReferenceBytes) {
  const std::vector<Case> cases = Cases();
  ASSERT_GE(cases.size(), 20u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor t = CaseTensor(c);
    struct Out {
      const SimpleDType* dtype;
      const char* ext;
      int width;
    };
    for (const Out o :
         {Out{dtypes::Float32(), "f32", 4}, Out{dtypes::BFloat16(), "bf16", 2},
          Out{dtypes::Float16(), "f16", 2}}) {
      SCOPED_TRACE(o.ext);
      auto d = Dequantize(t, *o.dtype);
      ASSERT_TRUE(d.ok()) << d.status();
      EXPECT_EQ(d->shape(), c.shape);
      EXPECT_EQ(&d->dtype(), o.dtype);
      EXPECT_TRUE(SameValues(Bytes(*d),
                             ReadFile(absl::StrCat(kDir, c.name, ".", o.ext)),
                             o.width));
    }
  }
}

// The views a law test applies: each admitted, or skipped where refused.
std::vector<std::pair<std::string, absl::StatusOr<Tensor>>> SomeViews(
    const Tensor& t, std::mt19937& rng) {
  std::vector<std::pair<std::string, absl::StatusOr<Tensor>>> out;
  const std::vector<int64_t> shape = t.shape();
  const int64_t rank = shape.size();
  std::vector<int64_t> reverse(rank);
  for (int64_t j = 0; j < rank; ++j) reverse[j] = rank - 1 - j;
  out.push_back({"permute", Permute(t, reverse)});
  out.push_back({"unsqueeze", Unsqueeze(t, rng() % (rank + 1))});
  std::vector<int64_t> broadcast = shape;
  broadcast.insert(broadcast.begin(), 3);
  out.push_back({"broadcast", BroadcastTo(t, broadcast)});
  for (int64_t dim = 0; dim < rank; ++dim) {
    absl::StatusOr<int64_t> granule = ShardGranule(t, dim);
    if (!granule.ok() || shape[dim] == 0) continue;
    const int64_t blocks = (shape[dim] + *granule - 1) / *granule;
    const int64_t a = rng() % blocks, b = a + 1 + rng() % (blocks - a);
    out.push_back(
        {absl::StrCat("slice ", dim, " [", a * *granule, ",",
                      std::min(b * *granule, shape[dim]), ")"),
         Slice(t, dim, a * *granule, std::min(b * *granule, shape[dim]))});
    if (rank >= 3 && dim == 0) {  // One expert of a batched Tensor.
      out.push_back({"expert", Squeeze(*Slice(t, 0, 1, 2), 0)});
    }
    absl::StatusOr<ShardPlan> plan = PlanShards(t, dim, 2);
    if (plan.ok()) {
      for (size_t p = 0; p < plan->parts.size(); ++p) {
        out.push_back(
            {absl::StrCat("part ", p, " of dim ", dim), plan->parts[p].view});
      }
    }
  }
  // A view of a view.
  if (rank >= 2) {
    auto permuted = Permute(t, reverse);
    if (permuted.ok()) {
      out.push_back({"permute+unsqueeze", Unsqueeze(*permuted, 0)});
    }
  }
  return out;
}

// Scenario: the values of a view are the view of the values.
TEST(DequantizeTest, DequantizeOfAViewIsTheViewOfTheValues) {
  std::mt19937 rng(35);
  int checked = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const Tensor t = CaseTensor(c);
    const Tensor values = *Dequantize(t, *dtypes::Float32());
    for (auto& [what, view] : SomeViews(t, rng)) {
      SCOPED_TRACE(what);
      if (!view.ok()) continue;  // A view the format refuses.
      // The same view applied to the one-level values, by the same call.
      absl::StatusOr<Tensor> same = absl::UnknownError("no view");
      const std::vector<int64_t> shape = t.shape();
      const int64_t rank = shape.size();
      std::vector<int64_t> reverse(rank);
      for (int64_t j = 0; j < rank; ++j) reverse[j] = rank - 1 - j;
      if (what == "permute") {
        same = Permute(values, reverse);
      } else if (what == "broadcast") {
        std::vector<int64_t> b = shape;
        b.insert(b.begin(), 3);
        same = BroadcastTo(values, b);
      } else if (what == "expert") {
        same = Squeeze(*Slice(values, 0, 1, 2), 0);
      } else if (what == "permute+unsqueeze") {
        same = Unsqueeze(*Permute(values, reverse), 0);
      } else if (absl::StartsWith(what, "unsqueeze")) {
        // The inserted dim is where the view's extent-1 mode stands.
        const std::vector<int64_t> vs = view->shape();
        for (int64_t d = 0; d <= rank; ++d) {
          std::vector<int64_t> s = shape;
          s.insert(s.begin() + d, 1);
          if (s == vs) {
            same = Unsqueeze(values, d);
            break;
          }
        }
      } else {
        // "slice D [A,B)" or "part P of dim D": the view's range along D is
        // where its layout's offset lands; compute it from the shapes.
        int64_t dim = 0, start = 0, stop = 0;
        if (absl::StartsWith(what, "slice")) {
          std::vector<std::string> f =
              absl::StrSplit(what, absl::ByAnyChar(" [,)"), absl::SkipEmpty());
          ASSERT_TRUE(absl::SimpleAtoi(f[1], &dim));
          ASSERT_TRUE(absl::SimpleAtoi(f[2], &start));
          ASSERT_TRUE(absl::SimpleAtoi(f[3], &stop));
        } else {
          std::vector<std::string> f = absl::StrSplit(what, ' ');
          int64_t part = 0;
          ASSERT_TRUE(absl::SimpleAtoi(f[1], &part));
          ASSERT_TRUE(absl::SimpleAtoi(f[4], &dim));
          const ShardPlan plan = *PlanShards(t, dim, 2);
          start = plan.parts[part].begin;
          stop = plan.parts[part].end;
        }
        same = Slice(values, dim, start, stop);
      }
      ASSERT_TRUE(same.ok()) << same.status();
      auto got = Dequantize(*view, *dtypes::Float32());
      ASSERT_TRUE(got.ok()) << got.status();
      const Tensor want = *Clone(*same);
      ASSERT_EQ(got->shape(), want.shape());
      EXPECT_TRUE(SameValues(Bytes(*got), Bytes(want), 4));
      ++checked;
    }
  }
  EXPECT_GE(checked, 150);
}

// Values every format holds exactly: element values of the format times 1,
// with the largest element (448 or 6) at each block's first coordinate so the
// scale is 1 (or 2^0).
TEST(DequantizeTest, DequantizeOfQuantizeIsExactWhereTheFormatHoldsTheValue) {
  std::mt19937 rng(7);
  struct Exact {
    const CompoundDType* format;
    std::vector<int64_t> shape;
    int64_t mode;
    ScaleLayout layout;
  };
  const std::vector<Exact> cases = {
      {dtypes::FP8E4M3Tensorwise(),
       {5, 70},
       kBlocksOfTheFormat,
       ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Rowwise(),
       {5, 70},
       kBlocksOfTheFormat,
       ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Block1x128(), {3, 300}, 1, ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Block128x128(),
       {130, 260},
       kBlocksOfTheFormat,
       ScaleLayout::kRowMajor},
      {dtypes::MXFP8E4M3(), {130, 64}, 1, ScaleLayout::kRowMajor},
      {dtypes::MXFP8E4M3(), {130, 64}, 1, ScaleLayout::kSwizzled128x4},
      {dtypes::MXFP4(), {4, 96}, 1, ScaleLayout::kRowMajor},
      {dtypes::NVFP4(), {128, 32}, 1, ScaleLayout::kSwizzled128x4},
  };
  for (const Exact& c : cases) {
    SCOPED_TRACE(c.format->name());
    const bool fp4 = c.format == dtypes::MXFP4() || c.format == dtypes::NVFP4();
    const MiniFloat& element =
        fp4 ? Float4E2M1FNFormat() : Float8E4M3FNFormat();
    const float largest = fp4 ? 6.0f : 448.0f;
    const int64_t n = Count(c.shape);
    const int64_t cols = c.shape.back();
    const BlockScaling& scaling = FindBlockScaleRule(*c.format)->scaling();
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) {
      uint32_t code = rng() % (fp4 ? 16 : 256);
      if (!fp4 && (code & 0x7F) == 0x7F) code = 0;  // No NaN inputs.
      float v = static_cast<float>(element.Decode(code));
      if (std::fabs(v) > largest) v = largest;
      const int64_t r = i / cols, col = i % cols;
      bool first = false;
      if (c.format == dtypes::FP8E4M3Tensorwise()) {
        first = i == 0;
      } else if (c.format == dtypes::FP8E4M3Rowwise()) {
        first = col == 0;
      } else if (c.format == dtypes::FP8E4M3Block128x128()) {
        first = r % 128 == 0 && col % 128 == 0;
      } else {
        first = col % scaling.blocks[0] == 0;
      }
      x[i] = first ? largest : v;
    }
    auto q =
        QuantizeBlockScaled(Floats(c.shape, x), *c.format, c.mode, c.layout);
    ASSERT_TRUE(q.ok()) << q.status();
    auto d = Dequantize(*q, *dtypes::Float32());
    ASSERT_TRUE(d.ok()) << d.status();
    std::string want(reinterpret_cast<const char*>(x.data()), 4 * n);
    EXPECT_TRUE(SameValues(Bytes(*d), want, 4));
  }
}

// Scenario: row-major and swizzled scales of the same values are the same
// values.
TEST(DequantizeTest, RowMajorAndSwizzledScalesDequantizeAlike) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (const CompoundDType* format :
       {dtypes::MXFP8E4M3(), dtypes::MXFP4(), dtypes::NVFP4(),
        dtypes::NVFP4TS(), dtypes::NVFP4TSRecip()}) {
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{200, 64}, std::vector<int64_t>{2, 33, 96}}) {
      SCOPED_TRACE(absl::StrCat(format->name(), " ", shape.size()));
      std::vector<float> x(Count(shape));
      for (float& v : x) v = normal(rng);
      const Tensor src = Floats(shape, x);
      const int64_t mode = shape.size() - 1;
      auto rows =
          QuantizeBlockScaled(src, *format, mode, ScaleLayout::kRowMajor);
      auto tiles =
          QuantizeBlockScaled(src, *format, mode, ScaleLayout::kSwizzled128x4);
      ASSERT_TRUE(rows.ok() && tiles.ok());
      for (const SimpleDType* to :
           {dtypes::Float32(), dtypes::BFloat16(), dtypes::Float16()}) {
        EXPECT_EQ(Bytes(*Dequantize(*rows, *to)),
                  Bytes(*Dequantize(*tiles, *to)));
      }
    }
  }
}

TEST(DequantizeTest, DequantizeIntoWritesThroughAnyStridesOrNothing) {
  const Case c = Cases()[0];
  const Tensor t = CaseTensor(c);
  const Tensor want = *Dequantize(t, *dtypes::BFloat16());
  // A transposed slice of a larger buffer.
  const std::vector<int64_t> shape = t.shape();
  auto big = *HostCarrier::Create(*dtypes::BFloat16(), 4 * Count(shape) + 8);
  std::memset(big->mutable_data(), 0x55, 2 * big->size());
  const Tensor buffer = *Tensor::Create(
      big, 8, *Layout::RowMajor(IntTuple::Flat({shape[1], 4 * shape[0]})));
  const Tensor out = *Permute(*Slice(buffer, 1, 0, 4 * shape[0], 4),
                              std::vector<int64_t>{1, 0});
  ASSERT_EQ(out.shape(), shape);
  const uint64_t version = big->version();
  ASSERT_TRUE(DequantizeInto(out, t).ok());
  EXPECT_EQ(big->version(), version + 1);
  EXPECT_EQ(Bytes(*Clone(out)), Bytes(want));
  // Untouched between the strided values.
  EXPECT_EQ(static_cast<const uint8_t*>(big->data())[0], 0x55);
  EXPECT_EQ(static_cast<const uint8_t*>(big->data())[2 * 8 + 2], 0x55);

  const std::string before(static_cast<const char*>(big->data()),
                           2 * big->size());
  // Wrong shape, wrong dtype, a compound out, a multi-level out: no effect.
  auto wrong_shape = *Slice(out, 0, 0, 1);
  EXPECT_TRUE(IsValueError(DequantizeInto(wrong_shape, t)));
  auto ints = *HostCarrier::Create(*dtypes::Int32(), Count(shape));
  EXPECT_TRUE(IsTypeError(DequantizeInto(
      *Tensor::Create(ints, 0, *Layout::RowMajor(IntTuple::Flat(shape))), t)));
  EXPECT_TRUE(IsOneSubtensorRequired(DequantizeInto(t, t)));
  EXPECT_EQ(std::string(static_cast<const char*>(big->data()), 2 * big->size()),
            before);
  EXPECT_EQ(big->version(), version + 1);
  // `to` outside the three.
  EXPECT_TRUE(IsTypeError(Dequantize(t, *dtypes::Int8()).status()));
  EXPECT_TRUE(IsTypeError(Dequantize(t, *dtypes::Float64()).status()));
}

TEST(DequantizeTest, OneLevelTensorsCastAndLevelsAreViewsOfTheSameBytes) {
  const Tensor plain = Floats({2, 3}, {1, 2, 3, 4, 5, 6.5f});
  auto bf = Dequantize(plain, *dtypes::BFloat16());
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ(Bytes(*bf), Bytes(*Cast(plain, *dtypes::BFloat16())));

  const Tensor t = CaseTensor(Cases()[0]);
  auto levels = Levels(t);
  ASSERT_TRUE(levels.ok()) << levels.status();
  const Representation& rep = TensorAccess::representation(t);
  ASSERT_EQ(levels->size(), static_cast<size_t>(rep.num_levels()));
  for (int k = 0; k < rep.num_levels(); ++k) {
    const Tensor& level = (*levels)[k];
    EXPECT_EQ(level.num_subtensors(), 1);
    EXPECT_EQ(level.carrier(), rep.subtensor(k).carrier);
    EXPECT_EQ(level.offset(), rep.subtensor(k).offset);
    EXPECT_EQ(level.layout(), rep.subtensor(k).placement);
    EXPECT_EQ(&level.dtype(), rep.subtensor(k).storage_dtype);
  }
}

// LevelBytes is a view over the level's storage: it pins it, so a Release()
// of the level's carrier frees nothing the view reads (api_fuzzer crash
// 15d7a7c0: a Clone of the bytes after the release read freed memory).
TEST(DequantizeTest, LevelBytesPinsTheStorageAgainstARelease) {
  const Tensor t = CaseTensor(Cases()[0]);
  const Tensor codes = (*Levels(t))[0];
  auto bytes = LevelBytes(codes);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const std::string before = Bytes(*Clone(*bytes));
  codes.carrier()->Release();
  EXPECT_EQ(codes.carrier()->data(), nullptr);
  EXPECT_EQ(Bytes(*Clone(*bytes)), before);  // Still readable, unchanged.
  EXPECT_TRUE(IsValueError(LevelBytes(codes).status()));
  EXPECT_TRUE(IsValueError(LevelBytes(t).status()));
}

// values.md section 0: a multi-subtensor Tensor of another compound dtype is
// refused by Dequantize and Levels with the one-subtensor-required error.
TEST(DequantizeTest, OtherCompoundDTypesAreOneSubtensorRequired) {
  auto pair = CompoundDType::Create("dequantize_test_pair",
                                    {dtypes::Float32(), dtypes::Float32()});
  ASSERT_TRUE(pair.ok()) << pair.status();
  auto a = *HostCarrier::Create(*dtypes::Float32(), 4);
  auto b = *HostCarrier::Create(*dtypes::Float32(), 4);
  std::vector<SubtensorCandidate> subtensors;
  subtensors.push_back(
      {dtypes::Float32(), a, 0, *Layout::RowMajor(IntTuple::Flat({4}))});
  subtensors.push_back(
      {dtypes::Float32(), b, 0, *Layout::RowMajor(IntTuple::Flat({4}))});
  std::vector<absl::StatusOr<Layout>> adjacent;
  adjacent.push_back(*Layout::RowMajor(IntTuple::Flat({4})));
  auto rep =
      Representation::Create(*pair, std::move(subtensors), std::move(adjacent));
  ASSERT_TRUE(rep.ok()) << rep.status();
  const Tensor t = MakeTensor(*std::move(rep));
  EXPECT_TRUE(
      IsOneSubtensorRequired(Dequantize(t, *dtypes::Float32()).status()));
  EXPECT_TRUE(IsOneSubtensorRequired(Levels(t).status()));
  auto out = *HostCarrier::Create(*dtypes::Float32(), 4);
  EXPECT_TRUE(IsOneSubtensorRequired(DequantizeInto(
      *Tensor::Create(out, 0, *Layout::RowMajor(IntTuple::Flat({4}))), t)));
  EXPECT_EQ(out->version(), 0u);
}

// values.md section 2: relayout moves the scales into the other layout with
// the codes shared; the moved scales are the bytes the quantizer writes in
// that layout, and the values do not change. The larger shapes take the
// tiled move where the scales are one byte.
TEST(RelayoutTest, ScalesMoveToTheQuantizersOtherLayoutCodesShared) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (const CompoundDType* format :
       {dtypes::MXFP8E4M3(), dtypes::MXFP4(), dtypes::NVFP4(),
        dtypes::NVFP4TS(), dtypes::NVFP4TSRecip()}) {
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{200, 64}, std::vector<int64_t>{2, 33, 96},
          std::vector<int64_t>{64, 130},
          // Whole tiles and edges (NOTE [ Moving scales by tiles ]): 300
          // grid rows by 33 grid columns, batched; and blocked along dim 0,
          // 260 grid rows (the last dim) by 17 grid columns.
          std::vector<int64_t>{2, 300, 1056}, std::vector<int64_t>{544, 260}}) {
      SCOPED_TRACE(
          absl::StrCat(format->name(), " ", absl::StrJoin(shape, "x")));
      std::vector<float> x(Count(shape));
      for (float& v : x) v = normal(rng);
      const Tensor src = Floats(shape, x);
      const int64_t mode = shape.back() % 32 == 0 ? shape.size() - 1 : 0;
      auto rows =
          QuantizeBlockScaled(src, *format, mode, ScaleLayout::kRowMajor);
      auto tiles =
          QuantizeBlockScaled(src, *format, mode, ScaleLayout::kSwizzled128x4);
      if (!tiles.ok()) {  // Blocks not along one of the last two dims.
        EXPECT_TRUE(IsValueError(
            Relayout(*rows, ScaleLayout::kSwizzled128x4).status()));
        continue;
      }
      ASSERT_TRUE(rows.ok()) << rows.status();
      for (const auto& [from, into, layout] :
           {std::tuple{*rows, *tiles, ScaleLayout::kSwizzled128x4},
            std::tuple{*tiles, *rows, ScaleLayout::kRowMajor}}) {
        auto moved = Relayout(from, layout);
        ASSERT_TRUE(moved.ok()) << moved.status();
        const Representation& m = TensorAccess::representation(*moved);
        const Representation& f = TensorAccess::representation(from);
        const Representation& w = TensorAccess::representation(into);
        EXPECT_EQ(m.subtensor(0).carrier, f.subtensor(0).carrier);  // Shared.
        EXPECT_EQ(m.subtensor(0).carrier->version(), 0u);
        const int64_t bytes = m.subtensor(1).carrier->size();
        ASSERT_EQ(bytes, w.subtensor(1).carrier->size());
        EXPECT_EQ(0, std::memcmp(m.subtensor(1).carrier->data(),
                                 w.subtensor(1).carrier->data(), bytes));
        EXPECT_EQ(Bytes(*Dequantize(*moved, *dtypes::Float32())),
                  Bytes(*Dequantize(from, *dtypes::Float32())));
      }
    }
  }
}

// Every golden case (NaN and odd scales included) relayouts to row-major
// scales with its values unchanged, and so do views of them.
TEST(RelayoutTest, EveryFormatAndViewKeepsItsValues) {
  std::mt19937 rng(9);
  int checked = 0, refused = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const Tensor t = CaseTensor(c);
    for (auto& [what, view] : SomeViews(t, rng)) {
      SCOPED_TRACE(what);
      if (!view.ok() || what == "broadcast") continue;
      for (const ScaleLayout layout :
           {ScaleLayout::kRowMajor, ScaleLayout::kSwizzled128x4}) {
        auto moved = Relayout(*view, layout);
        if (!moved.ok()) {
          // Swizzled scales apply to the 1-D float8-scaled formats only; a
          // slice of a ragged Tensor keeps its grid (NOTE [ Keeping a ragged
          // slice's grid ]), so row-major is never refused.
          EXPECT_TRUE(IsValueError(moved.status())) << moved.status();
          if (layout == ScaleLayout::kRowMajor) {
            ADD_FAILURE() << what << ": " << moved.status();
            ++refused;
          }
          continue;
        }
        EXPECT_TRUE(SameValues(Bytes(*Dequantize(*moved, *dtypes::Float32())),
                               Bytes(*Dequantize(*view, *dtypes::Float32())),
                               4));
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 150);
  EXPECT_EQ(refused, 0);
}

// NOTE [ Keeping a ragged slice's grid ]: rows [128, 384) of a 576-row
// 128x128 weight (L_0 factored (64,9)) to row-major scales: the codes
// shared, the scales a copy on the whole weight's grid, the values the
// slice's.
TEST(RelayoutTest, ARaggedSliceKeepsItsGrid) {
  std::vector<float> x(576 * 300);
  std::mt19937 rng(12);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float& v : x) v = normal(rng);
  auto q =
      QuantizeBlockScaled(Floats({576, 300}, x), *dtypes::FP8E4M3Block128x128(),
                          kBlocksOfTheFormat, ScaleLayout::kRowMajor);
  ASSERT_TRUE(q.ok()) << q.status();
  auto part = Slice(*q, 0, 128, 384);
  ASSERT_TRUE(part.ok()) << part.status();
  auto moved = Relayout(*part, ScaleLayout::kRowMajor);
  ASSERT_TRUE(moved.ok()) << moved.status();
  const Representation& from = TensorAccess::representation(*part);
  const Representation& to = TensorAccess::representation(*moved);
  EXPECT_EQ(to.subtensor(0).carrier, from.subtensor(0).carrier);
  EXPECT_NE(to.subtensor(1).carrier, from.subtensor(1).carrier);
  EXPECT_EQ(Bytes(*Dequantize(*moved, *dtypes::Float32())),
            Bytes(*Dequantize(*part, *dtypes::Float32())));
  EXPECT_TRUE(
      IsValueError(Relayout(*part, ScaleLayout::kSwizzled128x4).status()));
}

// float32 to bfloat16, nearest even (NaN quieted, sign kept), from the
// formats' definitions: the upper half plus one where the lower half is
// above half an ulp, or at half with an odd upper half.
uint16_t NearestBFloat16(uint32_t bits) {
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  }
  const uint32_t upper = bits >> 16, lower = bits & 0xFFFF;
  const bool up = lower > 0x8000 || (lower == 0x8000 && (upper & 1) != 0);
  return static_cast<uint16_t>(upper + (up ? 1 : 0));
}

// GGUF's blocks as imported (NOTE [ GGUF blocks as strided placements ] in
// checkpoint/gguf.cc): q8_0's codes in blocks with each block's scale between
// them, q4_0's and mxfp4's also split in halves (element j and j + 16 of a
// block share byte j). Dequantize takes the SIMD rows with each run's codes
// from its own start; the values are gguf-py's (the goldens' .f32, made by
// tools/peer/make_gguf_goldens.py), as float32 and rounded to bfloat16, for
// the whole Tensor and for its rows from the second on.
TEST(DequantizeTest, GgufBlocksGiveTheReferenceValues) {
  int checked = 0;
  for (const char* file : {"mixed_v3.gguf", "v2_align64.gguf"}) {
    const std::string path = absl::StrCat("tests/golden/gguf/", file);
    auto read = ReadGguf(path);
    ASSERT_TRUE(read.ok()) << read.status();
    for (const GgufTensor& g : read->tensors) {
      if (!g.tensor.ok() || g.tensor->num_subtensors() < 2) continue;
      SCOPED_TRACE(absl::StrCat(file, " ", g.name));
      const std::string want =
          ReadFile(absl::StrCat(path, ".", g.name, ".f32"));
      std::string want_bf16(want.size() / 2, '\0');
      for (size_t i = 0; i < want.size() / 4; ++i) {
        uint32_t bits;
        std::memcpy(&bits, want.data() + 4 * i, 4);
        const uint16_t b = NearestBFloat16(bits);
        std::memcpy(&want_bf16[2 * i], &b, 2);
      }
      EXPECT_TRUE(SameValues(Bytes(*Dequantize(*g.tensor, *dtypes::Float32())),
                             want, 4));
      EXPECT_TRUE(SameValues(Bytes(*Dequantize(*g.tensor, *dtypes::BFloat16())),
                             want_bf16, 2));
      const int64_t rows = g.tensor->shape()[0];
      if (rows >= 2) {
        const Tensor tail = *Slice(*g.tensor, 0, 1, rows);
        const size_t skip = want.size() / rows;  // One row's float32 bytes.
        EXPECT_TRUE(SameValues(Bytes(*Dequantize(tail, *dtypes::Float32())),
                               want.substr(skip), 4));
        EXPECT_TRUE(SameValues(Bytes(*Dequantize(tail, *dtypes::BFloat16())),
                               want_bf16.substr(skip / 2), 2));
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 6);
}

// A mapped GGUF q8_0 Tensor (array-of-structs scales): row-major scales, the
// values unchanged; this version copies the codes of a non-host carrier.
// values.md section 2: a mapped weight stays mapped. Level 0 is the source's
// own mapped carrier (no code byte copied); the new scales are a mapped
// carrier over an anonymous mapping, whose text dump carries their bytes and
// replays into the same values (NOTE [ Anonymous mapped carriers ]).
TEST(RelayoutTest, AMappedGgufTensorStaysMapped) {
  auto read = ReadGguf("tests/golden/gguf/mixed_v3.gguf");
  ASSERT_TRUE(read.ok()) << read.status();
  int checked = 0;
  for (const GgufTensor& g : read->tensors) {
    if (!g.tensor.ok() || g.tensor->num_subtensors() < 2) continue;
    SCOPED_TRACE(g.name);
    auto moved = Relayout(*g.tensor, ScaleLayout::kRowMajor);
    ASSERT_TRUE(moved.ok()) << moved.status();
    const Representation& from = TensorAccess::representation(*g.tensor);
    const Representation& to = TensorAccess::representation(*moved);
    EXPECT_EQ(to.subtensor(0).carrier, from.subtensor(0).carrier);
    EXPECT_EQ(to.subtensor(0).offset, from.subtensor(0).offset);
    const auto* scales =
        dynamic_cast<const MappedCarrier*>(to.subtensor(1).carrier.get());
    ASSERT_NE(scales, nullptr);
    EXPECT_TRUE(scales->anonymous());
    EXPECT_THAT(scales->Describe(), ::testing::HasSubstr("anonymous mapping"));
    const std::string values =
        Bytes(*Dequantize(*g.tensor, *dtypes::Float32()));
    EXPECT_TRUE(
        SameValues(Bytes(*Dequantize(*moved, *dtypes::Float32())), values, 4));
    // The dump names the file for level 0 and carries the scales' bytes.
    const proto::RepresentationProto dumped = ToProto(*moved);
    ASSERT_EQ(dumped.carriers_size(), 2);
    EXPECT_FALSE(dumped.carriers(0).file().empty());
    EXPECT_TRUE(dumped.carriers(0).data().empty());
    EXPECT_EQ(dumped.carriers(1).carrier_class(), "mapped");
    EXPECT_TRUE(dumped.carriers(1).file().empty());
    EXPECT_EQ(dumped.carriers(1).data().size(), scales->size_in_bytes());
    auto text = ParseText(ToText(dumped));
    ASSERT_TRUE(text.ok()) << text.status();
    auto replayed = Replay(*text);
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    EXPECT_EQ(replayed->carrier()->class_name(), "mapped");
    EXPECT_TRUE(SameValues(Bytes(*Dequantize(*replayed, *dtypes::Float32())),
                           values, 4));
    EXPECT_EQ(ToText(ToProto(*replayed)), ToText(dumped));
    ++checked;
  }
  EXPECT_GE(checked, 2);
  EXPECT_TRUE(IsOneSubtensorRequired(
      Relayout(Floats({2}, {1, 2}), ScaleLayout::kRowMajor).status()));
}

// A DLPack-style import ("external" carriers) gets external scales beside its
// own codes; only a class Strata cannot make anew copies level 0.
TEST(RelayoutTest, AnExternalTensorKeepsItsCodesAndClass) {
  std::vector<float> x(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * i - 20.0f;
  auto q = QuantizeBlockScaled(Floats({4, 64}, x), *dtypes::MXFP8E4M3(), 1,
                               ScaleLayout::kRowMajor);
  ASSERT_TRUE(q.ok()) << q.status();
  const Representation& rep = TensorAccess::representation(*q);
  std::vector<SubtensorCandidate> external;
  for (int level = 0; level < rep.num_levels(); ++level) {
    const Subtensor& s = rep.subtensor(level);
    auto carrier = ExternalCarrier::Create(
        s.carrier->dtype(), s.carrier->size(),
        const_cast<void*>(s.carrier->data()), [keep = s.carrier]() {});
    ASSERT_TRUE(carrier.ok()) << carrier.status();
    external.push_back(
        {s.storage_dtype, *std::move(carrier), s.offset, s.placement});
  }
  auto imported = Representation::Create(
      q->dtype().AsCompound(), std::move(external),
      {absl::StatusOr<Layout>(rep.adjacent_layouts()[0])});
  ASSERT_TRUE(imported.ok()) << imported.status();
  const Tensor source = MakeTensor(*std::move(imported));
  auto moved = Relayout(source, ScaleLayout::kSwizzled128x4);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(TensorAccess::representation(*moved).subtensor(0).carrier,
            TensorAccess::representation(source).subtensor(0).carrier);
  EXPECT_EQ(moved->carrier()->class_name(), "external");
  EXPECT_EQ(
      TensorAccess::representation(*moved).subtensor(1).carrier->class_name(),
      "external");
  EXPECT_TRUE(SameValues(Bytes(*Dequantize(*moved, *dtypes::Float32())),
                         Bytes(*Dequantize(source, *dtypes::Float32())), 4));
}

// values.md section 2: fp8_e4m3_block128x128_ue8m0 quantizes as DeepGEMM's
// per_block_cast_to_fp8(use_ue8m0=True), bit for bit against the reference
// (amax below 1e-4, zero blocks, ragged edges, 2^-20..2^20 magnitudes).
TEST(RequantizeTest, Ue8m0QuantizationIsTheReferences) {
  std::istringstream in(ReadFile(absl::StrCat(kDir, "ue8m0_cases.txt")));
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = absl::StrSplit(line, ' ');
    SCOPED_TRACE(f[0]);
    std::vector<int64_t> shape;
    for (absl::string_view e : absl::StrSplit(f[1], ',')) {
      int64_t v = 0;
      ASSERT_TRUE(absl::SimpleAtoi(e, &v));
      shape.push_back(v);
    }
    const std::string input = ReadFile(absl::StrCat(kDir, f[0], ".input"));
    std::vector<float> x(input.size() / 4);
    std::memcpy(x.data(), input.data(), input.size());
    auto q = QuantizeBlockScaled(Floats(shape, x),
                                 *dtypes::FP8E4M3Block128x128UE8M0(),
                                 kBlocksOfTheFormat);
    ASSERT_TRUE(q.ok()) << q.status();
    const Representation& rep = TensorAccess::representation(*q);
    for (int k = 0; k < 2; ++k) {
      const Subtensor& level = rep.subtensor(k);
      EXPECT_EQ(
          std::string(static_cast<const char*>(level.carrier->data()),
                      level.carrier->size()),
          ReadFile(absl::StrCat(kDir, f[0], k == 0 ? ".codes" : ".scales")))
          << "level " << k;
    }
    ++cases;
  }
  EXPECT_EQ(cases, 3);
}

// Requantize is QuantizeBlockScaled of the dequantized values, bit for bit,
// level by level and layout by layout, whatever the chunks: every golden
// source (and a view of it) into every target the source's shape admits,
// with chunks of a few rows.
TEST(RequantizeTest, ChunksGiveTheBytesOfOneQuantization) {
  struct Target {
    const CompoundDType* format;
    bool chosen;  // Blocked along the last dim (or dim 0).
    ScaleLayout layout;
    bool along_dim_0 = false;
  };
  const std::vector<Target> targets = {
      {dtypes::MXFP8E4M3(), true, ScaleLayout::kRowMajor},
      {dtypes::MXFP8E4M3(), true, ScaleLayout::kSwizzled128x4},
      {dtypes::MXFP4(), true, ScaleLayout::kRowMajor},
      {dtypes::NVFP4(), true, ScaleLayout::kSwizzled128x4},
      {dtypes::NVFP4TS(), true, ScaleLayout::kRowMajor},
      {dtypes::NVFP4TSRecip(), true, ScaleLayout::kSwizzled128x4},
      {dtypes::FP8E4M3Tensorwise(), false, ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Rowwise(), false, ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Block1x128(), true, ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Block128x128(), false, ScaleLayout::kRowMajor},
      {dtypes::FP8E4M3Block128x128UE8M0(), false, ScaleLayout::kRowMajor},
      {dtypes::Q8_0(), false, ScaleLayout::kRowMajor},
      {dtypes::Q4_0(), false, ScaleLayout::kRowMajor},
      // Tiles of blocks along dim 0: chunks with row-major scales, then the
      // tiles.
      {dtypes::MXFP8E4M3(), true, ScaleLayout::kSwizzled128x4, true},
      {dtypes::NVFP4TS(), true, ScaleLayout::kSwizzled128x4, true},
  };
  int compared = 0, along_dim_0 = 0;
  for (const Case& c : Cases()) {
    const Tensor t = CaseTensor(c);
    std::vector<std::pair<std::string, Tensor>> sources = {{"whole", t}};
    if (auto part = PlanShards(t, 0, 2);
        part.ok() && part->parts[1].view.ok()) {
      sources.push_back({"part 1", *part->parts[1].view});
    }
    for (const auto& [what, source] : sources) {
      const Tensor values = *Dequantize(source, *dtypes::Float32());
      for (const Target& target : targets) {
        SCOPED_TRACE(absl::StrCat(c.name, " ", what, " -> ",
                                  target.format->name(), " ",
                                  ScaleLayoutName(target.layout),
                                  target.along_dim_0 ? " along dim 0" : ""));
        QuantizeOptions options;
        options.blocked_dim = !target.chosen ? kBlocksOfTheFormat
                              : target.along_dim_0
                                  ? 0
                                  : static_cast<int64_t>(c.shape.size()) - 1;
        options.scale_layout = target.layout;
        options.max_chunk_bytes = 3 * 4 * (values.size() / values.shape()[0]);
        auto want = QuantizeBlockScaled(values, *target.format,
                                        options.blocked_dim, target.layout);
        auto got = Requantize(source, *target.format, options);
        if (!want.ok()) {
          EXPECT_FALSE(got.ok()) << want.status();
          continue;
        }
        ASSERT_TRUE(got.ok()) << got.status();
        const Representation& w = TensorAccess::representation(*want);
        const Representation& g = TensorAccess::representation(*got);
        if (target.format == &source.dtype() &&
            (!target.chosen ||
             (*ScaleBlocks(source))[options.blocked_dim] ==
                 FindBlockScaleRule(*target.format)->block_size())) {
          // The same format with its blocks in place is a relayout: the
          // values are the source's.
          EXPECT_EQ(Bytes(*Dequantize(*got, *dtypes::Float32())),
                    Bytes(values));
          continue;
        }
        ASSERT_EQ(g.num_levels(), w.num_levels());
        for (int k = 0; k < w.num_levels(); ++k) {
          SCOPED_TRACE(absl::StrCat("level ", k));
          EXPECT_EQ(g.subtensor(k).placement.ToString(),
                    w.subtensor(k).placement.ToString());
          const auto bytes = [](const Subtensor& s) {
            return std::string(
                static_cast<const char*>(s.carrier->data()),
                (s.carrier->size() * s.storage_dtype->bits() + 7) / 8);
          };
          EXPECT_EQ(bytes(g.subtensor(k)), bytes(w.subtensor(k)));
          if (k > 0) {
            EXPECT_EQ(g.adjacent_layouts()[k - 1].ToString(),
                      w.adjacent_layouts()[k - 1].ToString());
          }
        }
        ++compared;
        along_dim_0 += target.along_dim_0 ? 1 : 0;
      }
    }
  }
  EXPECT_GE(compared, 150);
  EXPECT_GE(along_dim_0, 4);
}

// NOTE [ Chunks along another dim ]: user formats whose blocks span all of
// dim 0 are requantized in chunks along the first dim of finite blocks, byte
// for byte one quantization of the values (layouts included), through views
// too.
TEST(RequantizeTest, BlocksSpanningDim0AreChunkedAlongAnotherDim) {
  struct Made {
    std::string name;
    const SimpleDType* element;
    const SimpleDType* scale;
    BlockScaling scaling;
    std::vector<int64_t> shape;
  };
  const std::vector<Made> made = {
      {"test_fp8_columns_32",
       dtypes::Float8E4M3FN(),
       dtypes::Float32(),
       BlockScaling{{kWholeMode, 32}, 1, false, false},
       {40, 96}},
      {"test_fp8_columns_100_ragged",
       dtypes::Float8E4M3FN(),
       dtypes::Float32(),
       BlockScaling{{kWholeMode, 100}, 1, true, false},
       {9, 260}},
      {"test_fp8_whole_whole_16",
       dtypes::Float8E4M3FN(),
       dtypes::Float32(),
       BlockScaling{{16}, kWholeMode, false, false},
       {3, 5, 64}},

  };
  std::mt19937 rng(41);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  int compared = 0;
  for (const Made& m : made) {
    SCOPED_TRACE(m.name);
    auto format = MakeBlockScaledDType(m.name, m.element, {m.scale}, m.scaling);
    ASSERT_TRUE(format.ok()) << format.status();
    std::vector<float> x(Count(m.shape));
    for (float& v : x) v = normal(rng);
    auto source = QuantizeBlockScaled(
        Floats(m.shape, x), *dtypes::FP8E4M3Block1x128(),
        static_cast<int64_t>(m.shape.size()) - 1, ScaleLayout::kRowMajor);
    ASSERT_TRUE(source.ok()) << source.status();
    for (const int64_t chunk_bytes :
         {int64_t{1}, int64_t{700}, int64_t{1} << 20}) {
      SCOPED_TRACE(chunk_bytes);
      const Tensor values = *Dequantize(*source, *dtypes::Float32());
      auto want = QuantizeBlockScaled(values, **format, kBlocksOfTheFormat);
      ASSERT_TRUE(want.ok()) << want.status();
      QuantizeOptions options;
      options.max_chunk_bytes = chunk_bytes;
      auto got = Requantize(*source, **format, options);
      ASSERT_TRUE(got.ok()) << got.status();
      const Representation& w = TensorAccess::representation(*want);
      const Representation& g = TensorAccess::representation(*got);
      ASSERT_EQ(g.num_levels(), w.num_levels());
      for (int k = 0; k < w.num_levels(); ++k) {
        EXPECT_EQ(g.subtensor(k).placement.ToString(),
                  w.subtensor(k).placement.ToString());
        const auto bytes = [](const Subtensor& s) {
          return std::string(
              static_cast<const char*>(s.carrier->data()),
              (s.carrier->size() * s.storage_dtype->bits() + 7) / 8);
        };
        EXPECT_EQ(bytes(g.subtensor(k)), bytes(w.subtensor(k)))
            << "level " << k;
      }
      EXPECT_EQ(g.adjacent_layouts()[0].ToString(),
                w.adjacent_layouts()[0].ToString());
      ++compared;
    }
  }
  EXPECT_EQ(compared, 9);
}

// DeepSeek's FP8 128x128 into Blackwell's UE8M0 scales (vLLM's
// requant_weight_ue8m0_inplace): through float32, then DeepGEMM's rule.
TEST(RequantizeTest, Fp8Block128x128ToUe8m0) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(576 * 300);
  for (float& v : x) v = normal(rng);
  const Tensor fp8 =
      *QuantizeBlockScaled(Floats({576, 300}, x),
                           *dtypes::FP8E4M3Block128x128(), kBlocksOfTheFormat);
  QuantizeOptions options;
  options.max_chunk_bytes = 1;  // One row of blocks a chunk.
  auto ue8m0 = Requantize(fp8, *dtypes::FP8E4M3Block128x128UE8M0(), options);
  ASSERT_TRUE(ue8m0.ok()) << ue8m0.status();
  EXPECT_EQ(&ue8m0->dtype(), dtypes::FP8E4M3Block128x128UE8M0());
  const Tensor want = *QuantizeBlockScaled(*Dequantize(fp8, *dtypes::Float32()),
                                           *dtypes::FP8E4M3Block128x128UE8M0(),
                                           kBlocksOfTheFormat);
  EXPECT_EQ(Bytes(*Dequantize(*ue8m0, *dtypes::Float32())),
            Bytes(*Dequantize(want, *dtypes::Float32())));
  // Every scale a power of two: e8m0 bytes in [1, 254].
  const Subtensor& scales = TensorAccess::representation(*ue8m0).subtensor(1);
  for (int64_t i = 0; i < scales.carrier->size(); ++i) {
    const uint8_t e = static_cast<const uint8_t*>(scales.carrier->data())[i];
    EXPECT_TRUE(e >= 1 && e <= 254) << i;
  }
  EXPECT_TRUE(IsValueError(Requantize(fp8, *dtypes::MXFP8E4M3(), {}).status()));
  options.max_chunk_bytes = 0;
  EXPECT_TRUE(IsValueError(
      Requantize(fp8, *dtypes::FP8E4M3Block128x128UE8M0(), options).status()));
}

}  // namespace
}  // namespace strata
