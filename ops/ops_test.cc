#include "ops/ops.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "layout/random_layouts.h"
#include "tests/test_util.h"
#include "util/errors.h"
#include "views/views.h"

namespace strata {
namespace {

using testing::Iota;
using testing::L;

double At(const Tensor& t, std::vector<int64_t> c) {
  auto v = GetItem(t, c.size() == 1 && t.layout().shape().is_leaf()
                          ? IntTuple(c[0])
                          : IntTuple::Flat(c));
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? v->as_double() : NAN;
}

TEST(OpsTest, GetAndSetItem) {
  Tensor t = Iota("(3,4):(4,1)");
  EXPECT_EQ(At(t, {2, 1}), 9);
  EXPECT_TRUE(IsValueError(GetItem(t, 9).status()))
      << "rank 2 needs two components";
  EXPECT_EQ(GetItem(Iota("((2,3)):((1,2))"), IntTuple::Tuple({4}))->as_double(),
            4);
  const uint64_t v = t.carrier()->version();
  ASSERT_TRUE(SetItem(t, IntTuple::Tuple({1, 1}), Scalar::Float(-2.5)).ok());
  EXPECT_EQ(t.carrier()->version(), v + 1);
  EXPECT_EQ(At(t, {1, 1}), -2.5);
  EXPECT_TRUE(IsValueError(GetItem(t, IntTuple::Tuple({3, 0})).status()));
  EXPECT_TRUE(IsValueError(GetItem(t, IntTuple::Tuple({0, 0, 0})).status()));
  EXPECT_TRUE(IsValueError(GetItem(Iota("5:1"), 5).status()));
  EXPECT_TRUE(
      IsValueError(SetItem(t, IntTuple::Tuple({0, 4}), Scalar::Int(1))));
  EXPECT_EQ(t.carrier()->version(), v + 1) << "a failed SetItem bumps nothing";
  Tensor b = Iota("4:1", dtypes::Bool());
  EXPECT_TRUE(GetItem(b, 0)->is_bool());
  Tensor i = Iota("4:1", dtypes::Int16());
  EXPECT_EQ(GetItem(i, 3)->as_int(), 3);
}

TEST(OpsTest, FillBumpsTheVersionOnceAndRefusesBroadcastViews) {
  Tensor t = Iota("(3,4):(4,1)");
  const uint64_t v = t.carrier()->version();
  ASSERT_TRUE(Fill(t, Scalar::Float(7)).ok());
  EXPECT_EQ(t.carrier()->version(), v + 1);
  EXPECT_EQ(At(t, {2, 3}), 7);
  auto b = BroadcastTo(*Slice(t, 0, 0, 1), {3, 4});
  ASSERT_TRUE(b.ok());
  absl::Status s = Fill(*b, Scalar::Float(1));
  EXPECT_TRUE(IsValueError(s));
  EXPECT_NE(s.message().find("maps several coordinates to one carrier value"),
            absl::string_view::npos);
  EXPECT_EQ(t.carrier()->version(), v + 1);
}

TEST(OpsTest, CopyFromBroadcastsAndConverts) {
  Tensor dst = Iota("(2,3):(3,1)", dtypes::Int32(), 0, 0);
  Tensor row =
      Iota("3:1", dtypes::Float32(), 0, 1.5);  // 0, 1.5, 3.0 as float32.
  const uint64_t v = dst.carrier()->version();
  ASSERT_TRUE(CopyFrom(dst, row).ok());
  EXPECT_EQ(dst.carrier()->version(), v + 1);
  EXPECT_EQ(At(dst, {1, 1}), 1) << "1.5 truncates to 1";
  EXPECT_EQ(At(dst, {0, 2}), 3);
  EXPECT_TRUE(IsValueError(CopyFrom(dst, Iota("4:1"))));
}

TEST(OpsTest, CopyFromTransposesThroughTiles) {
  Tensor src = Iota("(70,90):(90,1)");
  auto t = Permute(src, {1, 0});  // (90,70) column-major view.
  ASSERT_TRUE(t.ok());
  auto dst = Zeros(*dtypes::Float32(), {90, 70});
  ASSERT_TRUE(dst.ok());
  ASSERT_TRUE(CopyFrom(*dst, *t).ok());
  for (int64_t i = 0; i < 90; i += 7) {
    for (int64_t j = 0; j < 70; j += 3) EXPECT_EQ(At(*dst, {i, j}), j * 90 + i);
  }
}

TEST(OpsTest, CopyFromTransposesLargeUnalignedAndBatchedCopiesExactly) {
  // 1499x1540 int32 (9 MB: streamed by the SSE strips where aligned, NOTE
  // [ Streaming 4-byte transposes ]; rows of 6160 bytes are not 64-byte
  // aligned for the AVX-512 tiles) with edges of every width, into an aligned
  // and an unaligned (offset 1) destination, and a batched (3,37,41)
  // transpose.
  const int64_t rows = 1540, cols = 1499;
  Tensor src = Iota("(1540,1499):(1499,1)", dtypes::Int32());
  auto t = Permute(src, {1, 0});  // (1499,1540), column-major.
  ASSERT_TRUE(t.ok());
  for (int64_t offset : {0, 1}) {
    auto carrier = *HostCarrier::Create(*dtypes::Int32(), offset + rows * cols);
    auto dst = Tensor::Create(carrier, offset, L("(1499,1540):(1540,1)"));
    ASSERT_TRUE(dst.ok());
    ASSERT_TRUE(CopyFrom(*dst, *t).ok());
    const auto* out = static_cast<const int32_t*>(carrier->data()) + offset;
    for (int64_t i = 0; i < cols; ++i) {
      for (int64_t j = 0; j < rows; ++j) {
        ASSERT_EQ(out[i * rows + j], j * cols + i) << i << "," << j;
      }
    }
  }
  Tensor batch = Iota("(3,37,41):(1517,41,1)", dtypes::Float32());
  auto bt = Contiguous(*Permute(batch, {0, 2, 1}));
  ASSERT_TRUE(bt.ok()) << bt.status();
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t i = 0; i < 41; ++i) {
      for (int64_t j = 0; j < 37; ++j) {
        ASSERT_EQ(At(*bt, {b, i, j}), b * 1517 + j * 41 + i);
      }
    }
  }
}

// Transposes a (rows, cols) Tensor of `dtype` whose bytes are a fixed
// pseudo-random pattern into a destination at `offset` with rows
// `row_stride` apart, and checks every element's bytes and the padding
// after each row.
void ExpectTransposedCopy(const SimpleDType& dtype, int64_t rows, int64_t cols,
                          int64_t row_stride, int64_t offset = 0) {
  SCOPED_TRACE(absl::StrCat(dtype.name(), " ", rows, "x", cols, ", rows ",
                            row_stride, " apart from offset ", offset));
  const int64_t width = dtype.bits() / 8;
  auto source = *HostCarrier::Create(dtype, rows * cols);
  auto* in = static_cast<uint8_t*>(source->mutable_data());
  for (int64_t b = 0; b < rows * cols * width; ++b) {
    in[b] =
        static_cast<uint8_t>((static_cast<uint64_t>(b) * 2654435761u) >> 11);
  }
  // (cols, rows) row-major, read transposed: (rows, cols) column-major.
  auto t = Permute(
      *Tensor::Create(
          source, 0, L(absl::StrCat("(", cols, ",", rows, "):(", rows, ",1)"))),
      {1, 0});
  ASSERT_TRUE(t.ok());
  auto carrier = *HostCarrier::Create(dtype, offset + rows * row_stride);
  std::memset(carrier->mutable_data(), 0xA5,
              (offset + rows * row_stride) * width);
  auto dst = Tensor::Create(
      carrier, offset,
      L(absl::StrCat("(", rows, ",", cols, "):(", row_stride, ",1)")));
  ASSERT_TRUE(dst.ok());
  ASSERT_TRUE(CopyFrom(*dst, *t).ok());
  const auto* out = static_cast<const uint8_t*>(carrier->data());
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      if (std::memcmp(out + (offset + i * row_stride + j) * width,
                      in + (j * rows + i) * width, width) != 0) {
        FAIL() << "element (" << i << "," << j << ") differs";
      }
    }
    // The padding after each row is untouched.
    for (int64_t b = (offset + i * row_stride + cols) * width;
         b < (offset + (i + 1) * row_stride) * width; ++b) {
      if (out[b] != 0xA5) FAIL() << "padding byte " << b << " was written";
    }
  }
}

TEST(OpsTest, CopyFromTransposesEveryWidthExactly) {
  // CopyFrom reaches the transposing kernels (transpose_test covers them
  // case by case) for every whole-byte width: streamed 4-byte tiles with
  // edges, unaligned 8- and 2-byte ones, 8-bit floats (bits, not values)
  // and thin 1-byte and 4-byte matrices.
  ExpectTransposedCopy(*dtypes::Int32(), 1547, 1589, 1600);
  ExpectTransposedCopy(*dtypes::Float64(), 43, 37, 37, 1);
  ExpectTransposedCopy(*dtypes::BFloat16(), 75, 83, 83, 1);
  ExpectTransposedCopy(*dtypes::Float8E4M3FN(), 100, 300, 300);
  ExpectTransposedCopy(*dtypes::Int8(), 63, 300, 300);
  ExpectTransposedCopy(*dtypes::Int32(), 15, 17, 17);
}

TEST(OpsTest, EmptyTensorsWithAHugeModeBuildNoTableOfIt) {
  // (0, (2^20, 2^20)) is empty, but its second mode is not, and does not
  // coalesce to one stride: a table of its offsets would hold 2^40 values
  // (api_fuzzer crash 103bbf2a: Fill on a dataless carrier of 2^43 values,
  // whose size let the table's budget pass). Ops iterate nothing, allocate
  // nothing by its size and succeed, whatever the carrier.
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), 4);
  const Layout huge = L("(0,(1048576,1048576)):(1,(2097152,1))");
  const Tensor empty = *Tensor::Create(carrier, 0, huge);
  const Tensor other = *Tensor::Create(carrier, 0, huge);
  EXPECT_TRUE(Fill(empty, Scalar::Float(1.0)).ok());
  EXPECT_TRUE(CopyFrom(empty, other).ok());
  EXPECT_TRUE(AddOut(empty, other, other).ok());
  auto index_carrier = *HostCarrier::Create(*dtypes::Int64(), 1);
  const Tensor index = *Tensor::Create(index_carrier, 0, L("(0,1):(1,1)"));
  const Tensor src = *Tensor::Create(carrier, 0, L("(0,1):(1,1)"));
  EXPECT_TRUE(Scatter(empty, 1, index, src).ok());
}

TEST(OpsTest, CopyFromAnOverlappingViewOfItself) {
  Tensor t = Iota("8:1");
  // t[1:8] = t[0:7], like a memmove.
  ASSERT_TRUE(CopyFrom(*Slice(t, 0, 1, 8), *Slice(t, 0, 0, 7)).ok());
  for (int64_t i = 1; i < 8; ++i) EXPECT_EQ(At(t, {i}), i - 1);
}

TEST(OpsTest, ArithmeticBroadcastsAndPromotes) {
  Tensor a = Iota("(2,3):(3,1)");           // float32
  Tensor b = Iota("3:1", dtypes::Int64());  // int64
  auto sum = Add(a, b);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(&sum->dtype(), dtypes::Float32());
  EXPECT_EQ(sum->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(At(*sum, {1, 2}), 5 + 2);
  EXPECT_EQ(At(*Sub(a, b), {1, 2}), 3);
  EXPECT_EQ(At(*Mul(a, b), {1, 2}), 10);
  auto q =
      Div(Iota("3:1", dtypes::Int32()), Iota("3:1", dtypes::Int32(), 0, 2.0));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(&q->dtype(), dtypes::Float32())
      << "integer division is true division";
  EXPECT_EQ(At(*q, {1}), 0.5);
  EXPECT_TRUE(std::isnan(At(*q, {0})));
  EXPECT_EQ(At(*Neg(a), {1, 0}), -3);
  EXPECT_TRUE(IsValueError(Add(a, Iota("4:1")).status()));
}

TEST(OpsTest, PromotionTable) {
  auto P = [](const SimpleDType* a, const SimpleDType* b,
              BinaryOp op = BinaryOp::kAdd) {
    auto r = PromoteTypes(*a, *b, op);
    return r.ok() ? (*r)->name() : std::string("error");
  };
  using namespace dtypes;
  EXPECT_EQ(P(Bool(), Bool()), "bool");
  EXPECT_EQ(P(Bool(), Int8()), "int8");
  EXPECT_EQ(P(UInt8(), Int8()), "int16");
  EXPECT_EQ(P(UInt8(), Int32()), "int32");
  EXPECT_EQ(P(Int16(), Int64()), "int64");
  EXPECT_EQ(P(Int64(), Float16()), "float16");
  EXPECT_EQ(P(Float16(), BFloat16()), "float32");
  EXPECT_EQ(P(BFloat16(), Float64()), "float64");
  EXPECT_EQ(P(Int8(), Int8(), BinaryOp::kDiv), "float32");
  EXPECT_EQ(P(Float8E4M3FN(), Float32()), "error");
  EXPECT_EQ(P(Bool(), Bool(), BinaryOp::kSub), "error");
  auto fp8 = PromoteTypes(*Float8E4M3FN(), *Float32(), BinaryOp::kAdd);
  EXPECT_TRUE(IsTypeError(fp8.status()));
  EXPECT_NE(fp8.status().message().find("not an arithmetic type"),
            absl::string_view::npos);
}

// NOTE [ Rank-0 operands ]: what torch.add gives for these (checked against
// PyTorch by python/tests/ops_property_test.py).
TEST(OpsTest, RankZeroOperandsPromoteByCategory) {
  auto R = [](const SimpleDType* vector, const SimpleDType* rank0,
              BinaryOp op = BinaryOp::kAdd, bool rank0_first = false) {
    const Tensor v = *Zeros(*vector, {3});
    const Tensor z = *Zeros(*rank0, {});
    auto r = rank0_first ? BinaryOpTensor(op, z, v) : BinaryOpTensor(op, v, z);
    return r.ok() ? r->dtype().name() : std::string(r.status().message());
  };
  using namespace dtypes;
  EXPECT_EQ(R(Int8(), Int64()), "int8");
  EXPECT_EQ(R(UInt8(), Int16(), BinaryOp::kMul, true), "uint8");
  EXPECT_EQ(R(BFloat16(), Float32()), "bfloat16");
  EXPECT_EQ(R(Float16(), Float64(), BinaryOp::kSub, true), "float16");
  EXPECT_EQ(R(Int16(), Float64()), "float64");
  EXPECT_EQ(R(Bool(), Int32()), "int32");
  EXPECT_EQ(R(Bool(), Bool()), "bool");
  EXPECT_EQ(R(Int32(), Int64(), BinaryOp::kDiv), "float32");
  EXPECT_EQ(R(Int32(), Float64(), BinaryOp::kDiv), "float64");
  // Equal standing: the promotion table.
  EXPECT_EQ(Add(*Zeros(*Int8(), {}), *Zeros(*Int64(), {}))->dtype().name(),
            "int64");
  // Still refused where the table refuses.
  EXPECT_TRUE(
      IsTypeError(Sub(*Zeros(*Bool(), {3}), *Zeros(*Bool(), {})).status()));
}

TEST(OpsTest, IntegerArithmeticWrapsAndHalfFloatsRound) {
  Tensor a = Iota("2:1", dtypes::Int8(), 0, 100.0);  // 0, 100
  auto s = Add(a, a);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(GetItem(*s, 1)->as_int(), -56) << "200 wraps in int8";
  Tensor h = Iota("3:1", dtypes::Float16(), 0, 0.1);
  auto hh = Mul(h, h);
  ASSERT_TRUE(hh.ok());
  EXPECT_EQ(&hh->dtype(), dtypes::Float16());
  EXPECT_NEAR(GetItem(*hh, 2)->as_double(), 0.04, 1e-4);
}

TEST(OpsTest, OutFormsInPlaceAndOverlap) {
  Tensor a = Iota("(4,4):(4,1)");
  Tensor b = Iota("4:1");
  const uint64_t v = a.carrier()->version();
  ASSERT_TRUE(AddOut(a, a, b).ok()) << "in place";
  EXPECT_EQ(a.carrier()->version(), v + 1);
  EXPECT_EQ(At(a, {3, 3}), 15 + 3);
  auto shifted = AsStrided(a, L("(4,4):(4,1)"), 0);
  ASSERT_TRUE(shifted.ok());
  auto partial = Slice(a, 0, 1, 4);
  ASSERT_TRUE(partial.ok());
  absl::Status overlap =
      AddOut(*Slice(a, 0, 0, 3), *Slice(a, 0, 0, 3), *partial);
  EXPECT_TRUE(IsValueError(overlap)) << overlap;
  auto out = Zeros(*dtypes::Float64(), {4, 4});
  ASSERT_TRUE(MulOut(*out, a, b).ok());
  EXPECT_EQ(At(*out, {3, 3}), 18 * 3);
  EXPECT_TRUE(IsValueError(AddOut(*Zeros(*dtypes::Float32(), {4}), a, b)));
  EXPECT_TRUE(NegOut(b, b).ok());
  EXPECT_EQ(At(b, {3}), -3);
}

TEST(OpsTest, SumAllAndAlongModes) {
  Tensor t = Iota("(2,3,4):(12,4,1)");
  auto all = Sum(t);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1);
  EXPECT_EQ(GetItem(*all, IntTuple::Tuple({}))->as_double(), 23 * 24 / 2);
  auto rows = Sum(t, {1});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(At(*rows, {1, 2}), (12 + 2) + (16 + 2) + (20 + 2));
  auto permuted = Sum(*Permute(t, {2, 0, 1}), {0, 2});
  ASSERT_TRUE(permuted.ok());
  EXPECT_EQ(At(*permuted, {1}), (12 + 23) * 12 / 2);  // Sum of t[1,:,:].
  auto ints = Sum(Iota("4:1", dtypes::Int8()));
  EXPECT_EQ(&ints->dtype(), dtypes::Int64());
  EXPECT_TRUE(IsValueError(Sum(t, {3}).status()));
  EXPECT_TRUE(IsValueError(Sum(t, {1, 1}).status()));
}

// Sums accumulate in double and round once to the result's dtype: a float32
// sum past FLT_MAX is infinity of its sign, and partial sums past it that
// cancel stay finite (found by api_fuzzer).
TEST(OpsTest, Float32SumsRoundOnceFromDouble) {
  auto t = Zeros(*dtypes::Float32(), {3});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(Fill(*t, Scalar::Float(3e38)).ok());
  auto up = Sum(*t);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(GetItem(*up, IntTuple::Tuple({}))->as_double(),
            std::numeric_limits<double>::infinity());
  ASSERT_TRUE(SetItem(*t, IntTuple(2), Scalar::Float(-3e38)).ok());
  auto cancelled = Sum(*t);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(GetItem(*cancelled, IntTuple::Tuple({}))->as_double(),
            static_cast<double>(3e38f));
  ASSERT_TRUE(Fill(*t, Scalar::Float(-3e38)).ok());
  EXPECT_EQ(GetItem(*Sum(*t), IntTuple::Tuple({}))->as_double(),
            -std::numeric_limits<double>::infinity());
}

TEST(OpsTest, ContiguousCloneCast) {
  Tensor t = Iota("(3,4):(4,1)");
  auto same = Contiguous(t);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(TensorAccess::shared_representation(*same),
            TensorAccess::shared_representation(t));
  auto transposed = Contiguous(*Permute(t, {1, 0}));
  ASSERT_TRUE(transposed.ok());
  EXPECT_TRUE(IsCompactRowMajor(*transposed));
  EXPECT_EQ(At(*transposed, {3, 2}), 11);
  auto clone = Clone(t);
  ASSERT_TRUE(clone.ok());
  EXPECT_NE(clone->carrier(), t.carrier());
  auto fp8 =
      Cast(Iota("4:1", dtypes::Float32(), 0, 0.3), *dtypes::Float8E4M3FN());
  ASSERT_TRUE(fp8.ok());
  EXPECT_EQ(GetItem(*fp8, 3)->as_double(), 0.875)
      << "0.9 rounds to e4m3's 0.875";
  auto i = Cast(Iota("3:1", dtypes::Float32(), 0, -0.75), *dtypes::Int32());
  EXPECT_EQ(GetItem(*i, 2)->as_int(), -1) << "-1.5 truncates toward zero";
}

TEST(OpsTest, ScatterFollowsPyTorch) {
  auto dst = Zeros(*dtypes::Float32(), {3, 5});
  ASSERT_TRUE(dst.ok());
  Tensor src = Iota("(2,5):(5,1)");
  auto index = Zeros(*dtypes::Int64(), {2, 3});
  const int64_t idx[2][3] = {{0, 1, 2}, {2, 0, 1}};
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      ASSERT_TRUE(
          SetItem(*index, IntTuple::Tuple({i, j}), Scalar::Int(idx[i][j]))
              .ok());
    }
  }
  const uint64_t v = dst->carrier()->version();
  ASSERT_TRUE(Scatter(*dst, 0, *index, src).ok());
  EXPECT_EQ(dst->carrier()->version(), v + 1);
  // dst[index[i][j]][j] = src[i][j].
  EXPECT_EQ(At(*dst, {0, 0}), 0);
  EXPECT_EQ(At(*dst, {2, 0}), 5);
  EXPECT_EQ(At(*dst, {0, 1}), 6);
  EXPECT_EQ(At(*dst, {1, 1}), 1);
  EXPECT_EQ(At(*dst, {1, 2}), 7);
  EXPECT_EQ(At(*dst, {2, 2}), 2);
  EXPECT_EQ(At(*dst, {0, 4}), 0);
  // An out-of-range index anywhere: nothing is written.
  ASSERT_TRUE(SetItem(*index, IntTuple::Tuple({1, 2}), Scalar::Int(3)).ok());
  ASSERT_TRUE(Fill(*dst, Scalar::Float(-1)).ok());
  const uint64_t w = dst->carrier()->version();
  absl::Status s = Scatter(*dst, 0, *index, src);
  EXPECT_TRUE(IsValueError(s));
  EXPECT_NE(s.message().find("index value 3 at row-major position 5"),
            absl::string_view::npos)
      << s;
  EXPECT_EQ(dst->carrier()->version(), w);
  EXPECT_EQ(At(*dst, {0, 0}), -1);
  EXPECT_TRUE(IsTypeError(Scatter(*dst, 0, src, src)));
  EXPECT_TRUE(IsValueError(Scatter(*dst, 2, *index, src)));
}

TEST(OpsTest, StorageTypesAreNotArithmetic) {
  auto fp8 = Cast(Iota("4:1"), *dtypes::Float8E4M3FN());
  ASSERT_TRUE(fp8.ok());
  EXPECT_TRUE(IsTypeError(Add(*fp8, *fp8).status()));
  EXPECT_TRUE(IsTypeError(Neg(*fp8).status()));
  EXPECT_TRUE(IsTypeError(Sum(*fp8).status()));
}

// Every operation rejects a multi-subtensor Tensor before any effect.
TEST(OpsTest, MultiSubtensorTensorsAreRejectedBeforeEffects) {
  auto values = *HostCarrier::Create(*dtypes::Float8E4M3FN(), 64);
  auto scales = *HostCarrier::Create(*dtypes::Float8E8M0FNU(), 2);
  const Tensor mx = MakeTensor(*Representation::Create(
      dtypes::MXFP8E4M3(),
      {{dtypes::Float8E4M3FN(), values, 0, L("(2,32):(32,1)")},
       {dtypes::Float8E8M0FNU(), scales, 0, L("2:1")}},
      {L("(2,32):(1,0)")}));
  Tensor plain = Iota("(2,32):(32,1)");
  const int64_t carriers_before = HostCarrier::created();
  const uint64_t plain_version = plain.carrier()->version();
  std::vector<std::pair<std::string, absl::Status>> results = {
      {"GetItem", GetItem(mx, 0).status()},
      {"SetItem", SetItem(mx, 0, Scalar::Int(1))},
      {"Fill", Fill(mx, Scalar::Int(1))},
      {"CopyFrom dst", CopyFrom(mx, plain)},
      {"CopyFrom src", CopyFrom(plain, mx)},
      {"Add", Add(mx, plain).status()},
      {"Sub", Sub(plain, mx).status()},
      {"Mul", Mul(mx, mx).status()},
      {"Div", Div(mx, plain).status()},
      {"Neg", Neg(mx).status()},
      {"AddOut", AddOut(mx, plain, plain)},
      {"Sum", Sum(mx).status()},
      {"Contiguous", Contiguous(mx).status()},
      {"Clone", Clone(mx).status()},
      {"Cast", Cast(mx, *dtypes::Float32()).status()},
      {"Scatter", Scatter(mx, 0, plain, plain)},
  };
  for (const auto& [name, status] : results) {
    EXPECT_TRUE(IsOneSubtensorRequired(status)) << name << ": " << status;
    EXPECT_NE(status.message().find(
                  "requires a one-subtensor Tensor; got 2 subtensors"),
              absl::string_view::npos)
        << name;
  }
  EXPECT_EQ(HostCarrier::created(), carriers_before) << "nothing was allocated";
  EXPECT_EQ(values->version(), 0u);
  EXPECT_EQ(scales->version(), 0u);
  EXPECT_EQ(plain.carrier()->version(), plain_version);
}

TEST(OpsProperties, AddMatchesANaiveLoopOverRandomLayouts) {
  testing::RandomLayouts gen(31);
  for (int n = 0; n < 200; ++n) {
    const Layout la = gen.Injective(4, 4, 2);
    auto ca = *HostCarrier::Create(*dtypes::Float64(), la.cosize());
    Tensor a = *Tensor::Create(ca, 0, la);
    auto* data = static_cast<double*>(ca->mutable_data());
    for (int64_t i = 0; i < la.cosize(); ++i) data[i] = gen.Uniform(-50, 50);
    // b: a permutation of a's modes, so shapes differ but broadcast is not
    // needed.
    std::vector<int64_t> shape = a.shape();
    auto b = Contiguous(*Permute(a, [&] {
      std::vector<int64_t> id(shape.size());
      for (size_t i = 0; i < id.size(); ++i) id[i] = i;
      return id;
    }()));
    ASSERT_TRUE(b.ok());
    auto sum = Add(a, *b);
    ASSERT_TRUE(sum.ok()) << sum.status();
    for (int64_t k = 0; k < a.size(); ++k) {
      std::vector<int64_t> c(shape.size());
      int64_t rest = k;
      for (size_t j = shape.size(); j-- > 0;) {
        c[j] = rest % shape[j];
        rest /= shape[j];
      }
      ASSERT_EQ(At(*sum, c), 2 * At(a, c)) << la.ToString();
    }
  }
}

}  // namespace
}  // namespace strata
