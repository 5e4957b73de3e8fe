#include "dtype/float_formats.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "gtest/gtest.h"

namespace strata {
namespace {

TEST(FloatFormatsTest, E4M3FNValues) {
  const MiniFloat& f = Float8E4M3FNFormat();
  EXPECT_EQ(f.Decode(0x7E), 448.0);
  EXPECT_TRUE(std::isnan(f.Decode(0x7F)));
  EXPECT_TRUE(std::isnan(f.Decode(0xFF)));
  EXPECT_EQ(f.Decode(0x01), std::ldexp(1.0, -9));  // Smallest subnormal.
  EXPECT_EQ(f.Decode(0x08), std::ldexp(1.0, -6));  // Smallest normal.
  EXPECT_EQ(f.Decode(0x38), 1.0);
  EXPECT_EQ(f.Decode(0xB8), -1.0);
  EXPECT_EQ(f.emax(), 8);
  EXPECT_EQ(f.EncodeSaturating(1e9), 0x7Eu);
  EXPECT_EQ(f.EncodeSaturating(-1e9), 0xFEu);
  EXPECT_EQ(f.EncodeSaturating(std::numeric_limits<double>::infinity()), 0x7Eu);
  EXPECT_EQ(f.EncodeSaturating(std::nan("")), 0x7Fu);
  // 1.0625 lies halfway between 1.0 (mantissa 000) and 1.125 (001): ties to
  // even.
  EXPECT_EQ(f.EncodeSaturating(1.0625), 0x38u);
  EXPECT_EQ(f.EncodeSaturating(1.1875),
            0x3Au);  // Halfway 1.125/1.25 -> 1.25 (even).
}

TEST(FloatFormatsTest, E2M1Values) {
  const MiniFloat& f = Float4E2M1FNFormat();
  const double expected[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (uint32_t c = 0; c < 8; ++c) {
    EXPECT_EQ(f.Decode(c), expected[c]);
    EXPECT_EQ(f.Decode(c | 8), -expected[c]);
    EXPECT_EQ(f.EncodeSaturating(expected[c]), c);
  }
  EXPECT_EQ(f.emax(), 2);
  EXPECT_EQ(f.EncodeSaturating(5.0), 6u)
      << "5 is halfway 4/6: ties to even (4)";
  EXPECT_EQ(f.EncodeSaturating(100.0), 7u);
  EXPECT_EQ(f.EncodeSaturating(0.25), 0u) << "halfway 0/0.5 -> 0";
  EXPECT_EQ(f.EncodeSaturating(0.75), 2u) << "halfway 0.5/1 -> 1";
}

TEST(FloatFormatsTest, ZerosKeepTheirSign) {
  // -0 and a negative value that rounds to zero encode as the negative zero.
  EXPECT_EQ(Float8E4M3FNFormat().EncodeSaturating(-0.0), 0x80u);
  EXPECT_EQ(Float8E4M3FNFormat().EncodeSaturating(-1e-9), 0x80u);
  EXPECT_EQ(Float8E4M3FNFormat().EncodeSaturating(0.0), 0x00u);
  EXPECT_EQ(Float8E5M2Format().EncodeSaturating(-1e-9), 0x80u);
  EXPECT_EQ(Float4E2M1FNFormat().EncodeSaturating(-0.0), 0x8u);
  EXPECT_EQ(Float4E2M1FNFormat().EncodeSaturating(-0.25), 0x8u);
  EXPECT_EQ(Float4E2M1FNFormat().EncodeSaturating(0.25), 0x0u);
}

TEST(FloatFormatsTest, E5M2AndE8M0) {
  const MiniFloat& f = Float8E5M2Format();
  EXPECT_EQ(f.Decode(0x7B), 57344.0);
  EXPECT_TRUE(std::isinf(f.Decode(0x7C)));
  EXPECT_TRUE(std::isnan(f.Decode(0x7D)));
  const MiniFloat& s = Float8E8M0FNUFormat();
  EXPECT_EQ(s.Decode(127), 1.0);
  EXPECT_EQ(s.Decode(0), std::ldexp(1.0, -127));
  EXPECT_TRUE(std::isnan(s.Decode(0xFF)));
  // Infinity saturates to the largest finite code (ubsan found k + bias
  // overflowing from ilogb(inf) = INT_MAX; api_fuzzer input 09e9d808).
  EXPECT_EQ(s.EncodeSaturating(std::numeric_limits<double>::infinity()), 0xFEu);
  EXPECT_EQ(s.EncodeSaturating(std::ldexp(1.0, 200)), 0xFEu);
}

TEST(FloatFormatsTest, EncodeIsNearestForEveryFormat) {
  std::mt19937_64 rng(3);
  for (const MiniFloat* f :
       {&Float8E4M3FNFormat(), &Float8E5M2Format(), &Float4E2M1FNFormat()}) {
    const int codes = 1 << (f->exponent_bits + f->mantissa_bits + 1);
    for (int n = 0; n < 20000; ++n) {
      const double x =
          std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                     std::uniform_int_distribution<int>(-12, 18)(rng));
      const double got = f->Decode(f->EncodeSaturating(x));
      const double clamped =
          std::max(-f->max_finite, std::min(f->max_finite, x));
      for (int c = 0; c < codes; ++c) {
        const double v = f->Decode(c);
        if (std::isnan(v) || std::isinf(v)) continue;
        ASSERT_LE(std::fabs(got - clamped), std::fabs(v - clamped)) << x;
      }
    }
  }
}

TEST(FloatFormatsTest, HalfAndBFloat16RoundTrip) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), h) << h;
  }
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00) << "rounds to inf";
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00) << "tie to even";
  EXPECT_EQ(BFloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80)
      << "tie to even";
  EXPECT_EQ(FloatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
}

}  // namespace
}  // namespace strata
