#include "ops/quantize.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "carrier/carrier.h"
#include "core/errors.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/float_formats.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "proto/codec.h"
#include "views/views.h"

namespace strata {
namespace {

// --- An independent reference, from the OCP MX v1.0 formulas -----------------

// float8_e4m3fn: bias 7, no infinities, S.1111.111 is NaN.
double RefE4M3(uint32_t code) {
  const int s = (code >> 7) & 1, e = (code >> 3) & 0xF, m = code & 7;
  if (e == 15 && m == 7) return std::nan("");
  const double v = e == 0 ? m / 8.0 * std::pow(2.0, -6)
                          : (1 + m / 8.0) * std::pow(2.0, e - 7);
  return s ? -v : v;
}
// float4_e2m1fn: bias 1; values 0, 0.5, 1, 1.5, 2, 3, 4, 6.
double RefE2M1(uint32_t code) {
  static const double table[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (code & 8) ? -table[code & 7] : table[code & 7];
}
// float8_e8m0fnu: 2^(code - 127), 0xFF is NaN.
double RefE8M0(uint32_t code) {
  return code == 0xFF ? std::nan("")
                      : std::pow(2.0, static_cast<int>(code) - 127);
}

struct Format {
  const CompoundDType* dtype;
  int64_t block;
  double (*decode_element)(uint32_t);
  int element_codes;
  int emax;  // Exponent of the largest finite element: 448 = 1.75 * 2^8, 6
             // = 1.5 * 2^2.
};

const Format kMXFP8 = {dtypes::MXFP8E4M3(), 32, RefE4M3, 256, 8};
const Format kMXFP4 = {dtypes::MXFP4(), 32, RefE2M1, 16, 2};

// The finite element value nearest to y (ties to the even code), saturating.
double NearestElement(const Format& f, double y) {
  double best = 0;
  uint32_t best_code = 0;
  double best_distance = std::numeric_limits<double>::infinity();
  for (int c = 0; c < f.element_codes; ++c) {
    const double v = f.decode_element(c);
    if (std::isnan(v)) continue;
    const double d = std::fabs(v - y);
    if (d < best_distance ||
        (d == best_distance && (c & 1) == 0 && (best_code & 1))) {
      best = v;
      best_code = c;
      best_distance = d;
    }
  }
  return best;
}

// Source values: normal, zero, subnormal, huge, NaN and Inf, by seed.
std::vector<float> RandomValues(int64_t n, uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const int kind = std::uniform_int_distribution<int>(0, 19)(rng);
    const float mantissa = std::uniform_real_distribution<float>(-2, 2)(rng);
    const int exponent = std::uniform_int_distribution<int>(-20, 20)(rng);
    if (kind == 0) {
      v[i] = 0;
    } else if (kind == 1) {
      v[i] = mantissa * 1e-40f;  // Float subnormal.
    } else if (kind == 2) {
      v[i] = mantissa * 1e30f;
    } else if (kind == 3 && specials && i % 7 == 0) {
      v[i] = std::numeric_limits<float>::quiet_NaN();
    } else if (kind == 4 && specials && i % 5 == 0) {
      v[i] = -std::numeric_limits<float>::infinity();
    } else {
      v[i] = std::ldexp(mantissa, exponent);
    }
  }
  return v;
}

Tensor FloatTensor(const std::vector<float>& v, const std::string& layout) {
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), v.size());
  std::memcpy(carrier->mutable_data(), v.data(), 4 * v.size());
  return *Tensor::Create(carrier, 0, *ParseLayout(layout));
}

// Checks every value of the quantized Tensor q against the reference, reading
// codes through q's own layouts: value at off_0 + L_0(c), scale at off_1 +
// L_1(S_0(c)).
void ExpectMatchesReference(const Format& f, const Tensor& src, const Tensor& q,
                            int64_t blocked_mode) {
  const std::vector<int64_t> shape = src.shape();
  ASSERT_EQ(q.shape(), shape);
  const Representation& rep = TensorAccess::representation(q);
  const auto* values =
      static_cast<const uint8_t*>(rep.subtensor(0).carrier->data());
  const auto* scales =
      static_cast<const uint8_t*>(rep.subtensor(1).carrier->data());
  const int element_bits = rep.subtensor(0).storage_dtype->bits();
  const auto* src_data = static_cast<const float*>(src.carrier()->data());
  std::vector<int64_t> c(shape.size(), 0);
  int64_t checked = 0;
  auto source_value = [&](const std::vector<int64_t>& crd) {
    return src_data[src.offset() + *src.layout().Crd2Idx(IntTuple::Flat(crd))];
  };
  while (true) {
    // The block of c: coordinates with the same block index along the blocked
    // mode.
    std::vector<int64_t> k = c;
    const int64_t first = c[blocked_mode] / f.block * f.block;
    double amax = 0;
    bool finite = true;
    for (int64_t t = 0; t < f.block; ++t) {
      k[blocked_mode] = first + t;
      const double x = source_value(k);
      finite = finite && std::isfinite(x);
      if (std::isfinite(x)) amax = std::max(amax, std::fabs(x));
    }
    const IntTuple crd = IntTuple::Flat(c);
    const uint32_t value_code = static_cast<uint32_t>(ReadPacked(
        values, element_bits,
        rep.subtensor(0).offset + *rep.subtensor(0).placement.Crd2Idx(crd)));
    const int64_t scale_linear = *rep.adjacent_layouts()[0].Crd2Idx(crd);
    const uint32_t scale_code =
        scales[rep.subtensor(1).offset +
               rep.subtensor(1).placement(scale_linear)];
    if (!finite) {
      EXPECT_EQ(scale_code, 0xFFu);
      EXPECT_TRUE(std::isnan(RefE8M0(scale_code)));
    } else {
      int e = 0;
      std::frexp(amax,
                 &e);  // amax = m * 2^e, m in [0.5, 1): floor(log2) = e - 1.
      int x = amax == 0 ? -127 : (e - 1) - f.emax;
      x = std::max(-127, std::min(127, x));
      ASSERT_EQ(scale_code, static_cast<uint32_t>(x + 127)) << "amax " << amax;
      const double scale = RefE8M0(scale_code);
      const double expected = NearestElement(f, source_value(c) / scale);
      const double got = f.decode_element(value_code);
      ASSERT_EQ(got, expected)
          << "value " << source_value(c) << " scale 2^" << x;
    }
    ++checked;
    size_t j = c.size();
    while (j-- > 0) {
      if (++c[j] < shape[j]) break;
      c[j] = 0;
    }
    if (j == static_cast<size_t>(-1)) break;
  }
  EXPECT_EQ(checked, q.size());
}

TEST(QuantizeTest, MXFP8MatchesTheSpecificationValueByValue) {
  const std::vector<float> v = RandomValues(8 * 128, 1, /*specials=*/true);
  const Tensor src = FloatTensor(v, "(8,128):(128,1)");
  auto q = QuantizeBlockScaled(src, *dtypes::MXFP8E4M3(), 1);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->num_subtensors(), 2);
  EXPECT_EQ(TensorAccess::representation(*q).adjacent_layouts()[0].ToString(),
            "(8,(32,4)):(1,(0,8))");
  ExpectMatchesReference(kMXFP8, src, *q, 1);
}

TEST(QuantizeTest, MXFP4MatchesTheSpecificationValueByValue) {
  const std::vector<float> v = RandomValues(64 * 6, 2, /*specials=*/true);
  // A transposed source layout, blocked along mode 0.
  const Tensor src = FloatTensor(v, "(64,6):(1,64)");
  auto q = QuantizeBlockScaled(src, *dtypes::MXFP4(), 0);
  ASSERT_TRUE(q.ok()) << q.status();
  ExpectMatchesReference(kMXFP4, src, *q, 0);
}

TEST(QuantizeTest, RankThreeBlockedInTheMiddle) {
  const std::vector<float> v = RandomValues(2 * 64 * 3, 3, /*specials=*/false);
  const Tensor src = FloatTensor(v, "(2,64,3):(192,3,1)");
  auto q = QuantizeBlockScaled(src, *dtypes::MXFP8E4M3(), 1);
  ASSERT_TRUE(q.ok()) << q.status();
  ExpectMatchesReference(kMXFP8, src, *q, 1);
}

TEST(QuantizeTest, FastEncodersAgreeWithTheGenericOnes) {
  // Every float16 bit pattern, as float: the MX kernel's encoders vs MiniFloat.
  const Tensor src = [] {
    auto carrier = *HostCarrier::Create(*dtypes::Float16(), 65536);
    auto* h = static_cast<uint16_t*>(carrier->mutable_data());
    for (int i = 0; i < 65536; ++i) h[i] = static_cast<uint16_t>(i);
    return *Tensor::Create(carrier, 0, *ParseLayout("(32,2048):(1,32)"));
  }();
  for (const Format* f : {&kMXFP8, &kMXFP4}) {
    auto q = QuantizeBlockScaled(src, *f->dtype, 0);
    ASSERT_TRUE(q.ok()) << q.status();
    const Representation& rep = TensorAccess::representation(*q);
    const auto* codes =
        static_cast<const uint8_t*>(rep.subtensor(0).carrier->data());
    const auto* scales =
        static_cast<const uint8_t*>(rep.subtensor(1).carrier->data());
    const MiniFloat& element =
        *MiniFloatFormat(*rep.subtensor(0).storage_dtype);
    for (int64_t col = 0; col < 2048; ++col) {
      if (scales[col] == 0xFF) continue;
      const double scale = RefE8M0(scales[col]);
      for (int64_t row = 0; row < 32; ++row) {
        const double x = HalfToFloat(static_cast<uint16_t>(row + 32 * col));
        const int64_t index = row * 2048 + col;
        const uint32_t code = static_cast<uint32_t>(
            ReadPacked(codes, rep.subtensor(0).storage_dtype->bits(), index));
        ASSERT_EQ(f->decode_element(code),
                  f->decode_element(element.EncodeSaturating(x / scale)))
            << x;
      }
    }
  }
}

TEST(QuantizeTest, HalfAndBFloat16Sources) {
  for (const SimpleDType* dtype : {dtypes::Float16(), dtypes::BFloat16()}) {
    auto carrier = *HostCarrier::Create(*dtype, 64);
    auto* h = static_cast<uint16_t*>(carrier->mutable_data());
    for (int i = 0; i < 64; ++i) {
      const float x = 0.37f * (i - 30);
      h[i] = dtype == dtypes::Float16() ? FloatToHalf(x) : FloatToBFloat16(x);
    }
    const Tensor src = *Tensor::Create(carrier, 0, *ParseLayout("64:1"));
    auto q = QuantizeBlockScaled(src, *dtypes::MXFP8E4M3(), 0);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->shape(), std::vector<int64_t>{64});
  }
}

TEST(QuantizeTest, NVFP4UsesE4M3ScalesOfBlocksOf16) {
  const std::vector<float> v = RandomValues(4 * 32, 4, /*specials=*/false);
  const Tensor src = FloatTensor(v, "(4,32):(32,1)");
  auto q = QuantizeBlockScaled(src, *dtypes::NVFP4(), 1);
  ASSERT_TRUE(q.ok()) << q.status();
  const Representation& rep = TensorAccess::representation(*q);
  EXPECT_EQ(rep.subtensor(1).carrier->size(), 8);
  const auto* scales =
      static_cast<const uint8_t*>(rep.subtensor(1).carrier->data());
  for (int64_t b = 0; b < 8; ++b) {
    double amax = 0;
    for (int t = 0; t < 16; ++t)
      amax = std::max(amax, std::fabs(double{v[b * 16 + t]}));
    // The e4m3 nearest to amax / 6 (saturating).
    double best = 0, best_d = 1e300;
    for (int c = 0; c < 0x7F; ++c) {
      const double d = std::fabs(RefE4M3(c) - std::min(amax / 6, 448.0));
      if (d < best_d || (d == best_d && (c & 1) == 0))
        best = RefE4M3(c), best_d = d;
    }
    EXPECT_EQ(RefE4M3(scales[b]), best) << b;
  }
}

TEST(QuantizeTest, QuantizedTensorsSurviveDumpReplayDump) {
  const Tensor src =
      FloatTensor(RandomValues(4 * 64, 5, true), "(4,64):(64,1)");
  for (const CompoundDType* format :
       {dtypes::MXFP8E4M3(), dtypes::MXFP4(), dtypes::NVFP4()}) {
    auto q = QuantizeBlockScaled(src, *format, 1);
    ASSERT_TRUE(q.ok()) << q.status();
    const std::string text = ToText(ToProto(*q, {true}));
    auto replayed = Replay(*ParseText(text));
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    EXPECT_EQ(ToText(ToProto(*replayed, {true})), text) << format->name();
    // Views keep the block rule: a transpose validates, a block-cutting slice
    // does not.
    EXPECT_TRUE(Permute(*q, {1, 0}).ok());
    EXPECT_TRUE(IsValueError(Slice(*q, 1, 0, 8).status()));
  }
}

TEST(QuantizeTest, ErrorsComeBeforeAnyAllocation) {
  const Tensor f = FloatTensor(std::vector<float>(96, 1.0f), "(3,32):(32,1)");
  auto ints = *Tensor::Create(*HostCarrier::Create(*dtypes::Int32(), 64), 0,
                              *ParseLayout("64:1"));
  EXPECT_TRUE(
      IsTypeError(QuantizeBlockScaled(ints, *dtypes::MXFP8E4M3(), 0).status()));
  EXPECT_TRUE(
      IsValueError(QuantizeBlockScaled(f, *dtypes::MXFP8E4M3(), 0).status()))
      << "extent 3 is not a multiple of 32";
  EXPECT_TRUE(
      IsValueError(QuantizeBlockScaled(f, *dtypes::MXFP8E4M3(), 2).status()));
  const CompoundDType* plain = *CompoundDType::Create(
      "test_plain_pair", {dtypes::Float8E4M3FN(), dtypes::Float8E8M0FNU()});
  EXPECT_TRUE(IsValueError(QuantizeBlockScaled(f, *plain, 1).status()));
  auto q = QuantizeBlockScaled(f, *dtypes::MXFP8E4M3(), 1);
  ASSERT_TRUE(q.ok());
  auto again = QuantizeBlockScaled(*q, *dtypes::MXFP8E4M3(), 1);
  EXPECT_TRUE(IsOneSubtensorRequired(again.status())) << again.status();
  EXPECT_NE(again.status().message().find(
                "QuantizeBlockScaled requires a one-subtensor "
                "Tensor; got 2 subtensors"),
            absl::string_view::npos);
  auto recorded = *Tensor::Create(
      RecordedCarrier::Create(*dtypes::Float32(), 32), 0, *ParseLayout("32:1"));
  EXPECT_TRUE(IsValueError(
      QuantizeBlockScaled(recorded, *dtypes::MXFP8E4M3(), 0).status()));
}

}  // namespace
}  // namespace strata
