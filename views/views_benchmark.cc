// bazel run --config=opt //views:views_benchmark
// Each view on a rank-4 one-level float32 Tensor of shape (8,16,32,64) and on a
// two-level mxfp8 Tensor (values (8,16,32,64), one scale per 32 of the last
// mode). (STRATA_BENCH_THREADED=1: as a multi-threaded process,
// layout/bench_threads.h.)
#include <cstdint>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "layout/bench_threads.h"
#include "layout/layout.h"
#include "util/alloc_counter.h"
#include "views/narrow_level.h"
#include "views/views.h"

namespace strata {
namespace {

Tensor OneLevel() {
  const Layout l = *ParseLayout("(8,16,32,64):(32768,2048,64,1)");
  return *Tensor::Create(*HostCarrier::Create(*dtypes::Float32(), l.cosize()),
                         0, l);
}

Tensor TwoLevel() {
  auto values =
      RecordedCarrier::Create(*dtypes::Float8E4M3FN(), 8 * 16 * 32 * 64);
  auto scales =
      RecordedCarrier::Create(*dtypes::Float8E8M0FNU(), 8 * 16 * 32 * 2);
  auto rep = Representation::Create(
      dtypes::MXFP8E4M3(),
      {{dtypes::Float8E4M3FN(), values, 0,
        *ParseLayout("(8,16,32,(32,2)):(32768,2048,64,(1,32))")},
       {dtypes::Float8E8M0FNU(), scales, 0,
        // Scale (i,j,k,c) is stored row-major at 1024i + 64j + 2k + c, which
        // is also its level-1 linear index (the placement's domain is read
        // colexicographically, NOTE [ Boxes of a level's leaf grid ]), so S_0
        // maps value (i,j,k,(b,c)) to it. (A placement (8,16,32,2):(1024,64,
        // 2,1) under this S_0 named other scales, and a slice of it wrapped.)
        *ParseLayout("(2,32,16,8):(1,2,64,1024)")}},
      {*ParseLayout("(8,16,32,(32,2)):(1024,64,2,(0,1))")});
  return MakeTensor(*rep);
}

Tensor Make(benchmark::State& state) {
  return state.range(0) ? TwoLevel() : OneLevel();
}

// Times view(t) and reports the heap allocations per view as `allocs`
// (util/alloc_counter.h counts every operator new of the binary; a
// representation block taken from the thread's cache of released ones is not
// one, NOTE [ Recycled representation blocks ] in core/representation.cc).
// A view that fails is reported as the benchmark's error, never timed.
template <typename View>
void Run(benchmark::State& state, const Tensor& t, View view) {
  if (const auto first = view(t); !first.ok()) {
    state.SkipWithError(std::string(first.status().message()).c_str());
    return;
  }
  if (testing::BenchmarksThreaded()) state.SetLabel("threaded");
  const int64_t before = testing::AllocationCount();
  for (auto _ : state) benchmark::DoNotOptimize(view(t));
  state.counters["allocs"] = benchmark::Counter(
      static_cast<double>(testing::AllocationCount() - before),
      benchmark::Counter::kAvgIterations);
}

void BM_Permute(benchmark::State& state) {
  const Tensor t = Make(state);
  const std::vector<int64_t> perm = {3, 1, 2, 0};
  Run(state, t, [&](const Tensor& x) { return Permute(x, perm); });
}
void BM_SliceStep(benchmark::State& state) {
  const Tensor t = Make(state);
  Run(state, t, [](const Tensor& x) { return Slice(x, 1, 2, 14, 3); });
}
void BM_Reshape(benchmark::State& state) {
  const Tensor t = Make(state);
  const std::vector<int64_t> shape = {128, 32, 64};
  Run(state, t, [&](const Tensor& x) { return Reshape(x, shape); });
}
void BM_AsStrided(benchmark::State& state) {
  const Tensor t = Make(state);
  const Layout l = *ParseLayout("(4,16,32,64):(32768,2048,64,1)");
  Run(state, t, [&](const Tensor& x) { return AsStrided(x, l, 32768); });
}
void BM_BroadcastTo(benchmark::State& state) {
  const Tensor t = Make(state);
  const std::vector<int64_t> shape = {4, 8, 16, 32, 64};
  Run(state, t, [&](const Tensor& x) { return BroadcastTo(x, shape); });
}
void BM_Unsqueeze(benchmark::State& state) {
  const Tensor t = Make(state);
  Run(state, t, [](const Tensor& x) { return Unsqueeze(x, 2); });
}
void BM_Squeeze(benchmark::State& state) {
  const Tensor t = *Unsqueeze(Make(state), 2);
  Run(state, t, [](const Tensor& x) { return Squeeze(x, 2); });
}
// The narrowing of level 1 alone, as BM_SliceStep/1 and BM_AsStrided/1 do
// it (NOTE [ Boxes of a level's leaf grid ]): arg 0 the slice's reached
// layout, arg 1 AsStrided's.
void BM_NarrowLevel(benchmark::State& state) {
  const Layout placement = *ParseLayout("(2,32,16,8):(1,2,64,1024)");
  const int64_t base = state.range(0) ? 4096 : 128;
  const Layout reached =
      *ParseLayout(state.range(0) ? "(4,16,32,(32,2)):(1024,64,2,(0,1))"
                                  : "(8,4,32,(32,2)):(1024,192,2,(0,1))");
  views_internal::LevelBox box;
  Layout new_placement, new_adjacent;
  for (auto _ : state) {
    new_adjacent = reached;
    absl::Status status = views_internal::NarrowLevelInto(
        placement, base, new_adjacent, /*write_whole=*/false, &box,
        &new_placement, &new_adjacent);
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(new_placement);
    benchmark::DoNotOptimize(new_adjacent);
  }
}
BENCHMARK(BM_NarrowLevel)->Arg(0)->Arg(1);

BENCHMARK(BM_Permute)->Arg(0)->Arg(1);
BENCHMARK(BM_SliceStep)->Arg(0)->Arg(1);
BENCHMARK(BM_Reshape)->Arg(0)->Arg(1);
BENCHMARK(BM_AsStrided)->Arg(0)->Arg(1);
BENCHMARK(BM_BroadcastTo)->Arg(0)->Arg(1);
BENCHMARK(BM_Unsqueeze)->Arg(0)->Arg(1);
BENCHMARK(BM_Squeeze)->Arg(0)->Arg(1);

}  // namespace
}  // namespace strata
