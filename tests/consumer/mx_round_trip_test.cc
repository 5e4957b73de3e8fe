// Checks every step of the consumer's round trip, through "strata.h" only.
#include "mx_round_trip.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "strata.h"

namespace consumer {
namespace {

double ValueAt(const strata::Tensor& t, int64_t i, int64_t j) {
  auto v = strata::GetItem(t, strata::IntTuple::Tuple({i, j}));
  EXPECT_TRUE(v.ok()) << strata::FormatError(v.status());
  return v.ok() ? v->as_double() : std::nan("");
}

// float8_e4m3fn (bias 7, S.1111.111 is NaN) and float8_e8m0fnu (2^(code -
// 127)).
double DecodeE4M3(uint8_t code) {
  const int e = (code >> 3) & 0xF, m = code & 7;
  const double v =
      e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7);
  return (code & 0x80) ? -v : v;
}
double DecodeE8M0(uint8_t code) {
  return std::ldexp(1.0, static_cast<int>(code) - 127);
}

const strata::proto::CarrierProto& CarrierById(
    const strata::proto::RepresentationProto& p, const std::string& id) {
  for (const auto& c : p.carriers()) {
    if (c.id() == id) return c;
  }
  ADD_FAILURE() << "no carrier " << id;
  return p.carriers(0);
}

class MxRoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto result = RunMxRoundTrip();
    ASSERT_TRUE(result.ok()) << strata::FormatError(result.status());
    r_ = std::make_unique<MxRoundTrip>(*std::move(result));
  }
  std::unique_ptr<MxRoundTrip> r_;
};

TEST_F(MxRoundTripTest, TheViewSharesTheSourceAndTheOpComputes) {
  EXPECT_EQ(r_->source.shape(), (std::vector<int64_t>{kRows, kCols}));
  EXPECT_EQ(r_->view.shape(), (std::vector<int64_t>{kCols, kRows}));
  EXPECT_EQ(r_->view.carrier(), r_->source.carrier());  // A view: no copy.
  EXPECT_NE(r_->doubled.carrier(), r_->source.carrier());
  EXPECT_TRUE(strata::IsCompactRowMajor(r_->doubled));
  for (int64_t row = 0; row < kRows; ++row) {
    for (int64_t col = 0; col < kCols; ++col) {
      ASSERT_EQ(ValueAt(r_->source, row, col), SourceValue(row, col));
      ASSERT_EQ(ValueAt(r_->view, col, row), SourceValue(row, col));
      ASSERT_EQ(ValueAt(r_->doubled, col, row), 2 * SourceValue(row, col));
    }
  }
}

TEST_F(MxRoundTripTest, QuantizesToTheDocumentedMxfp8Layouts) {
  const strata::Tensor& q = r_->quantized;
  EXPECT_EQ(q.dtype().name(), "mxfp8_e4m3");
  EXPECT_EQ(q.num_subtensors(), 2);
  EXPECT_EQ(q.shape(), (std::vector<int64_t>{kCols, kRows}));

  auto p = strata::ParseText(r_->text);
  ASSERT_TRUE(p.ok()) << strata::FormatError(p.status());
  EXPECT_EQ(p->logical_dtype(), "mxfp8_e4m3");
  ASSERT_EQ(p->subtensors_size(), 2);
  EXPECT_EQ(p->subtensors(0).storage_dtype(), "float8_e4m3fn");
  EXPECT_EQ(p->subtensors(1).storage_dtype(), "float8_e8m0fnu");
  // README.md, "Block-scaled tensors": values row-major with mode 1 written
  // (32, 2), scales row-major (4,2), S_0 one scale per 32 values.
  EXPECT_EQ(p->subtensors(0).placement(), "(4,(32,2)):(64,(1,32))");
  EXPECT_EQ(p->subtensors(1).placement(), "(4,2):(2,1)");
  ASSERT_EQ(p->adjacent_layouts_size(), 1);
  EXPECT_EQ(p->adjacent_layouts(0), "(4,(32,2)):(1,(0,4))");

  // Every block of 32 holds the maximum 1.75 * 2^(i+1), so (OCP MX v1.0) the
  // scale is 2^(i+1-8) and each element is (1 + (j % 7) / 8) * 2^8: exact, no
  // rounding.
  const std::string& values =
      CarrierById(*p, p->subtensors(0).carrier()).data();
  const std::string& scales =
      CarrierById(*p, p->subtensors(1).carrier()).data();
  ASSERT_EQ(values.size(), static_cast<size_t>(kCols * kRows));
  ASSERT_EQ(scales.size(), static_cast<size_t>(kCols * 2));
  for (int64_t i = 0; i < kCols; ++i) {
    for (int64_t j = 0; j < kRows; ++j) {
      const auto value =
          static_cast<uint8_t>(values[p->subtensors(0).offset() + i * 64 + j]);
      const auto scale = static_cast<uint8_t>(
          scales[p->subtensors(1).offset() + i * 2 + j / 32]);
      ASSERT_EQ(value, 0x78 + j % 7) << "value (" << i << "," << j << ")";
      ASSERT_EQ(scale, 120 + i) << "scale (" << i << "," << j / 32 << ")";
      ASSERT_EQ(DecodeE4M3(value) * DecodeE8M0(scale),
                ValueAt(r_->doubled, i, j));
    }
  }
}

TEST_F(MxRoundTripTest, ReplayReproducesTheDump) {
  EXPECT_EQ(r_->replayed_text, r_->text);
  EXPECT_EQ(r_->replayed.dtype().name(), "mxfp8_e4m3");
  EXPECT_EQ(r_->replayed.num_subtensors(), 2);
  EXPECT_EQ(r_->replayed.shape(), (std::vector<int64_t>{kCols, kRows}));
  EXPECT_NE(r_->replayed.carrier(),
            r_->quantized.carrier());  // Rebuilt carriers.
}

TEST_F(MxRoundTripTest, ViewsOfTheQuantizedTensorKeepTheBlocks) {
  auto permuted = strata::Permute(r_->replayed, {1, 0});
  ASSERT_TRUE(permuted.ok()) << strata::FormatError(permuted.status());
  EXPECT_EQ(permuted->shape(), (std::vector<int64_t>{kRows, kCols}));
  auto whole_block = strata::Slice(r_->replayed, 1, 32, 64);
  EXPECT_TRUE(whole_block.ok()) << strata::FormatError(whole_block.status());
  auto cut_block =
      strata::Slice(r_->replayed, 1, 0, 16);  // Cuts a block of 32.
  EXPECT_TRUE(strata::IsValueError(cut_block.status()));
}

}  // namespace
}  // namespace consumer
