// Stress: 8 threads build, view, dump and snapshot representations over shared
// carriers while another thread mutates those carriers. Checked: versions
// advance monotonically as every reader sees them, snapshots hold each carrier
// once with a version no later than the carrier's, and nothing races (run under
// --config=tsan in CI).
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "proto/codec.h"
#include "tests/test_util.h"
#include "views/views.h"

namespace strata {
namespace {

using testing::L;

TEST(ConcurrencyTest, ReadersAndAMutatorShareCarriers) {
  std::shared_ptr<Carrier> values =
      *HostCarrier::Create(*dtypes::Float8E4M3FN(), 256);
  std::shared_ptr<Carrier> scales =
      *HostCarrier::Create(*dtypes::Float8E8M0FNU(), 8);
  std::shared_ptr<Carrier> floats =
      *HostCarrier::Create(*dtypes::Float32(), 64);
  const Tensor writable = *Tensor::Create(floats, 0, L("(8,8):(8,1)"));
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};

  std::thread mutator([&] {
    int64_t n = 0;
    while (!stop.load()) {
      if (!Fill(writable, Scalar::Float(static_cast<double>(n++))).ok())
        ++failures;
      values->BumpVersion();  // As a kernel writing the fp8 values would.
      scales->BumpVersion();
    }
  });

  constexpr int kReaders = 8;
  constexpr int kIterations = 300;
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      uint64_t last_values = 0, last_scales = 0, last_floats = 0;
      for (int i = 0; i < kIterations; ++i) {
        auto rep = Representation::Create(
            dtypes::MXFP8E4M3(),
            {{dtypes::Float8E4M3FN(), values, 0, L("(4,(32,2)):(64,(1,32))")},
             {dtypes::Float8E8M0FNU(), scales, 0, L("(4,2):(2,1)")}},
            {L("(4,(32,2)):(1,(0,4))")});
        if (!rep.ok()) {
          ++failures;
          continue;
        }
        const Tensor mx = MakeTensor(*rep);
        auto view = (r % 2) ? Permute(mx, {1, 0}) : Slice(mx, 0, 1, 3);
        if (!view.ok()) ++failures;
        auto plain =
            Slice(*Tensor::Create(floats, 0, L("(8,8):(8,1)")), 1, 0, 4);
        if (!plain.ok()) ++failures;
        const std::string text =
            ToText(ToProto(view.ok() ? *view : mx));  // Metadata only.
        if (text.find("mxfp8_e4m3") == std::string::npos) ++failures;
        if (!plain.ok()) continue;
        for (const Tensor* t : {&mx, static_cast<const Tensor*>(&*plain)}) {
          const MutationSnapshot snapshot = t->Snapshot();
          for (size_t a = 0; a < snapshot.size(); ++a) {
            for (size_t b = a + 1; b < snapshot.size(); ++b) {
              if (snapshot[a].carrier == snapshot[b].carrier) ++failures;
            }
            const CarrierVersion& v = snapshot[a];
            if (v.version > v.carrier->version()) ++failures;
            uint64_t* last = v.carrier == values.get()   ? &last_values
                             : v.carrier == scales.get() ? &last_scales
                                                         : &last_floats;
            if (v.version < *last)
              ++failures;  // Monotonic as this thread sees it.
            *last = v.version;
          }
        }
      }
    });
  }
  for (std::thread& t : readers) t.join();
  stop.store(true);
  mutator.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(floats->version(), 0u);
  EXPECT_EQ(values->version(), scales->version());
}

}  // namespace
}  // namespace strata
