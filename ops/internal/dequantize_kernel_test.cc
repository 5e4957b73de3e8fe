// The SIMD rows of Dequantize (NOTE [ Decoding codes by their bits ]) against
// a reference written from the code formats' definitions, over random rows
// of random runs: odd 4-bit starts, runs shorter and longer than a vector,
// every code, and scales and tensor scales that are 0, -0, subnormal, huge,
// infinite or NaN, into float32 and bfloat16.
#include "ops/internal/dequantize_kernel.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/targets.h"

namespace strata {
namespace ops_internal {
namespace {

// A code's value from its format's definition.
float Reference(CodeKind kind, uint32_t code) {
  switch (kind) {
    case CodeKind::kE4M3FN: {
      const double sign = (code & 0x80) ? -1.0 : 1.0;
      const int e = (code >> 3) & 15, m = code & 7;
      if (e == 15 && m == 7) {
        return std::copysign(std::numeric_limits<float>::quiet_NaN(),
                             static_cast<float>(sign));
      }
      const double v = e == 0 ? m / 8.0 * std::ldexp(1.0, -6)
                              : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
      return static_cast<float>(sign * v);
    }
    case CodeKind::kE2M1FN: {
      const double sign = (code & 8) ? -1.0 : 1.0;
      const int e = (code >> 1) & 3, m = code & 1;
      const double v =
          e == 0 ? m * 0.5 : (1.0 + m / 2.0) * std::ldexp(1.0, e - 1);
      return static_cast<float>(sign * v);
    }
    case CodeKind::kInt8:
      return static_cast<float>(static_cast<int8_t>(code));
    case CodeKind::kUInt4:
      return static_cast<float>(static_cast<int>(code) - 8);  // q4_0.
  }
  return 0;
}

// float32 to bfloat16 to nearest, ties to even, by comparing the two
// neighbours in double (overflow to infinity); NaN quieted, sign kept.
uint16_t ReferenceBFloat16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if (std::isnan(v)) return static_cast<uint16_t>((u >> 16) | 0x40);
  const uint32_t down = u & 0xFFFF0000u;
  if (down == u) return static_cast<uint16_t>(u >> 16);
  const uint32_t up = down + 0x10000u;
  auto value = [](uint32_t bits) {
    if ((bits & 0x7FFFFFFFu) == 0x7F800000u) {
      return std::copysign(std::ldexp(1.0, 128), (bits >> 31) ? -1.0 : 1.0);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return static_cast<double>(f);
  };
  const double to_down = std::fabs(static_cast<double>(v) - value(down));
  const double to_up = std::fabs(value(up) - static_cast<double>(v));
  if (to_down < to_up) return static_cast<uint16_t>(down >> 16);
  if (to_up < to_down) return static_cast<uint16_t>(up >> 16);
  return static_cast<uint16_t>(((down >> 16) & 1) ? up >> 16 : down >> 16);
}

void CheckRows();

float Pick(std::mt19937& rng) {
  static const float kSpecial[] = {0.0f,
                                   -0.0f,
                                   1.0f,
                                   -2.5f,
                                   1e-40f,
                                   -3e-39f,
                                   1e38f,
                                   -3e38f,
                                   6e37f,
                                   0.125f,
                                   std::numeric_limits<float>::infinity(),
                                   -std::numeric_limits<float>::infinity(),
                                   std::numeric_limits<float>::quiet_NaN()};
  // NaNs whose rounding to bfloat16 would carry (a payload of all ones),
  // and powers of two from 2^-127 to 2^-114: 2^-117 is the least that keeps
  // e4m3 values normal (NOTE [ bfloat16 without the NaN test, or without
  // rounding ] in dequantize_kernel.cc), and below 2^-124 an e4m3 value
  // times the power can fall between two bfloat16 subnormals.
  auto from_bits = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  std::uniform_int_distribution<int> which(0, 27);
  const int w = which(rng);
  if (w < 13) return kSpecial[w];
  if (w == 13) return from_bits(0x7FFFFFFFu);
  if (w == 14) return from_bits(0xFFBFFFFFu);  // Signaling, negative.
  if (w < 20) {
    std::uniform_int_distribution<int> power(-149, 127);
    std::uniform_int_distribution<int> near(-127, -114);
    std::uniform_int_distribution<int> sign(0, 1);
    const float magnitude = std::ldexp(1.0f, w < 17 ? power(rng) : near(rng));
    return sign(rng) ? -magnitude : magnitude;
  }
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-140, 120);
  return std::ldexp(mantissa(rng), exponent(rng));
}

// A finite float of any sign: a quarter of the time a power of two from
// 2^-127 to 2^127, positive but for one in eight (NOTE [ e4m3 times a power
// of two through the table of 1 ] in dequantize_kernel.cc), else from
// 2^-140 to 2^121 or 0.
float PickFinite(std::mt19937& rng) {
  std::uniform_int_distribution<int> quarter(0, 3), eighth(0, 7),
      power(-127, 127);
  if (quarter(rng) == 0) {
    const float p = std::ldexp(1.0f, power(rng));
    return eighth(rng) == 0 ? -p : p;
  }
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-140, 120);
  return std::ldexp(mantissa(rng), exponent(rng));
}

// Every SIMD target compiled in and supported by this CPU (AVX-512, AVX2,
// SSE4, ...), each dispatched in turn.
TEST(DequantizeKernelTest, RowsMatchTheFormatsDefinitions) {
  int targets = 0;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    SCOPED_TRACE(hwy::TargetName(target));
    RecordProperty(hwy::TargetName(target), "checked");
    hwy::SetSupportedTargetsForTest(target);
    CheckRows();
    ++targets;
  }
  hwy::SetSupportedTargetsForTest(0);
  RecordProperty("targets", targets);
  EXPECT_GE(targets, 1);
}

void CheckRows() {
  std::mt19937 rng(20261204);
  int64_t values = 0;
  for (const CodeKind kind : {CodeKind::kE4M3FN, CodeKind::kE2M1FN,
                              CodeKind::kInt8, CodeKind::kUInt4}) {
    const bool packed4 = kind == CodeKind::kE2M1FN || kind == CodeKind::kUInt4;
    std::vector<float> table(packed4 ? 16 : 256);
    for (uint32_t c = 0; c < table.size(); ++c) table[c] = Reference(kind, c);
    // e4m3 twice: with the canonical NaNs, and with NaNs whose rounding to
    // bfloat16 would carry into the exponent (which the rounding add alone
    // would turn into -0).
    for (int nans = 0; nans < (kind == CodeKind::kE4M3FN ? 2 : 1); ++nans) {
      if (nans == 1) {
        const uint32_t carrying[2] = {0x7FFFFFFFu, 0xFFFFFFFFu};
        std::memcpy(&table[0x7F], &carrying[0], 4);
        std::memcpy(&table[0xFF], &carrying[1], 4);
      }
      for (const RunOutput output :
           {RunOutput::kFloat32, RunOutput::kBFloat16}) {
        for (const TensorScaleMode mode :
             {TensorScaleMode::kNone, TensorScaleMode::kTimes,
              TensorScaleMode::kDivided}) {
          for (int trial = 0; trial < 60; ++trial) {
            SCOPED_TRACE(::testing::Message()
                         << "kind " << static_cast<int>(kind) << " output "
                         << static_cast<int>(output) << " mode "
                         << static_cast<int>(mode) << " trial " << trial);
            std::uniform_int_distribution<int> small(0, 3), run(1, 70),
                count(0, 8), byte(0, 255);
            const int64_t code_base = small(rng), out_base = small(rng);
            std::vector<int64_t> begins, lengths;
            std::vector<float> scales;
            int64_t n = 0;
            // A quarter of the rows each: blocks of nvfp4's 16 or mxfp4's 32,
            // up to 20 of them (whole groups of 64 values, NOTE [ 4-bit codes
            // into bfloat16, 32 values per lookup ] in dequantize_kernel.cc);
            // runs of 100 to 300 values, up to 6 (NOTE [ Long e4m3 runs into
            // bfloat16 through a table of 128 ]); scales mostly finite in
            // both. The last quarter: runs of 1 to 70.
            const int row_shape = small(rng);
            std::uniform_int_distribution<int> blocks(0, 20), eighth(0, 7),
                long_runs(0, 6), long_run(100, 300);
            int runs = row_shape < 2    ? blocks(rng)
                       : row_shape == 2 ? long_runs(rng)
                                        : count(rng);
            for (; runs > 0; --runs) {
              begins.push_back(n);
              // In the last quarter a quarter of the runs are nvfp4's 16, so
              // that adjacent pairs of them (two runs through one table)
              // occur.
              lengths.push_back(row_shape == 0    ? 16
                                : row_shape == 1  ? 32
                                : row_shape == 2  ? long_run(rng)
                                : small(rng) == 0 ? 16
                                                  : run(rng));
              scales.push_back(row_shape < 3 && eighth(rng) != 0
                                   ? PickFinite(rng)
                                   : Pick(rng));
              n += lengths.back();
            }
            // Half the rows of blocks of 32 have their codes in blocks as
            // GGUF lays them out, each run from its own start with a gap
            // between (code_begins): 36 nibbles or 34 bytes apart; and half of
            // those of 4-bit codes in ggml's order (split_halves: value k <
            // 16 in byte k's low nibble, 16 + k in its high nibble).
            std::vector<int64_t> code_begins;
            bool split = false;
            if (row_shape == 1 && small(rng) < 2) {
              split = packed4 && small(rng) < 2;
              int64_t at = 2 + (split ? 2 * small(rng) : small(rng));
              for (size_t r = 0; r < begins.size(); ++r) {
                code_begins.push_back(at);
                at += packed4 ? 36 : 34;
              }
            }
            const int64_t code_elements =
                code_begins.empty() ? n : code_begins.back() + 32;
            std::vector<uint8_t> codes(code_base + code_elements + 64);
            for (uint8_t& b : codes) b = static_cast<uint8_t>(byte(rng));
            const int width = output == RunOutput::kFloat32 ? 4 : 2;
            std::vector<uint8_t> out(width * (out_base + n + 1), 0xA5);
            const RowDecoding decoding{kind,      output,       mode,
                                       Pick(rng), table.data(), split};
            DequantizeRow(decoding, codes.data(), code_base, out.data(),
                          out_base, begins.data(), lengths.data(),
                          scales.data(), static_cast<int64_t>(begins.size()),
                          code_begins.empty() ? nullptr : code_begins.data());
            for (size_t r = 0; r < begins.size(); ++r) {
              for (int64_t j = begins[r]; j < begins[r] + lengths[r]; ++j) {
                // The code of value j: the row's codes one after another, or
                // from the run's start, in order or split in halves.
                const int64_t k = j - begins[r];
                uint32_t code;
                if (split) {
                  const int64_t byte_at =
                      (code_base + code_begins[r]) / 2 + (k & 15);
                  code = (codes[byte_at] >> (k < 16 ? 0 : 4)) & 15;
                } else {
                  const int64_t c =
                      code_base +
                      (code_begins.empty() ? j : code_begins[r] + k);
                  code = packed4 ? (codes[c >> 1] >> ((c & 1) * 4)) & 15
                                 : codes[c];
                }
                const float x = table[code];
                float v = x * scales[r];
                if (mode == TensorScaleMode::kTimes) v = v * decoding.g;
                if (mode == TensorScaleMode::kDivided) v = v / decoding.g;
                if (std::isnan(v)) {
                  uint32_t got = 0;
                  std::memcpy(&got, &out[width * (out_base + j)], width);
                  const uint32_t magnitude =
                      width == 4 ? got & 0x7FFFFFFFu : got & 0x7FFFu;
                  ASSERT_GT(magnitude, width == 4 ? 0x7F800000u : 0x7F80u)
                      << "value " << j << " is not a NaN";
#if defined(__x86_64__) || defined(__i386__)
                  // x86's NaN: an operand's, quieted, where one operand is
                  // a NaN; the default NaN where an operation makes one (0 x
                  // inf, inf / inf, 0 / 0); not specified where both are.
                  bool specified = true;
                  uint32_t nan_bits = 0;
                  const auto step = [&](float a, float b, float result) {
                    uint32_t a_bits, b_bits;
                    std::memcpy(&a_bits, &a, 4);
                    std::memcpy(&b_bits, &b, 4);
                    if (std::isnan(a) && std::isnan(b)) {
                      specified = false;
                    } else if (std::isnan(a)) {
                      nan_bits = a_bits | 0x00400000u;
                    } else if (std::isnan(b)) {
                      nan_bits = b_bits | 0x00400000u;
                    } else if (std::isnan(result)) {
                      nan_bits = 0xFFC00000u;
                    }
                  };
                  const float first = x * scales[r];
                  step(x, scales[r], first);
                  if (mode == TensorScaleMode::kTimes) {
                    step(first, decoding.g, first * decoding.g);
                  }
                  if (mode == TensorScaleMode::kDivided) {
                    step(first, decoding.g, first / decoding.g);
                  }
                  if (specified) {
                    const uint32_t want =
                        width == 4 ? nan_bits : ((nan_bits >> 16) | 0x40u);
                    ASSERT_EQ(got, want)
                        << "value " << j << " code " << code << " scale "
                        << scales[r] << " g " << decoding.g;
                  }
#endif
                  ++values;
                  continue;
                }
                uint8_t want[4];
                if (output == RunOutput::kFloat32) {
                  std::memcpy(want, &v, 4);
                } else {
                  const uint16_t b = ReferenceBFloat16(v);
                  std::memcpy(want, &b, 2);
                }
                ASSERT_EQ(
                    std::memcmp(want, &out[width * (out_base + j)], width), 0)
                    << "value " << j << " code " << code << " scale "
                    << scales[r] << " g " << decoding.g << " reference " << v;
                ++values;
              }
            }
            // Nothing outside the row is written.
            for (int64_t k = 0; k < width * out_base; ++k) {
              ASSERT_EQ(out[k], 0xA5);
            }
            for (size_t k = width * (out_base + n); k < out.size(); ++k) {
              ASSERT_EQ(out[k], 0xA5);
            }
          }
        }
      }
    }
  }
  EXPECT_GT(values, 100000);
}

// LookUpBytes gives the table's entry of every byte, bit for bit (NaN
// payloads included), gathered from a random table and decoded from
// float8_e4m3fn's, for every count around the vector widths and every
// target.
TEST(DequantizeKernelTest, LookUpBytesIsTheTableOnEveryTarget) {
  std::mt19937 rng(7);
  std::vector<uint32_t> table_bits(256);
  for (uint32_t& b : table_bits) b = static_cast<uint32_t>(rng());
  table_bits[0x7F] = 0x7FC00001u;  // A NaN with a payload.
  std::vector<float> table(256);
  std::memcpy(table.data(), table_bits.data(), 1024);
  // float8_e4m3fn's table from its definition, its NaNs with payloads.
  std::vector<uint32_t> e4m3_bits(256);
  for (int code = 0; code < 256; ++code) {
    const int e = (code >> 3) & 15, m = code & 7;
    const float magnitude =
        e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
    const float v = (code & 0x80) ? -magnitude : magnitude;
    std::memcpy(&e4m3_bits[code], &v, 4);
  }
  e4m3_bits[0x7F] = 0x7FC00123u;
  e4m3_bits[0xFF] = 0xFFC00456u;
  std::vector<uint8_t> bytes(300);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  bytes[3] = 0x7F;
  bytes[8] = 0xFF;
  bytes[9] = 0x80;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    SCOPED_TRACE(hwy::TargetName(target));
    hwy::SetSupportedTargetsForTest(target);
    for (const bool e4m3 : {false, true}) {
      // A random table, gathered; float8_e4m3fn's, decoded by its bits.
      const std::vector<uint32_t>& want = e4m3 ? e4m3_bits : table_bits;
      std::vector<float> used(256);
      std::memcpy(used.data(), want.data(), 1024);
      for (int64_t n = 0; n <= 70; ++n) {
        for (int64_t start : {0, 1, 5}) {
          std::vector<float> out(n + 1, -1.5f);
          LookUpBytes(bytes.data() + start, n, e4m3, used.data(), out.data());
          std::vector<uint32_t> got(n + 1);
          std::memcpy(got.data(), out.data(), 4 * (n + 1));
          for (int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(got[i], want[bytes[start + i]])
                << e4m3 << " " << n << " " << i;
          }
          ASSERT_EQ(out[n], -1.5f) << "wrote past n = " << n;
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// HalvesToFloats gives every float16's value from binary16's definition
// (exact in float), a NaN its sign and payload moved up 13 places, signaling
// or not; at every count around the vector widths from odd byte addresses,
// and at GGUF's strides, writing nothing past n, on every target.
TEST(DequantizeKernelTest, HalvesToFloatsIsTheDefinitionOnEveryTarget) {
  std::vector<uint32_t> want(65536);
  std::vector<uint8_t> halves(2 * 65536 + 1);
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t sign = (h >> 15) << 31;
    const int e = static_cast<int>((h >> 10) & 31);
    const uint32_t m = h & 1023;
    if (e == 31) {
      want[h] = sign | 0x7F800000u | (m << 13);
    } else {
      const double magnitude =
          e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
      const float v = static_cast<float>(sign ? -magnitude : magnitude);
      std::memcpy(&want[h], &v, 4);
    }
    halves[1 + 2 * h] = static_cast<uint8_t>(h & 0xFF);  // Little-endian.
    halves[2 + 2 * h] = static_cast<uint8_t>(h >> 8);
  }
  int targets = 0;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    SCOPED_TRACE(hwy::TargetName(target));
    hwy::SetSupportedTargetsForTest(target);
    std::vector<float> all(65536);
    HalvesToFloats(halves.data() + 1, 65536, 1, all.data());
    std::vector<uint32_t> got(65536);
    std::memcpy(got.data(), all.data(), 4 * 65536);
    for (uint32_t h = 0; h < 65536; ++h) {
      ASSERT_EQ(got[h], want[h]) << "half 0x" << std::hex << h;
    }
    for (int64_t n = 0; n <= 70; ++n) {
      for (const int64_t first : {0, 0x7C01, 0x03F0}) {  // A NaN, subnormals.
        std::vector<float> out(n + 1, -1.5f);
        HalvesToFloats(halves.data() + 1 + 2 * first, n, 1, out.data());
        for (int64_t i = 0; i < n; ++i) {
          uint32_t bits;
          std::memcpy(&bits, &out[i], 4);
          ASSERT_EQ(bits, want[first + i]) << n << " " << i;
        }
        ASSERT_EQ(out[n], -1.5f) << "written past " << n;
      }
    }
    // One half in each GGUF block: q8_0's 34 bytes, q4_0's 18.
    for (const int64_t stride : {17, 9}) {
      const int64_t n = 65536 / stride;
      std::vector<float> out(n + 1, -1.5f);
      HalvesToFloats(halves.data() + 1, n, stride, out.data());
      for (int64_t i = 0; i < n; ++i) {
        uint32_t bits;
        std::memcpy(&bits, &out[i], 4);
        ASSERT_EQ(bits, want[stride * i]) << stride << " " << i;
      }
      ASSERT_EQ(out[n], -1.5f) << "written past " << n;
    }
    ++targets;
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GE(targets, 1);
}

}  // namespace
}  // namespace ops_internal
}  // namespace strata
