// Issue 16, "Total public API": one test per reproduction of the operation,
// autograd and DLPack layers, named after it. Each call that must refuse does
// so with the documented kind, changes no carrier version and allocates no
// host carrier.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/dtype.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "layout/layout.h"
#include "ops/autograd.h"
#include "ops/dlpack.h"
#include "ops/ops.h"
#include "ops/quantize.h"
#include "tests/test_util.h"
#include "util/errors.h"
#include "views/views.h"

namespace strata {
namespace {

using testing::L;

Tensor Make(const SimpleDType* dtype, const std::string& layout,
            int64_t extra = 0) {
  const Layout l = L(layout);
  auto carrier = HostCarrier::Create(*dtype, l.cosize() + extra);
  EXPECT_TRUE(carrier.ok()) << carrier.status();
  auto t = Tensor::Create(*carrier, 0, l);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

Tensor Mxfp8() {
  Tensor src = *Zeros(*dtypes::Float32(), {4, 64});
  auto q = QuantizeBlockScaled(src, *dtypes::MXFP8E4M3(), 1);
  EXPECT_TRUE(q.ok()) << q.status();
  return *q;
}

// Calls `call` and expects `kind`, no version change of `watched` and no new
// host carrier.
template <typename Call>
void ExpectCleanRefusal(ErrorKind kind, const Tensor& watched, Call call,
                        const std::string& what) {
  const MutationSnapshot before = watched.Snapshot();
  const int64_t created = HostCarrier::created();
  const absl::Status status = call();
  EXPECT_EQ(GetErrorKind(status), kind) << what << ": " << status;
  EXPECT_EQ(watched.Snapshot(), before) << what;
  EXPECT_EQ(HostCarrier::created(), created) << what;
}

// --- Item 1: autograd on a block-scaled leaf.

TEST(TotalApiTest, AutogradOpsOnBlockScaledLeafAreOneSubtensorErrors) {
  using namespace autograd;  // NOLINT: the autograd overloads.
  const Tensor mx = Mxfp8();
  const Variable leaf = Variable::Leaf(mx);
  const Variable plain = Variable::Leaf(*Zeros(*dtypes::Float32(), {4, 64}));
  const ErrorKind k = ErrorKind::kOneSubtensorRequired;
  ExpectCleanRefusal(
      k, mx, [&] { return Add(leaf, plain).status(); }, "Add");
  ExpectCleanRefusal(
      k, mx, [&] { return Add(plain, leaf).status(); }, "Add2");
  ExpectCleanRefusal(
      k, mx, [&] { return Sub(leaf, plain).status(); }, "Sub");
  ExpectCleanRefusal(
      k, mx, [&] { return Mul(leaf, plain).status(); }, "Mul");
  ExpectCleanRefusal(
      k, mx, [&] { return Div(leaf, plain).status(); }, "Div");
  ExpectCleanRefusal(
      k, mx, [&] { return Neg(leaf).status(); }, "Neg");
  ExpectCleanRefusal(
      k, mx, [&] { return Sum(leaf).status(); }, "Sum");
  ExpectCleanRefusal(
      k, mx, [&] { return Cast(leaf, *dtypes::Float32()).status(); }, "Cast");
  // Views are pure layout views, admitted for every Tensor; Backward through
  // one refuses before computing anything.
  auto view = Permute(leaf, {1, 0});
  ASSERT_TRUE(view.ok()) << view.status();
  EXPECT_EQ(view->value().num_subtensors(), 2);
  ExpectCleanRefusal(
      k, mx, [&] { return Backward(*view); }, "Backward");
  ExpectCleanRefusal(
      k, mx, [&] { return Backward(leaf); }, "Backward leaf");
  EXPECT_FALSE(leaf.grad().has_value());
}

// --- Item 2: writes through layouts that may repeat an index.

TEST(TotalApiTest, WritesThroughHugeNonInjectiveLayoutAreValueErrors) {
  // (1048576,1048576):(1,1) reaches 2^21 - 1 indices with 2^40 coordinates.
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), (1 << 21) - 1);
  const Tensor dst = *Tensor::Create(carrier, 0, L("(1048576,1048576):(1,1)"));
  const Tensor one = *Zeros(*dtypes::Float32(), {});
  const ErrorKind k = ErrorKind::kValueError;
  ExpectCleanRefusal(
      k, dst, [&] { return Fill(dst, Scalar::Float(1)); }, "Fill");
  ExpectCleanRefusal(
      k, dst, [&] { return CopyFrom(dst, one); }, "CopyFrom");
}

TEST(TotalApiTest, InjectivityIsDecidedWithoutOneEntryPerCoordinate) {
  const Tensor index = *Zeros(*dtypes::Int64(), {1, 1});
  const Tensor src = *Zeros(*dtypes::Float32(), {1, 1});
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), (1 << 21) - 1);
  const Tensor dst = *Tensor::Create(carrier, 0, L("(1048576,1048576):(1,1)"));
  const Tensor a = *Zeros(*dtypes::Float32(), {1048576, 1});
  ExpectCleanRefusal(
      ErrorKind::kValueError, dst, [&] { return Scatter(dst, 0, index, src); },
      "Scatter");
  ExpectCleanRefusal(
      ErrorKind::kValueError, dst, [&] { return AddOut(dst, a, a); }, "AddOut");
  ExpectCleanRefusal(
      ErrorKind::kValueError, dst, [&] { return NegOut(dst, src); }, "NegOut");
  // Interleaved strides, decided exactly within the budget.
  const Tensor injective = Make(dtypes::Float32(), "(3,4):(2,3)");
  EXPECT_TRUE(Fill(injective, Scalar::Float(2)).ok());
  const Tensor repeating = Make(dtypes::Float32(), "(3,4):(1,2)");
  ExpectCleanRefusal(
      ErrorKind::kValueError, repeating,
      [&] { return Fill(repeating, Scalar::Float(2)); },
      "(3,4):(1,2) reaches index 2 twice");
  // Interleaved strides over more than the budget's range: unprovable, refused
  // before any write (the 402 MB carrier is mapped, never touched).
  auto big = *HostCarrier::Create(*dtypes::UInt8(), 3 * (int64_t{1} << 27) + 2);
  const Tensor wide = *Tensor::Create(big, 0, L("(3,134217728):(2,3)"));
  const MutationSnapshot before = wide.Snapshot();
  const absl::Status status = Fill(wide, Scalar::Int(1));
  EXPECT_TRUE(IsValueError(status)) << status;
  EXPECT_NE(status.message().find("cannot prove"), absl::string_view::npos)
      << status;
  EXPECT_EQ(wide.Snapshot(), before);
}

TEST(TotalApiTest, ReadsOfHugeHierarchicalModesAreRefusedNotAllocated) {
  // One top-level mode of 2^40 coordinates over 2^20 carrier values: walking
  // it would need a 2^40-entry offset table.
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), 1 << 20);
  const Tensor t =
      *Tensor::Create(carrier, 0, L("((1048576,1048576)):((0,1))"));
  const ErrorKind k = ErrorKind::kValueError;
  ExpectCleanRefusal(
      k, t, [&] { return Sum(t).status(); }, "Sum");
  ExpectCleanRefusal(
      k, t, [&] { return Clone(t).status(); }, "Clone");
  ExpectCleanRefusal(
      k, t, [&] { return Neg(t).status(); }, "Neg");
  ExpectCleanRefusal(
      k, t, [&] { return Add(t, t).status(); }, "Add");
  // A single element is still reachable.
  auto v = GetItem(t, IntTuple::Tuple({5}));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->as_double(), 0.0);
}

// Found by api_fuzzer: the sum over the empty dim of (0, 3037000499) has
// 3037000499 zeros (24 GB); it is returned without touching them or an
// accumulator. (A 2.4 GB one here, to stay well inside any machine.)
TEST(TotalApiTest, SumOfAnEmptyTensorDoesNotTouchItsOutput) {
  auto carrier = *HostCarrier::Create(*dtypes::Bool(), 0);
  const Tensor t = *Tensor::Create(carrier, 0, L("(0,300000000):(16,-3)"));
  auto sum = Sum(t, {0});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->shape(), std::vector<int64_t>{300000000});
  EXPECT_EQ(GetItem(*sum, IntTuple(299999999))->as_int(), 0);
}

// --- Item 3: dtypes a user creates.

TEST(TotalApiTest, UserCreatedDTypesAreRefusedByEveryKernelWithTypeError) {
  const SimpleDType* e4m3 =
      *SimpleDType::Create({"my_e4m3", 8, NumericClass::kFloating, true, 4, 3});
  const SimpleDType* int24 =
      *SimpleDType::Create({"int24", 24, NumericClass::kInteger, true});
  const SimpleDType* float32 = *SimpleDType::Create(
      {"float32", 32, NumericClass::kFloating, true, 8, 23});
  const SimpleDType* bits2 =
      *SimpleDType::Create({"u2", 2, NumericClass::kInteger, false});
  const Tensor f32 = Make(dtypes::Float32(), "(2,3):(3,1)");
  const Tensor index = *Zeros(*dtypes::Int64(), {2, 3});
  const ErrorKind k = ErrorKind::kTypeError;
  for (const SimpleDType* user : {e4m3, int24, float32, bits2}) {
    const std::string n = user->name();
    const Tensor t = Make(user, "(2,3):(3,1)");
    ExpectCleanRefusal(
        k, t, [&] { return Fill(t, Scalar::Float(1)); }, n + " Fill");
    ExpectCleanRefusal(
        k, t, [&] { return CopyFrom(t, f32); }, n + " CopyTo");
    ExpectCleanRefusal(
        k, f32, [&] { return CopyFrom(f32, t); }, n + " CopyFrom");
    ExpectCleanRefusal(
        k, t,
        [&] {
          return GetItem(t, IntTuple::Tuple({0, 0})).status();
        },
        n + " GetItem");
    ExpectCleanRefusal(
        k, t,
        [&] {
          return SetItem(t, IntTuple::Tuple({0, 0}), Scalar::Int(1));
        },
        n + " SetItem");
    ExpectCleanRefusal(
        k, t, [&] { return Add(t, f32).status(); }, n + " Add");
    ExpectCleanRefusal(
        k, t, [&] { return AddOut(t, f32, f32); }, n + " Out");
    ExpectCleanRefusal(
        k, t, [&] { return Neg(t).status(); }, n + " Neg");
    ExpectCleanRefusal(
        k, t, [&] { return Sum(t).status(); }, n + " Sum");
    ExpectCleanRefusal(
        k, t, [&] { return Contiguous(t).status(); }, n + " Contiguous");
    ExpectCleanRefusal(
        k, t, [&] { return Clone(t).status(); }, n + " Clone");
    ExpectCleanRefusal(
        k, f32, [&] { return Cast(f32, *user).status(); }, n + " Cast to");
    ExpectCleanRefusal(
        k, t, [&] { return Cast(t, *dtypes::Float32()).status(); },
        n + " Cast from");
    ExpectCleanRefusal(
        k, t, [&] { return Scatter(t, 0, index, f32); }, n + " Scatter dst");
    ExpectCleanRefusal(
        k, t,
        [&] {
          return PromoteTypes(*user, *dtypes::Float32(), BinaryOp::kAdd)
              .status();
        },
        n + " PromoteTypes");
    ExpectCleanRefusal(
        k, t, [&] { return ToDLPack(t).status(); }, n + " ToDLPack");
    ExpectCleanRefusal(
        k, t,
        [&] {
          return QuantizeBlockScaled(t, *dtypes::MXFP8E4M3(), 1).status();
        },
        n + " QuantizeBlockScaled");
    ExpectCleanRefusal(
        k, t,
        [&] { return autograd::Neg(autograd::Variable::Leaf(t)).status(); },
        n + " autograd Neg");
    // Views move layouts only: they take every dtype.
    auto view = Permute(t, {1, 0});
    ASSERT_TRUE(view.ok()) << n << ": " << view.status();
    EXPECT_EQ(&view->dtype(), user);
  }
}

TEST(TotalApiTest, OneSubtensorCompoundDTypeIsRefusedByKernels) {
  // A compound dtype of one simple type makes a one-subtensor Tensor whose
  // logical dtype is not simple: kernels must refuse it, not downcast it.
  const CompoundDType* wrapped =
      *CompoundDType::Create("wrapped_f32", {dtypes::Float32()});
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), 4);
  std::vector<SubtensorCandidate> levels(1);
  levels[0].storage_dtype = dtypes::Float32();
  levels[0].carrier = carrier;
  levels[0].placement = L("4:1");
  auto representation = Representation::Create(wrapped, levels, {});
  ASSERT_TRUE(representation.ok()) << representation.status();
  const Tensor t = MakeTensor(*representation);
  ASSERT_EQ(t.num_subtensors(), 1);
  const Tensor f32 = Make(dtypes::Float32(), "4:1");
  const ErrorKind k = ErrorKind::kTypeError;
  ExpectCleanRefusal(
      k, t, [&] { return Fill(t, Scalar::Float(1)); }, "Fill");
  ExpectCleanRefusal(
      k, t, [&] { return Add(t, f32).status(); }, "Add");
  ExpectCleanRefusal(
      k, t, [&] { return Sum(t).status(); }, "Sum");
  ExpectCleanRefusal(
      k, t, [&] { return ToDLPack(t).status(); }, "ToDLPack");
  ExpectCleanRefusal(
      k, t, [&] { return autograd::Neg(autograd::Variable::Leaf(t)).status(); },
      "autograd Neg");
  EXPECT_TRUE(Permute(t, {0}).ok());
}

// Found by api_fuzzer: an empty source used to get two host carriers and then
// fail the block rule; an empty block-scaled Tensor has no block to check.
TEST(TotalApiTest, EmptyTensorsQuantizeAndSliceToEmptyBlockScaledTensors) {
  for (const CompoundDType* format :
       {dtypes::MXFP8E4M3(), dtypes::MXFP4(), dtypes::NVFP4()}) {
    const Tensor src = Make(dtypes::Float32(), "(0,0,2,96):(0,0,96,1)");
    auto q = QuantizeBlockScaled(src, *format, 3);
    ASSERT_TRUE(q.ok()) << format->name() << ": " << q.status();
    EXPECT_EQ(q->num_subtensors(), 2);
    EXPECT_EQ(q->size(), 0);
    const Tensor rows = *Zeros(*dtypes::Float32(), {0, 64});
    EXPECT_TRUE(QuantizeBlockScaled(rows, *format, 1).ok()) << format->name();
    // Found by api_fuzzer in CI: an empty source with a huge outer extent
    // built a 2^41-entry offset table for no value.
    auto carrier = *HostCarrier::Create(*dtypes::Float32(), 0);
    const Tensor huge_outer =
        *Tensor::Create(carrier, 0, L("(2199023255552,0):(0,1)"));
    auto q_huge = QuantizeBlockScaled(huge_outer, *format, 1);
    ASSERT_TRUE(q_huge.ok()) << q_huge.status();
    EXPECT_EQ(q_huge->size(), 0);
  }
  const Tensor mx = Mxfp8();
  auto none = Slice(mx, 1, 32, 32, 1);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->size(), 0);
  EXPECT_EQ(none->num_subtensors(), 2);
  // A slice that cuts a block is still refused.
  EXPECT_TRUE(IsValueError(Slice(mx, 1, 0, 16, 1).status()));
}

// Found by api_fuzzer: releasing a carrier while a DLPack export of it is
// alive freed the bytes the importer still wrote (NOTE [ Pinned storage ]).
TEST(TotalApiTest, ReleaseWhileExportedThroughDLPackKeepsTheImportValid) {
  const Tensor t = Make(dtypes::Int32(), "(2,3):(3,1)");
  ASSERT_TRUE(Fill(t, Scalar::Int(7)).ok());
  auto exported = ToDLPack(t);
  ASSERT_TRUE(exported.ok()) << exported.status();
  auto imported = FromDLPack(*exported);
  ASSERT_TRUE(imported.ok()) << imported.status();
  t.carrier()->Release();
  EXPECT_EQ(t.carrier()->data(), nullptr);
  EXPECT_TRUE(IsValueError(Fill(t, Scalar::Int(1))));  // No host data now.
  ASSERT_TRUE(Fill(*imported, Scalar::Int(1)).ok());   // Still valid memory.
  EXPECT_EQ(GetItem(*imported, IntTuple::Tuple({1, 2}))->as_int(), 1);
  // Releasing the import runs the export's deleter, which frees the storage
  // (asan reports a leak otherwise).
  imported->carrier()->Release();
}

// Found by api_fuzzer: a DLPack import is a second carrier over the same
// memory; overlap must be decided by address, not carrier identity, so that a
// Scatter or CopyFrom between the two reads its source before writing (NOTE [
// Aliasing by address ]).
TEST(TotalApiTest, CarriersSharingMemoryAreTreatedAsOverlapping) {
  const Tensor t = Make(dtypes::Int64(), "8:1");
  for (int64_t k = 0; k < 8; ++k) {
    ASSERT_TRUE(SetItem(t, IntTuple(k), Scalar::Int(k)).ok());
  }
  auto imported = FromDLPack(*ToDLPack(t));
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_NE(imported->carrier(), t.carrier());
  // dst = t reversed through a view of the alias: dst[i] = src[7 - i].
  auto reversed = AsStrided(*imported, L("8:-1"), 7);
  ASSERT_TRUE(reversed.ok()) << reversed.status();
  ASSERT_TRUE(CopyFrom(t, *reversed).ok());
  for (int64_t k = 0; k < 8; ++k) {
    EXPECT_EQ(GetItem(t, IntTuple(k))->as_int(), 7 - k) << k;
  }
  // In place through the alias is the same view: allowed.
  EXPECT_TRUE(AddOut(*imported, t, t).ok());
  // A partial overlap through the alias is refused, as within one carrier.
  auto shifted = Slice(*imported, 0, 1, 8, 1);
  auto head = Slice(t, 0, 0, 7, 1);
  EXPECT_TRUE(IsValueError(AddOut(*shifted, *head, *head)));
  imported->carrier()->Release();
}

// --- Item 5: an empty placement past the end of its carrier.

TEST(TotalApiTest, EmptyPlacementAtOffsetPastTheEndIsValueError) {
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), 4);
  const auto past = Tensor::Create(carrier, 5, L("0:1"));
  EXPECT_TRUE(IsValueError(past.status())) << past.status();
  EXPECT_NE(past.status().message().find("exceeds the carrier size"),
            absl::string_view::npos)
      << past.status();
  // offset + cosize = 4 + 0 <= 4: at the end is fine.
  EXPECT_TRUE(Tensor::Create(carrier, 4, L("0:1")).ok());
  EXPECT_TRUE(Tensor::Create(carrier, 4, L("(2,0):(1,1)")).ok());
  EXPECT_TRUE(
      IsValueError(Tensor::Create(carrier, 5, L("(2,0):(1,1)")).status()));
}

// --- Item 8: PyTorch semantics that ops.h promises.

TEST(TotalApiTest, SubWithExactlyOneBoolOperandIsTypeError) {
  const Tensor b = Make(dtypes::Bool(), "3:1");
  const Tensor i = Make(dtypes::Int32(), "3:1");
  const Tensor f = Make(dtypes::Float32(), "3:1");
  EXPECT_TRUE(IsTypeError(Sub(b, i).status()));
  EXPECT_TRUE(IsTypeError(Sub(i, b).status()));
  EXPECT_TRUE(IsTypeError(Sub(f, b).status()));
  EXPECT_TRUE(IsTypeError(Sub(b, b).status()));
  const Tensor out = Make(dtypes::Float32(), "3:1");
  ExpectCleanRefusal(
      ErrorKind::kTypeError, out, [&] { return SubOut(out, f, b); }, "SubOut");
  EXPECT_TRUE(Add(b, i).ok());  // Add and Mul with bool are fine.
  EXPECT_TRUE(Mul(i, b).ok());
}

TEST(TotalApiTest, NegOfPositiveZeroIsNegativeZero) {
  for (const SimpleDType* d : {dtypes::Float32(), dtypes::Float64(),
                               dtypes::Float16(), dtypes::BFloat16()}) {
    const Tensor zero = Make(d, "2:1");
    auto n = Neg(zero);
    ASSERT_TRUE(n.ok()) << n.status();
    for (int64_t k = 0; k < 2; ++k) {
      const double v = GetItem(*n, IntTuple(k))->as_double();
      EXPECT_EQ(v, 0.0);
      EXPECT_TRUE(std::signbit(v)) << d->name();
    }
    const Tensor out = Make(d, "2:1");
    ASSERT_TRUE(NegOut(out, zero).ok());
    EXPECT_TRUE(std::signbit(GetItem(out, IntTuple(1))->as_double()));
  }
  // Integers wrap: -INT64_MIN is INT64_MIN.
  const Tensor i = Make(dtypes::Int64(), "1:1");
  ASSERT_TRUE(Fill(i, Scalar::Int(std::numeric_limits<int64_t>::min())).ok());
  EXPECT_EQ(GetItem(*Neg(i), IntTuple(0))->as_int(),
            std::numeric_limits<int64_t>::min());
}

TEST(TotalApiTest, MixedIntegerFloatArithmeticComputesInThePromotedType) {
  // PyTorch: torch.tensor([16777217]) + torch.tensor([0.5]) == 16777216
  // (int64 -> float32 first, then a float32 add).
  const Tensor i = Make(dtypes::Int64(), "1:1");
  const Tensor f = Make(dtypes::Float32(), "1:1");
  ASSERT_TRUE(Fill(i, Scalar::Int(16777217)).ok());
  ASSERT_TRUE(Fill(f, Scalar::Float(0.5)).ok());
  auto sum = Add(i, f);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(&sum->dtype(), dtypes::Float32());
  EXPECT_EQ(GetItem(*sum, IntTuple(0))->as_double(), 16777216.0);
  // float16: 2049 -> 2048 (ties to even), + 0.5 -> 2048.5 -> 2048; computing
  // in double first would give 2049.5 -> 2050.
  const Tensor h = Make(dtypes::Float16(), "1:1");
  ASSERT_TRUE(Fill(i, Scalar::Int(2049)).ok());
  ASSERT_TRUE(Fill(h, Scalar::Float(0.5)).ok());
  auto half_sum = Add(i, h);
  ASSERT_TRUE(half_sum.ok()) << half_sum.status();
  EXPECT_EQ(&half_sum->dtype(), dtypes::Float16());
  EXPECT_EQ(GetItem(*half_sum, IntTuple(0))->as_double(), 2048.0);
  // Integer arithmetic wraps in its compute dtype before it is converted to
  // out's: uint8 200 + 100 into float32 is 44 (as PyTorch), uint8 -64 is 192.
  const Tensor u = Make(dtypes::UInt8(), "1:1");
  const Tensor v = Make(dtypes::UInt8(), "1:1");
  const Tensor wide = Make(dtypes::Float32(), "1:1");
  ASSERT_TRUE(Fill(u, Scalar::Int(64)).ok());
  ASSERT_TRUE(NegOut(wide, u).ok());
  EXPECT_EQ(GetItem(wide, IntTuple(0))->as_double(), 192.0);
  ASSERT_TRUE(Fill(u, Scalar::Int(200)).ok());
  ASSERT_TRUE(Fill(v, Scalar::Int(100)).ok());
  ASSERT_TRUE(AddOut(wide, u, v).ok());
  EXPECT_EQ(GetItem(wide, IntTuple(0))->as_double(), 44.0);
  // AddOut into float64 still computes in the promoted float32.
  const Tensor out = Make(dtypes::Float64(), "1:1");
  ASSERT_TRUE(Fill(i, Scalar::Int(16777217)).ok());
  ASSERT_TRUE(AddOut(out, i, f).ok());
  EXPECT_EQ(GetItem(out, IntTuple(0))->as_double(), 16777216.0);
}

}  // namespace
}  // namespace strata
