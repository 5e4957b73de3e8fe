#include "ops/dlpack.h"

#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/test_util.h"
#include "util/alloc_counter.h"
#include "util/errors.h"
#include "util/internal/block_cache.h"
#include "views/views.h"

namespace strata {
namespace {

using testing::Iota;
using testing::L;
using testing::RowMajorDecode;

// Every logical value equal, coordinate by coordinate.
void ExpectSameValues(const Tensor& a, const Tensor& b) {
  const std::vector<int64_t> shape = a.shape();
  ASSERT_EQ(b.shape(), shape);
  for (int64_t k = 0; k < a.size(); ++k) {
    const std::vector<int64_t> c = RowMajorDecode(k, shape);
    const IntTuple crd = c.size() == 1 ? IntTuple(c[0]) : IntTuple::Flat(c);
    ASSERT_EQ(GetItem(a, crd)->as_double(), GetItem(b, crd)->as_double());
  }
}

TEST(DLPackTest, RoundTripsEveryExportableDtype) {
  for (const SimpleDType* d :
       {dtypes::Bool(), dtypes::Int8(), dtypes::Int16(), dtypes::Int32(),
        dtypes::Int64(), dtypes::UInt8(), dtypes::Float16(), dtypes::BFloat16(),
        dtypes::Float32(), dtypes::Float64()}) {
    const Tensor t = Iota("(3,4):(4,1)", d);
    auto managed = ToDLPack(t);
    ASSERT_TRUE(managed.ok()) << d->name() << ": " << managed.status();
    EXPECT_EQ((*managed)->dl_tensor.dtype.bits, d->bits());
    EXPECT_EQ((*managed)->dl_tensor.byte_offset, 0u);
    auto back = FromDLPack(*managed);
    ASSERT_TRUE(back.ok()) << d->name() << ": " << back.status();
    if (d != dtypes::Bool()) {
      EXPECT_EQ(&back->dtype(), d);
      ExpectSameValues(t, *back);
    } else {
      EXPECT_EQ(&back->dtype(), dtypes::UInt8()) << "DLPack 0.6 has no bool";
    }
  }
}

TEST(DLPackTest, StridesOffsetsAndDataPointer) {
  const Tensor t = Iota("(4,6):(6,1)", dtypes::Float32(), 5);
  const Tensor view = *Slice(*Permute(t, {1, 0}), 0, 1, 6, 2);  // (3,4):(2,6)@6
  auto managed = ToDLPack(view);
  ASSERT_TRUE(managed.ok()) << managed.status();
  const DLTensor& d = (*managed)->dl_tensor;
  EXPECT_EQ(d.ndim, 2);
  EXPECT_EQ(d.shape[0], 3);
  EXPECT_EQ(d.shape[1], 4);
  EXPECT_EQ(d.strides[0], 2);
  EXPECT_EQ(d.strides[1], 6);
  EXPECT_EQ(d.data,
            static_cast<float*>(t.carrier()->mutable_data()) + view.offset());
  auto back = FromDLPack(*managed);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameValues(view, *back);
  // Negative strides: data still points at coordinate 0.
  const Tensor reversed = *Tensor::Create(t.carrier(), 23, L("(4,6):(-6,1)"));
  auto r = ToDLPack(reversed);
  ASSERT_TRUE(r.ok());
  auto rback = FromDLPack(*r);
  ASSERT_TRUE(rback.ok()) << rback.status();
  ExpectSameValues(reversed, *rback);
}

TEST(DLPackTest, HierarchicalModesExportWhenTheyCoalesce) {
  const Tensor t = Iota("((2,3),4):((1,2),6)", dtypes::Int32());
  auto ok = ToDLPack(t);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)->dl_tensor.shape[0], 6);
  (*ok)->deleter(*ok);
  const Tensor bad = Iota("((2,3),4):((12,1),3)", dtypes::Int32());
  auto refused = ToDLPack(bad);
  EXPECT_TRUE(IsValueError(refused.status()));
  EXPECT_NE(refused.status().message().find("does not coalesce"),
            absl::string_view::npos);
}

TEST(DLPackTest, RefusalsHaveNoEffect) {
  EXPECT_TRUE(
      IsValueError(ToDLPack(Iota("8:1", dtypes::Float4E2M1FN())).status()));
  EXPECT_TRUE(
      IsValueError(ToDLPack(Iota("8:1", dtypes::Float8E4M3FN())).status()));
  const Tensor recorded = *Tensor::Create(
      RecordedCarrier::Create(*dtypes::Float32(), 8), 0, L("8:1"));
  EXPECT_TRUE(IsValueError(ToDLPack(recorded).status()));
  auto values = *HostCarrier::Create(*dtypes::Float8E4M3FN(), 64);
  auto scales = *HostCarrier::Create(*dtypes::Float8E8M0FNU(), 2);
  const Tensor mx = MakeTensor(*Representation::Create(
      dtypes::MXFP8E4M3(),
      {{dtypes::Float8E4M3FN(), values, 0, L("(2,32):(32,1)")},
       {dtypes::Float8E8M0FNU(), scales, 0, L("2:1")}},
      {L("(2,32):(1,0)")}));
  const long uses = values.use_count();
  EXPECT_TRUE(IsOneSubtensorRequired(ToDLPack(mx).status()));
  EXPECT_EQ(values.use_count(), uses) << "no reference kept";
}

// The export of 0, 1, ..., 7 of `dtype`, which nothing but the export keeps
// alive; `watch` observes its carrier.
DLManagedTensor* ExportOnlyOwner(const SimpleDType* dtype,
                                 std::weak_ptr<Carrier>* watch) {
  const Tensor t = Iota("8:1", dtype);
  *watch = t.carrier();
  return *ToDLPack(t);
}

TEST(DLPackTest, TheManagedTensorKeepsTheCarrierAliveUntilItsDeleter) {
  std::weak_ptr<Carrier> watch;
  DLManagedTensor* managed = ExportOnlyOwner(dtypes::Float64(), &watch);
  ASSERT_FALSE(watch.expired());
  EXPECT_FALSE(watch.lock()->released());
  EXPECT_EQ(static_cast<double*>(managed->dl_tensor.data)[3], 3.0);
  managed->deleter(managed);
  EXPECT_TRUE(watch.expired());
}

// The export's block is recycled (ExportAllocator in ops/dlpack.cc): in a
// steady loop of exports and deleters, operator new is never called.
TEST(DLPackTest, ExportsInALoopAllocateNothing) {
  if (!util_internal::kBlockCacheRecycles) {
    GTEST_SKIP() << "AddressSanitizer: every block goes to operator new and "
                    "delete (which it replaces, uncounted)";
  }
  const Tensor t = Iota("(2,3,4,5):(60,20,5,1)");
  DLManagedTensor* warm = *ToDLPack(t);
  warm->deleter(warm);
  const int64_t before = testing::AllocationCount();
  for (int k = 0; k < 100; ++k) {
    auto managed = ToDLPack(t);
    ASSERT_TRUE(managed.ok()) << managed.status();
    ASSERT_EQ((*managed)->dl_tensor.ndim, 4);
    EXPECT_EQ((*managed)->dl_tensor.strides[1], 20);
    (*managed)->deleter(*managed);
  }
  EXPECT_EQ(testing::AllocationCount() - before, 0);
}

// A consumer may run the deleter on another thread: the block goes to that
// thread's list (or to operator delete), and the carrier is released.
TEST(DLPackTest, TheDeleterMayRunOnAnotherThread) {
  std::weak_ptr<Carrier> watch;
  DLManagedTensor* managed = ExportOnlyOwner(dtypes::Float32(), &watch);
  std::thread consumer([managed] { managed->deleter(managed); });
  consumer.join();
  EXPECT_TRUE(watch.expired());
  DLManagedTensor* again = *ToDLPack(Iota("4:1", dtypes::Float32()));
  EXPECT_EQ(static_cast<float*>(again->dl_tensor.data)[3], 3.0f);
  again->deleter(again);
}

TEST(DLPackTest, ImportCallsTheProducersDeleterExactlyOnce) {
  static int deletions = 0;
  deletions = 0;
  std::vector<float> memory = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  auto* managed = new DLManagedTensor{};
  managed->dl_tensor.data = memory.data();
  managed->dl_tensor.device = {kDLCPU, 0};
  managed->dl_tensor.ndim = 2;
  managed->dl_tensor.dtype = {kDLFloat, 32, 1};
  managed->dl_tensor.shape = shape;
  managed->dl_tensor.strides = nullptr;  // Compact row-major.
  managed->deleter = [](DLManagedTensor* self) {
    ++deletions;
    delete self;
  };
  {
    auto t = FromDLPack(managed);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(GetItem(*t, IntTuple::Tuple({1, 2}))->as_double(), 6);
    const Tensor view = *Slice(*t, 1, 1, 3);
    t = absl::UnknownError("drop");
    EXPECT_EQ(deletions, 0) << "the view still holds the carrier";
    EXPECT_EQ(GetItem(view, IntTuple::Tuple({0, 0}))->as_double(), 2);
  }
  EXPECT_EQ(deletions, 1);
  // A refused import leaves ownership with the caller: no deleter call.
  DLManagedTensor gpu{};
  gpu.dl_tensor.device = {kDLCUDA, 0};
  gpu.deleter = [](DLManagedTensor*) { ++deletions; };
  EXPECT_TRUE(IsValueError(FromDLPack(&gpu).status()));
  EXPECT_EQ(deletions, 1);
}

}  // namespace
}  // namespace strata
