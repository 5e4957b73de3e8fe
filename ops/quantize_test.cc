#include "ops/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/float_formats.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "hwy/targets.h"
#include "ops/internal/narrow_codes.h"
#include "ops/internal/quantize_kernel.h"
#include "util/errors.h"
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

TEST(QuantizeTest, ViewsOfQuantizedTensorsKeepTheBlockRule) {
  const Tensor src =
      FloatTensor(RandomValues(4 * 64, 5, true), "(4,64):(64,1)");
  for (const CompoundDType* format :
       {dtypes::MXFP8E4M3(), dtypes::MXFP4(), dtypes::NVFP4()}) {
    auto q = QuantizeBlockScaled(src, *format, 1);
    ASSERT_TRUE(q.ok()) << q.status();
    // A transpose validates, a block-cutting slice does not.
    EXPECT_TRUE(Permute(*q, {1, 0}).ok()) << format->name();
    EXPECT_TRUE(IsValueError(Slice(*q, 1, 0, 8).status())) << format->name();
  }
}

// Dump and replay of quantized Tensors: tests/block_scaled_family_test.cc.

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

// --- Codes through the representation, in both scale layouts ---------------

// The reference quantizer, from the definitions (OCP MX v1.0 6.3; nvfp4: the
// scale is amax / 6 to nearest even e4m3, elements v / s to nearest even),
// exact in double: |v - c * s| is exact for a float v, an element value c and
// a scale s of a few significant bits. Returns the scale code and fills the
// element codes (sign bit kept for zeros).
struct RefFormat {
  const CompoundDType* dtype;
  int block;
  bool fp4;
  bool nv;
};
const RefFormat kRefMXFP8 = {dtypes::MXFP8E4M3(), 32, false, false};
const RefFormat kRefMXFP4 = {dtypes::MXFP4(), 32, true, false};
const RefFormat kRefNVFP4 = {dtypes::NVFP4(), 16, true, true};

// The nearest code (ties to the even code) of the non-negative x among the
// finite non-negative codes of a decode table, saturating.
uint32_t NearestCode(double (*decode)(uint32_t), int codes, double x,
                     double scale) {
  // Decoded tables, once per decoder.
  static std::map<double (*)(uint32_t), std::vector<double>>* tables =
      new std::map<double (*)(uint32_t), std::vector<double>>;
  std::vector<double>& table = (*tables)[decode];
  if (table.empty()) {
    for (int c = 0; c < 256; ++c) table.push_back(decode(c));
  }
  uint32_t best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  // Saturate first, so that x and the candidates are of one magnitude near
  // the answer and the distances are exact.
  double max_value = 0;
  for (int c = 0; c < codes; ++c) {
    if (!std::isnan(table[c])) max_value = std::max(max_value, table[c]);
  }
  x = std::min(x, max_value * scale);
  for (int c = 0; c < codes; ++c) {
    const double v = table[c];
    if (std::isnan(v) || std::signbit(v)) continue;
    const double d = std::fabs(x - v * scale);
    if (d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
  }
  return best;
}

uint32_t RefQuantize(const RefFormat& f, const float* v, uint32_t* codes) {
  double amax = 0;
  bool finite = true;
  for (int t = 0; t < f.block; ++t) {
    finite = finite && std::isfinite(v[t]);
    amax = std::max(amax, std::fabs(double{v[t]}));
  }
  if (!finite) {
    for (int t = 0; t < f.block; ++t) codes[t] = f.fp4 ? 0 : 0x7F;
    return f.nv ? 0x7F : 0xFF;
  }
  uint32_t scale_code;
  double scale;
  if (f.nv) {
    // amax / 6 to nearest e4m3: compare 6 * candidate with amax (exact).
    scale_code = NearestCode(RefE4M3, 128, amax, 6.0);
    scale = RefE4M3(scale_code);
  } else {
    int e = 0;
    std::frexp(amax, &e);
    int x = amax == 0 ? -127 : (e - 1) - (f.fp4 ? 2 : 8);
    x = std::max(-127, std::min(127, x));
    scale_code = x + 127;
    scale = RefE8M0(scale_code);
  }
  for (int t = 0; t < f.block; ++t) {
    const double a = std::fabs(double{v[t]});
    uint32_t c = scale == 0 ? 0
                 : f.fp4    ? NearestCode(RefE2M1, 8, a, scale)
                            : NearestCode(RefE4M3, 128, a, scale);
    if (std::signbit(v[t])) c |= f.fp4 ? 0x8 : 0x80;
    codes[t] = c;
  }
  return scale_code;
}

// Walks every logical coordinate c of q: the element code at off_0 + L_0(c)
// and the scale code at off_1 + L_1(S_0(c)) must be the reference's for the
// block of c in src (read through src's layout).
void ExpectCodesMatchReference(const RefFormat& f, const Tensor& src,
                               const Tensor& q, int64_t blocked_mode) {
  const std::vector<int64_t> shape = src.shape();
  ASSERT_EQ(q.shape(), shape);
  if (q.size() == 0) return;
  const Representation& rep = TensorAccess::representation(q);
  const auto* values =
      static_cast<const uint8_t*>(rep.subtensor(0).carrier->data());
  const auto* scales =
      static_cast<const uint8_t*>(rep.subtensor(1).carrier->data());
  const int element_bits = rep.subtensor(0).storage_dtype->bits();
  const auto* src_data = static_cast<const float*>(src.carrier()->data());
  auto source_value = [&](const std::vector<int64_t>& crd) {
    return src_data[src.offset() + *src.layout().Crd2Idx(IntTuple::Flat(crd))];
  };
  std::vector<int64_t> c(shape.size(), 0);
  int64_t checked = 0;
  // The reference of each block, keyed by its coordinates with the block
  // index in the blocked mode.
  struct Ref {
    uint32_t scale;
    uint32_t codes[32];
  };
  std::map<std::vector<int64_t>, Ref> refs;
  while (true) {
    std::vector<int64_t> k = c;
    const int64_t first = c[blocked_mode] / f.block * f.block;
    k[blocked_mode] = first;
    auto [it, inserted] = refs.try_emplace(k);
    if (inserted) {
      float block[32];
      for (int t = 0; t < f.block; ++t) {
        k[blocked_mode] = first + t;
        block[t] = source_value(k);
      }
      it->second.scale = RefQuantize(f, block, it->second.codes);
    }
    const uint32_t want_scale = it->second.scale;
    const uint32_t* codes = it->second.codes;
    const IntTuple crd = IntTuple::Flat(c);
    const uint32_t value_code = static_cast<uint32_t>(ReadPacked(
        values, element_bits,
        rep.subtensor(0).offset + *rep.subtensor(0).placement.Crd2Idx(crd)));
    const int64_t scale_linear = *rep.adjacent_layouts()[0].Crd2Idx(crd);
    const uint32_t scale_code =
        scales[rep.subtensor(1).offset +
               rep.subtensor(1).placement(scale_linear)];
    ASSERT_EQ(scale_code, want_scale) << "at " << crd.ToString();
    ASSERT_EQ(value_code, codes[c[blocked_mode] - first])
        << "value " << source_value(c) << " at " << crd.ToString();
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

// Adversarial values: exact fp4/fp8 ties at many scales, subnormals, -0,
// negative tiny values, huge and tiny, whole zero blocks, NaN/Inf (when
// `specials`), by seed.
std::vector<float> AdversarialValues(int64_t n, uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  std::vector<float> v = RandomValues(n, seed, specials);
  static const float kTies[] = {0.25f, 0.75f,   1.25f,   1.75f,    2.5f, 3.5f,
                                5.0f,  1.0625f, 1.1875f, 0x1p-10f, 6.5f, 7.0f};
  for (int64_t i = 0; i < n; ++i) {
    const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
    const int exponent = std::uniform_int_distribution<int>(-12, 12)(rng);
    const float tie = kTies[rng() % 12];
    if (kind == 0) {
      v[i] = std::ldexp(tie, exponent) * (rng() % 2 ? 1.0f : -1.0f);
    } else if (kind == 1) {
      v[i] =
          std::nextafter(std::ldexp(tie, exponent), rng() % 2 ? 0.0f : 1e30f);
    } else if (kind == 2) {
      v[i] = -0.0f;
    } else if (kind == 3) {
      v[i] = -1e-30f;
    } else if (kind == 4) {
      v[i] = 4.5f * tie * (rng() % 2 ? 1.0f : -1.0f);  // nvfp4 ties, s = 4.5.
    }
  }
  // Some whole blocks of -0 and of +0, and one of tiny negatives.
  for (int64_t i = 0; i + 32 <= n; i += 32 * 7) {
    for (int t = 0; t < 32; ++t) v[i + t] = (i / 224) % 2 ? -0.0f : 0.0f;
  }
  return v;
}

std::vector<uint8_t> CarrierBytes(const Tensor& q, int subtensor) {
  const Representation& rep = TensorAccess::representation(q);
  const auto& carrier = rep.subtensor(subtensor).carrier;
  const int64_t bytes =
      (carrier->size() * rep.subtensor(subtensor).storage_dtype->bits() + 7) /
      8;
  const auto* data = static_cast<const uint8_t*>(carrier->data());
  return std::vector<uint8_t>(data, data + bytes);
}

TEST(QuantizeTest, CodesThroughTheRepresentationMatchTheDefinitions) {
  struct Case {
    std::string layout;
    int64_t blocked;
  };
  // Padding in both directions (R = 200, nb = 3 or 6), blocks along either of
  // the last two modes, batched, a transposed source.
  const std::vector<Case> cases = {
      {"(200,96):(96,1)", 1},        {"(96,130):(130,1)", 0},
      {"(3,130,32):(4160,32,1)", 2}, {"(2,64,130):(8320,130,1)", 1},
      {"(64,40):(1,64)", 0},         {"(2,3,33,32):(3168,1056,32,1)", 3},
      {"(5,64):(64,1)", 1},
  };
  uint64_t seed = 11;
  for (const RefFormat* f : {&kRefMXFP8, &kRefMXFP4, &kRefNVFP4}) {
    for (const Case& c : cases) {
      const Layout layout = *ParseLayout(c.layout);
      const Tensor src = FloatTensor(
          AdversarialValues(layout.cosize(), ++seed, true), c.layout);
      for (ScaleLayout scale_layout :
           {ScaleLayout::kRowMajor, ScaleLayout::kSwizzled128x4}) {
        SCOPED_TRACE(absl::StrCat(f->dtype->name(), " ", c.layout, " blocked ",
                                  c.blocked, " ", ScaleLayoutName(scale_layout),
                                  " seed ", seed));
        auto q = QuantizeBlockScaled(src, *f->dtype, c.blocked, scale_layout);
        ASSERT_TRUE(q.ok()) << q.status();
        ExpectCodesMatchReference(*f, src, *q, c.blocked);
      }
    }
  }
}

// The published formula, independently: the carrier index of the scale of
// (batch, r, b).
int64_t SwizzledIndex(int64_t batch, int64_t r, int64_t b, int64_t rp,
                      int64_t bp) {
  return batch * rp * bp + (r / 128) * (bp / 4) * 512 + (b / 4) * 512 +
         (r % 32) * 16 + ((r / 32) % 4) * 4 + b % 4;
}

TEST(QuantizeTest, SwizzledScaleBytesFollowThePublishedFormula) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t blocked;
  };
  // R = 200 and nb = 5 pad both ways; batched; blocks along either of the
  // last two modes; exact tiles.
  const std::vector<Case> cases = {
      {{200, 160}, 1},   {{160, 200}, 0}, {{3, 130, 64}, 2},
      {{3, 64, 130}, 1}, {{256, 256}, 1}, {{2, 2, 40, 96}, 3},
      {{1, 32}, 1},
  };
  uint64_t seed = 100;
  for (const RefFormat* f : {&kRefMXFP8, &kRefMXFP4, &kRefNVFP4}) {
    for (const Case& c : cases) {
      std::string layout = "(";
      int64_t n = 1;
      for (size_t j = 0; j < c.shape.size(); ++j) {
        absl::StrAppend(&layout, j ? "," : "", c.shape[j]);
        n *= c.shape[j];
      }
      std::vector<int64_t> stride(c.shape.size());
      int64_t running = 1;
      for (size_t j = c.shape.size(); j-- > 0;) {
        stride[j] = running;
        running *= c.shape[j];
      }
      absl::StrAppend(&layout, "):(");
      for (size_t j = 0; j < stride.size(); ++j) {
        absl::StrAppend(&layout, j ? "," : "", stride[j]);
      }
      absl::StrAppend(&layout, ")");
      SCOPED_TRACE(
          absl::StrCat(f->dtype->name(), " ", layout, " blocked ", c.blocked));
      const Tensor src =
          FloatTensor(AdversarialValues(n, ++seed, true), layout);
      auto row = QuantizeBlockScaled(src, *f->dtype, c.blocked);
      auto swz = QuantizeBlockScaled(src, *f->dtype, c.blocked,
                                     ScaleLayout::kSwizzled128x4);
      ASSERT_TRUE(row.ok()) << row.status();
      ASSERT_TRUE(swz.ok()) << swz.status();
      EXPECT_EQ(CarrierBytes(*row, 0), CarrierBytes(*swz, 0))
          << "the values carrier does not depend on the scale layout";
      const int rank = c.shape.size();
      const int64_t row_dim = c.blocked == rank - 1 ? rank - 2 : rank - 1;
      const int64_t rows = c.shape[row_dim];
      const int64_t nb = c.shape[c.blocked] / f->block;
      const int64_t rp = (rows + 127) / 128 * 128, bp = (nb + 3) / 4 * 4;
      int64_t batches = 1;
      for (int j = 0; j < rank - 2; ++j) batches *= c.shape[j];
      // Row-major scales: shape with nb in the blocked mode.
      std::vector<int64_t> scale_shape = c.shape;
      scale_shape[c.blocked] = nb;
      const std::vector<uint8_t> row_scales = CarrierBytes(*row, 1);
      std::vector<uint8_t> expected(batches * rp * bp, 0);
      std::vector<int64_t> k(rank, 0);
      for (size_t linear = 0; linear < row_scales.size(); ++linear) {
        int64_t batch = 0;
        for (int j = 0; j < rank - 2; ++j) batch = batch * c.shape[j] + k[j];
        expected[SwizzledIndex(batch, k[row_dim], k[c.blocked], rp, bp)] =
            row_scales[linear];
        for (int j = rank; j-- > 0;) {
          if (++k[j] < scale_shape[j]) break;
          k[j] = 0;
        }
      }
      EXPECT_EQ(CarrierBytes(*swz, 1), expected);
    }
  }
}

TEST(QuantizeTest, SwizzledLayoutsAreTheDocumentedOnes) {
  const Tensor a = FloatTensor(std::vector<float>(3 * 200 * 160, 1.0f),
                               "(3,200,160):(32000,160,1)");
  auto q = QuantizeBlockScaled(a, *dtypes::MXFP8E4M3(), 2,
                               ScaleLayout::kSwizzled128x4);
  ASSERT_TRUE(q.ok()) << q.status();
  const Representation& rep = TensorAccess::representation(*q);
  // R = 200 -> Rp = 256, nb = 5 -> Bp = 8.
  EXPECT_EQ(rep.subtensor(1).placement.ToString(),
            "(3,(32,4,2),(4,2)):(2048,(16,4,1024),(1,512))");
  EXPECT_EQ(rep.adjacent_layouts()[0].ToString(),
            "(3,200,(32,5)):(1,3,(0,768))");
  EXPECT_EQ(rep.subtensor(1).carrier->size(), 3 * 256 * 8);
  const Tensor b =
      FloatTensor(std::vector<float>(160 * 128, 1.0f), "(160,128):(128,1)");
  q = QuantizeBlockScaled(b, *dtypes::NVFP4(), 0, ScaleLayout::kSwizzled128x4);
  ASSERT_TRUE(q.ok()) << q.status();
  const Representation& rep_b = TensorAccess::representation(*q);
  // Blocked rank-2: nb = 10 -> Bp = 12, R = 128 -> Rp = 128; leaves of
  // extent 1 are kept.
  EXPECT_EQ(rep_b.subtensor(1).placement.ToString(),
            "((4,3),(32,4,1)):((1,512),(16,4,1536))");
  EXPECT_EQ(rep_b.adjacent_layouts()[0].ToString(), "((16,10),128):((0,1),12)");
}

TEST(QuantizeTest, SwizzledErrorsNameTheArgument) {
  const Tensor v = FloatTensor(std::vector<float>(64, 1.0f), "64:1");
  auto s = QuantizeBlockScaled(v, *dtypes::MXFP8E4M3(), 0,
                               ScaleLayout::kSwizzled128x4);
  EXPECT_TRUE(IsValueError(s.status())) << s.status();
  EXPECT_NE(s.status().message().find("rank >= 2"), absl::string_view::npos);
  const Tensor t = FloatTensor(std::vector<float>(2 * 32 * 4 * 4, 1.0f),
                               "(32,2,4,4):(32,16,4,1)");
  s = QuantizeBlockScaled(t, *dtypes::MXFP8E4M3(), 0,
                          ScaleLayout::kSwizzled128x4);
  EXPECT_TRUE(IsValueError(s.status())) << s.status();
  EXPECT_NE(s.status().message().find("got blocked dim 0"),
            absl::string_view::npos)
      << s.status();
  s = QuantizeBlockScaled(t, *dtypes::MXFP8E4M3(), 0,
                          static_cast<ScaleLayout>(7));
  EXPECT_TRUE(IsValueError(s.status())) << s.status();
  // Padded sizes that overflow: 2^30 batches of one row (padded to 128) of
  // 2^27 blocks, a broadcast source: 2^30 * 128 * 2^27 scales.
  const Tensor huge =
      *Tensor::Create(*HostCarrier::Create(*dtypes::Float32(), 1), 0,
                      *ParseLayout("(1073741824,1,4294967296):(0,0,0)"));
  s = QuantizeBlockScaled(huge, *dtypes::MXFP8E4M3(), 2,
                          ScaleLayout::kSwizzled128x4);
  EXPECT_TRUE(IsValueError(s.status())) << s.status();
  EXPECT_NE(s.status().message().find("overflows"), absl::string_view::npos)
      << s.status();
}

TEST(QuantizeTest, EmptySourcesGiveEmptyCarriers) {
  for (const char* layout :
       {"(0,200,64):(12800,64,1)", "(3,0,64):(0,64,1)", "(3,130,0):(0,0,1)",
        "(2199023255552,0,32):(0,0,1)"}) {
    const Tensor src = *Tensor::Create(
        *HostCarrier::Create(*dtypes::Float32(), 1), 0, *ParseLayout(layout));
    for (ScaleLayout scale_layout :
         {ScaleLayout::kRowMajor, ScaleLayout::kSwizzled128x4}) {
      const int64_t blocked =
          std::string(layout).find(",0):") != std::string::npos
              ? 2
              : src.shape().size() - 1;
      auto q =
          QuantizeBlockScaled(src, *dtypes::NVFP4(), blocked, scale_layout);
      ASSERT_TRUE(q.ok()) << layout << " " << q.status();
      const Representation& rep = TensorAccess::representation(*q);
      EXPECT_EQ(rep.subtensor(0).carrier->size(), 0) << layout;
      EXPECT_EQ(rep.subtensor(1).carrier->size(), 0) << layout;
    }
  }
}

// An empty source whose value layout L_0 cannot exist: the blocked mode of
// extent 0 splits into (16, 0) and 10^18 * 4 * 16 passes int64 before the
// zero. The refusal comes before the carriers (found by api_fuzzer).
TEST(QuantizeTest, ARefusedValueLayoutAllocatesNothing) {
  const Tensor src =
      *Tensor::Create(*HostCarrier::Create(*dtypes::Float32(), 1), 0,
                      *ParseLayout("(1000000000000000000,4,0):(0,0,1)"));
  for (ScaleLayout scale_layout :
       {ScaleLayout::kRowMajor, ScaleLayout::kSwizzled128x4}) {
    const int created = HostCarrier::created();
    auto q = QuantizeBlockScaled(src, *dtypes::NVFP4(), 2, scale_layout);
    EXPECT_TRUE(IsValueError(q.status())) << q.status();
    EXPECT_NE(q.status().message().find("overflows int64"),
              absl::string_view::npos)
        << q.status();
    EXPECT_EQ(HostCarrier::created(), created) << ScaleLayoutName(scale_layout);
  }
}

// --- Rounding and signed zeros -----------------------------------------------

TEST(QuantizeTest, NVFP4ElementsAreTheCorrectlyRoundedQuotient) {
  // 22.5 / 4.5 = 5 is the tie of 4 and 6: nearest even is 4 (code 0x6).
  std::vector<float> v(16, 0.0f);
  v[0] = 27.0f;  // amax / 6 = 4.5, an e4m3 value.
  v[1] = 22.5f;
  v[2] = -22.5f;
  auto q = QuantizeBlockScaled(FloatTensor(v, "16:1"), *dtypes::NVFP4(), 0);
  ASSERT_TRUE(q.ok()) << q.status();
  const std::vector<uint8_t> values = CarrierBytes(*q, 0);
  EXPECT_EQ(CarrierBytes(*q, 1)[0], 0x49) << "4.5 = 1.125 * 2^2";
  EXPECT_EQ(values[0] & 0xF, 0x7) << "27 / 4.5 = 6";
  EXPECT_EQ(values[0] >> 4, 0x6) << "22.5 / 4.5 = 5 -> 4";
  EXPECT_EQ(values[1] & 0xF, 0xE) << "-5 -> -4";
}

TEST(QuantizeTest, NVFP4TiesAtEveryScale) {
  // Every positive e4m3 scale s (fixed by a block maximum 6 s) and every fp4
  // tie t: v = t s (exact in float) and its two float neighbours, both signs,
  // against the exact reference.
  static const float kTies[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  int64_t checked = 0;
  for (uint32_t code = 1; code < 0x7F; ++code) {
    const float s = static_cast<float>(RefE4M3(code));
    std::vector<float> v;
    for (float t : kTies) {
      const float x = t * s;
      ASSERT_EQ(double{x}, double{t} * double{s});
      for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, 1e30f)}) {
        v.push_back(y);
        v.push_back(-y);
      }
    }
    // Blocks of 16: the maximum 6 s first, then 15 values.
    for (size_t i = 0; i < v.size(); i += 15) {
      std::vector<float> block(16, 0.0f);
      block[0] = 6 * s;
      for (size_t k = 0; k < 15 && i + k < v.size(); ++k)
        block[1 + k] = v[i + k];
      auto q =
          QuantizeBlockScaled(FloatTensor(block, "16:1"), *dtypes::NVFP4(), 0);
      ASSERT_TRUE(q.ok()) << q.status();
      uint32_t want[16];
      ASSERT_EQ(RefQuantize(kRefNVFP4, block.data(), want), code);
      const std::vector<uint8_t> values = CarrierBytes(*q, 0);
      ASSERT_EQ(CarrierBytes(*q, 1)[0], code);
      for (int t = 0; t < 16; ++t) {
        ASSERT_EQ((values[t / 2] >> (4 * (t % 2))) & 0xF, want[t])
            << "s = " << s << ", v = " << block[t];
        ++checked;
      }
      // The portable kernel agrees too.
      uint8_t codes[16];
      ASSERT_EQ(ops_internal::QuantizeBlockScalar(
                    ops_internal::QuantFormat::kNVFP4, block.data(), codes),
                code);
      for (int t = 0; t < 16; ++t) ASSERT_EQ(codes[t], want[t]);
    }
  }
  EXPECT_GT(checked, 126 * 42);
}

TEST(QuantizeTest, NegativeZerosKeepTheirSign) {
  for (const RefFormat* f : {&kRefMXFP8, &kRefMXFP4, &kRefNVFP4}) {
    std::vector<float> v(64, -0.0f);  // A block of -0, then a mixed one.
    v[32] = 1.0f;
    v[33] = -1e-30f;  // Rounds to zero.
    v[34] = -0.0f;
    v[35] = 0.0f;
    auto q = QuantizeBlockScaled(FloatTensor(v, "64:1"), *f->dtype, 0);
    ASSERT_TRUE(q.ok()) << q.status();
    const std::vector<uint8_t> values = CarrierBytes(*q, 0);
    auto code = [&](int t) -> uint32_t {
      return f->fp4 ? (values[t / 2] >> (4 * (t % 2))) & 0xF : values[t];
    };
    const uint32_t negative_zero = f->fp4 ? 0x8 : 0x80;
    for (int t = 0; t < 32; ++t) EXPECT_EQ(code(t), negative_zero) << t;
    EXPECT_EQ(code(33), negative_zero);
    EXPECT_EQ(code(34), negative_zero);
    EXPECT_EQ(code(35), 0u);
  }
  // The generic encoder agrees (element_io's narrow stores use it).
  EXPECT_EQ(Float8E4M3FNFormat().EncodeSaturating(-0.0), 0x80u);
  EXPECT_EQ(Float8E4M3FNFormat().EncodeSaturating(-1e-30), 0x80u);
  EXPECT_EQ(Float4E2M1FNFormat().EncodeSaturating(-0.0), 0x8u);
  EXPECT_EQ(Float4E2M1FNFormat().EncodeSaturating(-0.2), 0x8u);
  EXPECT_EQ(Float8E5M2Format().EncodeSaturating(-0.0), 0x80u);
}

// --- Every SIMD target gives the portable kernel's bytes
// ----------------------

// The family's and ggml's kernels, whose only definition is the SIMD one:
// every target gives the bytes of the narrowest (EMU128 or SCALAR), on
// blocks of specials, ties, zeros and random bits, four blocks at a time and
// one at a time.
TEST(QuantizeTest, FamilyAndGgmlKernelsAgreeOnEveryTarget) {
  std::vector<float> v = AdversarialValues(32 * 1024, 91, true);
  for (int64_t i = 0; i < 65536; ++i) {
    v.push_back(HalfToFloat(static_cast<uint16_t>(i)));
  }
  std::mt19937 rng(9);
  for (int64_t i = 0; i < 32 * 1024; ++i) {
    v.push_back(BitsFloat(static_cast<uint32_t>(rng())));
  }
  // A block of ties of x / d (d = 127 / 127 = 1: k + 0.5), a zero block, one
  // with an infinity, one with a NaN.
  for (int k = 0; k < 32; ++k) v.push_back(k == 0 ? 127.0f : k - 15.5f);
  for (int k = 0; k < 32; ++k) v.push_back(0.0f);
  for (int k = 0; k < 32; ++k) v.push_back(k == 5 ? INFINITY : k * 0.25f);
  for (int k = 0; k < 32; ++k) v.push_back(k == 7 ? NAN : -k * 0.5f);
  // Blocks of tiny values, whose d = amax / 127 is subnormal: 1 / d
  // overflows to infinity (amax 1e-40, 3e-38, 3e-43: t is +-inf, or NaN for
  // a zero) or is finite (amax 1e-38). First, where the widest kernels take
  // eight blocks at a time.
  std::vector<float> tiny;
  for (float amax : {1e-40f, 3e-38f, 3e-43f, 1e-38f}) {
    for (int k = 0; k < 32; ++k) tiny.push_back(amax * ((k % 9) - 4) / 4);
  }
  v.insert(v.begin(), tiny.begin(), tiny.end());
  const int64_t blocks = v.size() / 32 - 1;  // Odd: the one-block tail runs.
  struct Result {
    std::vector<uint8_t> q8, q4;
    std::vector<float> d8, d4;
    std::vector<uint32_t> amax16, amax32, amax128;
  };
  auto run = [&]() {
    Result r;
    r.q8.resize(blocks * 32), r.q4.resize(blocks * 32);
    r.d8.resize(blocks), r.d4.resize(blocks);
    ops_internal::QuantizeGgmlBlocks(false, v.data(), blocks, r.q8.data(),
                                     r.d8.data());
    ops_internal::QuantizeGgmlBlocks(true, v.data(), blocks, r.q4.data(),
                                     r.d4.data());
    r.amax16.assign(blocks * 2 - 1, 0);
    r.amax32.assign(blocks, 0);
    r.amax128.assign(blocks / 4, 0);
    ops_internal::BlockAbsMax(v.data(), blocks * 2 - 1, 16, r.amax16.data());
    ops_internal::BlockAbsMax(v.data(), blocks, 32, r.amax32.data());
    ops_internal::BlockAbsMax(v.data(), blocks / 4, 128, r.amax128.data());
    return r;
  };
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  hwy::SetSupportedTargetsForTest(targets.back());
  const Result want = run();
  const auto bits = [](const std::vector<float>& f) {
    std::vector<uint32_t> b(f.size());
    std::memcpy(b.data(), f.data(), 4 * f.size());
    return b;
  };
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    const Result got = run();
    EXPECT_EQ(got.q8, want.q8) << hwy::TargetName(target);
    EXPECT_EQ(got.q4, want.q4) << hwy::TargetName(target);
    EXPECT_EQ(bits(got.d8), bits(want.d8)) << hwy::TargetName(target);
    EXPECT_EQ(bits(got.d4), bits(want.d4)) << hwy::TargetName(target);
    EXPECT_EQ(got.amax16, want.amax16) << hwy::TargetName(target);
    EXPECT_EQ(got.amax32, want.amax32) << hwy::TargetName(target);
    EXPECT_EQ(got.amax128, want.amax128) << hwy::TargetName(target);
  }
  hwy::SetSupportedTargetsForTest(0);
}

// q8_0 and q4_0 codes are ggml's definition on every target, where the
// quotient t = x * (1 / d) is a rounding boundary or one of its float
// neighbours, at scales d = 2^j from 2^-126 to 2^120 (t then exact):
// q8_0's ties k + 1/2 (roundf: half away from zero), q4_0's t + 8.5 at and
// around each integer (truncated). Every group of eight blocks is finite, the
// case the widest kernels round with one add (NOTE [ Half away from zero by
// one add ]); d = 0 blocks and zeros of both signs are among them.
TEST(QuantizeTest, GgmlCodesAreTheDefinitionAtEveryBoundary) {
  std::vector<float> q8_values, q4_values;
  std::vector<int> exponents = {-126, -125, -100, -30, -7, -1,  0,
                                1,    2,    7,    23,  60, 119, 120};
  for (int j : exponents) {
    const float d = std::ldexp(1.0f, j);
    // t at and beside k + 1/2 for k = -128..127, then 0 and -0 and 1/2's
    // neighbours: 31 values after each block's maximum 127 d.
    std::vector<float> q8_t;
    for (int k = -128; k <= 127; ++k) {
      const float tie = k + 0.5f;
      for (float t :
           {tie, std::nextafter(tie, -1e30f), std::nextafter(tie, 1e30f)}) {
        if (std::fabs(t) <= 127.0f) q8_t.push_back(t);
      }
    }
    for (float t : {0.0f, -0.0f, 0.49999997f, -0.49999997f, 0x1p-30f,
                    126.99999f, -127.0f}) {
      q8_t.push_back(t);
    }
    for (size_t i = 0; i < q8_t.size(); i += 31) {
      q8_values.push_back(127.0f * d);
      for (size_t k = 0; k < 31; ++k) {
        q8_values.push_back(i + k < q8_t.size() ? q8_t[i + k] * d : 0.0f);
      }
    }
    // q4_0: the first largest |x| is -8 d, so 1 / d = 2^-j and t = x 2^-j;
    // t + 8.5 at and beside every integer from 0 to 17.
    std::vector<float> q4_t;
    for (int m = 0; m <= 17; ++m) {
      const float t = m - 8.5f;
      for (float u : {t, std::nextafter(t, -1e30f), std::nextafter(t, 1e30f)}) {
        if (std::fabs(u) <= 8.0f) q4_t.push_back(u);
      }
    }
    q4_t.push_back(-0.0f);
    for (size_t i = 0; i < q4_t.size(); i += 31) {
      q4_values.push_back(-8.0f * d);
      for (size_t k = 0; k < 31; ++k) {
        q4_values.push_back(i + k < q4_t.size() ? q4_t[i + k] * d : 8.0f * d);
      }
    }
  }
  // Products x * (1 / d) that round onto a boundary from below or above,
  // where d is not a power of two (found by a numpy search): the sum with
  // 1/2 - 2^-25 (q8_0) or 8.5 (q4_0) truncates to another code if the
  // product is fused into it (an FMA), so these catch a compiler's
  // contraction of the two float operations the definition rounds one by
  // one.
  const float kQ8Products[][2] = {
      {0x1.4ccccc0p+0f, 0x1.4f6ba40p-8f}, {0x1.4ccccc0p+0f, -0x1.4f6ba40p-8f},
      {0x1.d99999ap+1f, 0x1.65ff300p-5f}, {0x1.d99999ap+1f, 0x1.bf7efc0p-3f},
      {0x1.99999ap-1f, 0x1.9cd3400p-9f},  {0x1.99999ap-1f, -0x1.9cd3400p-9f},
      {0x1.9066660p+6f, 0x1.938d820p-2f}, {0x1.9066660p+6f, -0x1.938d820p-2f}};
  const float kQ4Products[][2] = {{-0x1.99999ap-1f, -0x1.ccccce0p-2f},
                                  {-0x1.4ccccc0p+0f, -0x1.38p+0f},
                                  {-0x1.4ccccc0p+0f, -0x1.c99999ap-1f},
                                  {-0x1.d99999ap+1f, -0x1.bc00020p+1f},
                                  {-0x1.d99999ap+1f, -0x1.0a66680p+1f},
                                  {-0x1.d99999ap+1f, -0x1.9e666ap+0f}};
  for (const auto& pair : kQ8Products) {
    q8_values.push_back(pair[0]);
    q8_values.resize(q8_values.size() + 31, pair[1]);
  }
  for (const auto& pair : kQ4Products) {
    q4_values.push_back(pair[0]);
    q4_values.resize(q4_values.size() + 31, pair[1]);
  }
  // Zero blocks (d = 0), and a count of blocks that is a multiple of eight.
  for (std::vector<float>* v : {&q8_values, &q4_values}) {
    v->resize((v->size() / 256 + 2) * 256, 0.0f);
  }
  // ggml's rows, written from their definition (quantize_row_q8_0_ref,
  // quantize_row_q4_0_ref), in float.
  const auto q8_reference = [](const float* x, uint8_t* codes) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < 32; ++i) {
      const volatile float t = x[i] * id;  // Rounded: never fused.
      codes[i] = static_cast<uint8_t>(static_cast<int8_t>(std::round(t)));
    }
    return d;
  };
  const auto q4_reference = [](const float* x, uint8_t* codes) {
    float amax = 0, max = 0;
    for (int i = 0; i < 32; ++i) {
      if (amax < std::fabs(x[i])) amax = std::fabs(x[i]), max = x[i];
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < 32; ++i) {
      const volatile float t = x[i] * id;  // Rounded: never fused.
      codes[i] = static_cast<uint8_t>(std::min(15, static_cast<int>(t + 8.5f)));
    }
    return d;
  };
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  int64_t checked = 0;
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    for (bool q4 : {false, true}) {
      const std::vector<float>& v = q4 ? q4_values : q8_values;
      const int64_t blocks = static_cast<int64_t>(v.size()) / 32;
      std::vector<uint8_t> codes(v.size());
      std::vector<float> d(blocks);
      ops_internal::QuantizeGgmlBlocks(q4, v.data(), blocks, codes.data(),
                                       d.data());
      for (int64_t b = 0; b < blocks; ++b) {
        uint8_t want[32];
        const float want_d = q4 ? q4_reference(&v[32 * b], want)
                                : q8_reference(&v[32 * b], want);
        ASSERT_EQ(FloatBits(d[b]), FloatBits(want_d))
            << hwy::TargetName(target) << (q4 ? " q4_0" : " q8_0") << " block "
            << b;
        for (int i = 0; i < 32; ++i) {
          ASSERT_EQ(codes[32 * b + i], want[i])
              << hwy::TargetName(target) << (q4 ? " q4_0" : " q8_0")
              << " x = " << v[32 * b + i] << " (" << std::hexfloat
              << v[32 * b + i] << std::defaultfloat << "), d = " << want_d;
          ++checked;
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GT(checked, 14 * (3 * 256 + 3 * 18) * 2);
}

// FloatsToHalves (ggml's d as float16) is FloatToHalf on every target: every
// sign, exponent and top ten mantissa bits, with the thirteen bits that
// rounding drops below, at, and above their midpoint, and NaNs of many
// payloads among finite values; counts 0 to 20 from odd offsets.
TEST(QuantizeTest, FloatsToHalvesIsFloatToHalfOnEveryTarget) {
  std::vector<float> x;
  for (uint32_t top = 0; top < (1u << 19); ++top) {
    for (uint32_t low : {0x0000u, 0x0001u, 0x0FFFu, 0x1000u, 0x1001u, 0x1FFFu,
                         (top * 2654435761u) & 0x1FFFu}) {
      x.push_back(BitsFloat(top << 13 | low));
    }
  }
  std::vector<uint16_t> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = FloatToHalf(x[i]);
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    std::vector<uint16_t> got(x.size(), 0xABCD);
    ops_internal::FloatsToHalves(x.data(), static_cast<int64_t>(x.size()),
                                 got.data());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(got[i], want[i])
          << hwy::TargetName(target) << " " << std::hex << FloatBits(x[i]);
    }
    for (int64_t n = 0; n <= 20; ++n) {
      std::vector<uint16_t> part(n + 2, 0xABCD);
      ops_internal::FloatsToHalves(x.data() + 4096 * n + 1, n, part.data() + 1);
      EXPECT_EQ(part[0], 0xABCD);
      EXPECT_EQ(part[n + 1], 0xABCD) << n;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(part[1 + i], want[4096 * n + 1 + i]) << n;
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// EncodeBlocks gives the e4m3 code of the divided float quotient on every
// target, for values on and next to every e4m3 rounding boundary times the
// divisor, in the e4m3 subnormal range, zeros and specials, and for divisors
// that are powers of two, random, tiny, huge, subnormal, infinite and NaN
// (the guard for any kernel that avoids the division).
TEST(QuantizeTest, Fp8EncodeGivesTheCodeOfTheQuotient) {
  namespace qd = ops_internal::quantize_detail;
  std::mt19937 rng(17);
  std::vector<float> divisors = {1.0f,      0.25f,    3.0f,      1e-3f,
                                 0x1p-125f, 0x1p125f, 0x1p-126f, 0x1p-140f,
                                 0x1p126f,  INFINITY, NAN,       7.3e-5f};
  for (int k = 0; k < 20; ++k) {
    divisors.push_back(std::ldexp(1.0f + (rng() % 1000) / 1000.0f,
                                  static_cast<int>(rng() % 40) - 20));
  }
  // Quotients on, and 1 to 6 ulps either side of, every e4m3 midpoint, in
  // both signs; and some of everything else.
  std::vector<float> quotients;
  for (uint32_t code = 0; code < 0x7E; ++code) {
    const float mid =
        (qd::DecodeE4M3(code) + qd::DecodeE4M3(code + 1)) / 2;  // Exact.
    for (int u = -6; u <= 6; ++u) {
      const float q = BitsFloat(qd::Bits(mid) + u);
      quotients.push_back(q);
      quotients.push_back(-q);
    }
  }
  for (float q : {0.0f, -0.0f, 1e-30f, 0x1p-11f, 0x1p-10f, 448.0f, 464.0f,
                  1e30f, INFINITY, -INFINITY, NAN}) {
    quotients.push_back(q);
  }
  while (quotients.size() % 64 != 0) quotients.push_back(0.5f);
  const int64_t block = 64;
  const int64_t blocks = quotients.size() / block;
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  for (float d : divisors) {
    for (float pre : {1.0f, 3.0f}) {
      // Values whose quotient by d (after the product by pre) lands on or
      // near the boundaries where d allows it.
      std::vector<float> x(quotients.size());
      for (size_t i = 0; i < x.size(); ++i) x[i] = quotients[i] * d / pre;
      std::vector<float> ds(blocks, d);
      std::vector<uint8_t> want(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        want[i] = qd::E4M3Code(pre != 1.0f ? x[i] * pre / d : x[i] / d);
      }
      // Each block's amax, for the path that skips the NaN test where it
      // shows every quotient is a number (the blocks of midpoints), and
      // none (every block tested).
      std::vector<uint32_t> amax(blocks, 0);
      for (size_t i = 0; i < x.size(); ++i) {
        amax[i / block] =
            std::max(amax[i / block], qd::Bits(x[i]) & 0x7FFFFFFFu);
      }
      for (int64_t target : targets) {
        hwy::SetSupportedTargetsForTest(target);
        const std::vector<const uint32_t*> amaxes = {amax.data(), nullptr};
        for (const uint32_t* given : amaxes) {
          std::vector<uint8_t> got(x.size(), 0xA5);
          ops_internal::EncodeBlocks(false, x.data(), blocks, block, pre,
                                     ds.data(), given, got.data());
          ASSERT_EQ(got, want)
              << hwy::TargetName(target) << " d=" << d << " pre=" << pre
              << " amax given " << (given != nullptr);
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(QuantizeTest, EverySimdTargetGivesThePortableBytes) {
  using ops_internal::QuantFormat;
  const int64_t n = 32 * 4096;
  std::vector<float> v = AdversarialValues(n, 77, true);
  // Also every float16 bit pattern, as float, and random bit patterns.
  for (int64_t i = 0; i < 65536; ++i) {
    v.push_back(HalfToFloat(static_cast<uint16_t>(i)));
  }
  std::mt19937 rng(5);
  for (int64_t i = 0; i < 32 * 1024; ++i) {
    v.push_back(BitsFloat(static_cast<uint32_t>(rng())));
  }
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  for (QuantFormat f :
       {QuantFormat::kMXFP8E4M3, QuantFormat::kMXFP4, QuantFormat::kNVFP4}) {
    const int64_t block = ops_internal::QuantBlockSize(f);
    // An odd count: the SIMD loops of several blocks at a time and their
    // one-block tail both run.
    const int64_t blocks = v.size() / block - 1;
    const int64_t value_bytes =
        f == QuantFormat::kMXFP8E4M3 ? blocks * block : blocks * block / 2;
    std::vector<uint8_t> want_values(value_bytes), want_scales(blocks);
    ops_internal::QuantizeBlocksScalar(f, v.data(), blocks, want_values.data(),
                                       want_scales.data());
    for (int64_t target : targets) {
      hwy::SetSupportedTargetsForTest(target);
      std::vector<uint8_t> values(value_bytes, 0xA5), scales(blocks, 0xA5);
      ops_internal::QuantizeBlocks(f, v.data(), blocks, values.data(),
                                   scales.data());
      EXPECT_EQ(values, want_values) << hwy::TargetName(target);
      EXPECT_EQ(scales, want_scales) << hwy::TargetName(target);
    }
    hwy::SetSupportedTargetsForTest(0);
  }
  // The portable kernel against the reference quantizer.
  for (const RefFormat* f : {&kRefMXFP8, &kRefMXFP4, &kRefNVFP4}) {
    const QuantFormat k = f->nv    ? QuantFormat::kNVFP4
                          : f->fp4 ? QuantFormat::kMXFP4
                                   : QuantFormat::kMXFP8E4M3;
    for (size_t i = 0; i + f->block <= v.size(); i += f->block) {
      uint8_t codes[32];
      uint32_t want[32];
      ASSERT_EQ(ops_internal::QuantizeBlockScalar(k, &v[i], codes),
                RefQuantize(*f, &v[i], want))
          << i;
      for (int t = 0; t < f->block; ++t) ASSERT_EQ(codes[t], want[t]) << i + t;
    }
  }
}

// QuantizeTensorScaledBlocks (nvfp4_ts's fused pass) gives, on every target,
// the bytes of NOTE [ The family's quantization arithmetic ] written out
// block by block with the scalar coders: s_b = e4m3(amax_b / (6 * g)), or
// e4m3(amax_b * g' / 6); divisor s_b * g (s_b where recip), +inf where s_b is
// 0, NaN where it is NaN; codes e2m1(x / divisor), or e2m1(x * g' /
// divisor), low nibble first. Over blocks of zeros, signed zeros, an
// infinity and a NaN, adversarial values, every float16 bit pattern and
// random bit patterns, for tensor scales that make the scales saturate,
// underflow and land in between; a block count that leaves a tail.
TEST(QuantizeTest, TensorScaledBlocksGiveTheDefinitionsBytesOnEveryTarget) {
  namespace qd = ops_internal::quantize_detail;
  std::vector<float> v;
  for (int k = 0; k < 16; ++k) v.push_back(0.0f);
  for (int k = 0; k < 16; ++k) v.push_back(k % 2 ? -0.0f : -1e-30f);
  for (int k = 0; k < 16; ++k) v.push_back(k == 3 ? -INFINITY : k * 0.5f);
  for (int k = 0; k < 16; ++k) v.push_back(k == 9 ? NAN : k - 8.0f);
  for (float x : AdversarialValues(16 * 2048, 91, true)) v.push_back(x);
  for (int64_t i = 0; i < 65536; ++i) {
    v.push_back(HalfToFloat(static_cast<uint16_t>(i)));
  }
  std::mt19937 rng(41);
  for (int64_t i = 0; i < 16 * 1024; ++i) {
    v.push_back(BitsFloat(static_cast<uint32_t>(rng())));
  }
  // Groups of 16 blocks, then a tail of 13.
  const int64_t blocks = 16 * (static_cast<int64_t>(v.size()) / 256) - 3;
  ASSERT_GT(blocks, 64);
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  for (const bool recip : {false, true}) {
    for (const float g : {1.0f, 0.37f, 2688.0f / 65504.0f, 3.0e-3f, 1e-30f,
                          1e30f, 65504.0f / 2688.0f}) {
      std::vector<uint8_t> want_values(blocks * 8, 0), want_scales(blocks);
      for (int64_t b = 0; b < blocks; ++b) {
        const float* x = &v[b * 16];
        uint32_t amax = 0;
        for (int t = 0; t < 16; ++t) {
          amax = std::max(amax, qd::Bits(x[t]) & qd::kAbsMask);
        }
        const float a = qd::FromBits(amax);
        const uint8_t scale =
            qd::E4M3Code(recip ? a * g / 6.0f : a / (6.0f * g));
        want_scales[b] = scale;
        const float value = scale == 0x7F ? NAN : qd::DecodeE4M3(scale);
        const float divisor =
            scale == 0 ? INFINITY : (recip ? value : value * g);
        for (int t = 0; t < 16; ++t) {
          const uint8_t code =
              qd::E2M1Code(recip ? x[t] * g / divisor : x[t] / divisor);
          want_values[b * 8 + t / 2] |= code << (t % 2 ? 4 : 0);
        }
      }
      for (int64_t target : targets) {
        hwy::SetSupportedTargetsForTest(target);
        std::vector<uint8_t> values(blocks * 8, 0xA5), scales(blocks, 0xA5);
        ops_internal::QuantizeTensorScaledBlocks(recip, v.data(), blocks, g,
                                                 values.data(), scales.data());
        EXPECT_EQ(scales, want_scales)
            << hwy::TargetName(target) << " recip " << recip << " g " << g;
        EXPECT_EQ(values, want_values)
            << hwy::TargetName(target) << " recip " << recip << " g " << g;
      }
      hwy::SetSupportedTargetsForTest(0);
    }
  }
}

TEST(QuantizeTest, StridedAndHalfSourcesGiveTheContiguousBytes) {
  // The portable path (a transposed float32 source, float16 copies) gives the
  // bytes of the SIMD path on the same values.
  const int64_t rows = 130, cols = 64;
  std::vector<float> v = AdversarialValues(rows * cols, 9, true);
  for (float& x : v) x = HalfToFloat(FloatToHalf(x));  // Exact in float16.
  std::vector<float> transposed(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      transposed[c * rows + r] = v[r * cols + c];
  const Tensor contiguous = FloatTensor(v, "(130,64):(64,1)");
  const Tensor strided = FloatTensor(transposed, "(130,64):(1,130)");
  auto half = *HostCarrier::Create(*dtypes::Float16(), rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) {
    static_cast<uint16_t*>(half->mutable_data())[i] = FloatToHalf(v[i]);
  }
  const Tensor half_src =
      *Tensor::Create(half, 0, *ParseLayout("(130,64):(64,1)"));
  for (const CompoundDType* format :
       {dtypes::MXFP8E4M3(), dtypes::MXFP4(), dtypes::NVFP4()}) {
    for (ScaleLayout layout :
         {ScaleLayout::kRowMajor, ScaleLayout::kSwizzled128x4}) {
      auto a = QuantizeBlockScaled(contiguous, *format, 1, layout);
      auto b = QuantizeBlockScaled(strided, *format, 1, layout);
      auto c = QuantizeBlockScaled(half_src, *format, 1, layout);
      ASSERT_TRUE(a.ok() && b.ok() && c.ok());
      for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(CarrierBytes(*a, s), CarrierBytes(*b, s)) << format->name();
        EXPECT_EQ(CarrierBytes(*a, s), CarrierBytes(*c, s)) << format->name();
      }
    }
  }
}

TEST(QuantizeTest, SourcesInAnyLayoutGiveTheRowMajorBytes) {
  // The family quantizes a source that is its own row-major array in place
  // (each mode one run, found in O(rank)) and copies any other; MX and
  // nvfp4 read rows in place where the blocked mode is one run of stride 1
  // (found likewise) and gather any other: row-major
  // layouts with hierarchical or extent-1 modes, and layouts that are not
  // row-major, give the bytes of the flat row-major source of the same
  // logical values.
  const int64_t rows = 130, cols = 256;
  const std::vector<float> v = AdversarialValues(rows * cols, 11, false);
  // Logical (r, c) at L(r + c * rows), a rank-2 colexicographic coordinate
  // (L(c * rows + r) past a leading extent-1 mode).
  const auto in_layout = [&](const std::string& text) {
    const Layout layout = *ParseLayout(text);
    auto carrier = *HostCarrier::Create(*dtypes::Float32(), layout.cosize());
    auto* f = static_cast<float*>(carrier->mutable_data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c)
        f[layout(r + c * rows)] = v[r * cols + c];
    }
    return *Tensor::Create(carrier, 0, layout);
  };
  const Tensor flat = in_layout("(130,256):(256,1)");
  const std::vector<std::string> others = {
      "((65,2),256):((256,16640),1)",  // Row-major, a hierarchical row mode.
      "(130,(16,16)):(256,(1,16))",    // Row-major, a hierarchical last mode.
      "(1,130,256):(7,256,1)",         // Row-major past an extent-1 mode.
      "((2,65),256):((16640,256),1)",  // Rows out of order: copied.
      "(130,(16,16)):(256,(16,1))",    // Columns out of order: copied.
      "(130,256):(1,130)",             // Transposed: copied.
      "(130,256):(512,1)",             // Rows apart: copied.
  };
  for (const CompoundDType* format :
       {dtypes::MXFP8E4M3(), dtypes::MXFP4(), dtypes::NVFP4(),
        dtypes::FP8E4M3Tensorwise(), dtypes::FP8E4M3Rowwise(),
        dtypes::FP8E4M3Block1x128(), dtypes::FP8E4M3Block128x128(),
        dtypes::FP8E4M3Block128x128UE8M0(), dtypes::NVFP4TS(),
        dtypes::NVFP4TSRecip(), dtypes::Q8_0(), dtypes::Q4_0()}) {
    const bool one_d =
        format == dtypes::MXFP8E4M3() || format == dtypes::MXFP4() ||
        format == dtypes::NVFP4() || format == dtypes::FP8E4M3Block1x128() ||
        format == dtypes::NVFP4TS() || format == dtypes::NVFP4TSRecip();
    const auto quantize = [&](const Tensor& src) {
      const int64_t last = static_cast<int64_t>(src.shape().size()) - 1;
      return QuantizeBlockScaled(src, *format,
                                 one_d ? last : kBlocksOfTheFormat,
                                 ScaleLayout::kRowMajor);
    };
    const auto want = quantize(flat);
    ASSERT_TRUE(want.ok()) << format->name() << ": " << want.status();
    for (const std::string& layout : others) {
      const auto got = quantize(in_layout(layout));
      ASSERT_TRUE(got.ok())
          << format->name() << " " << layout << ": " << got.status();
      for (int s = 0; s < 2; ++s) {
        EXPECT_EQ(CarrierBytes(*got, s), CarrierBytes(*want, s))
            << format->name() << " " << layout << " subtensor " << s;
      }
    }
  }
}

}  // namespace
}  // namespace strata
