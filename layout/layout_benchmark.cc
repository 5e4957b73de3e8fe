// bazel run --config=opt //layout:layout_benchmark
// Each benchmark also reports allocs/op: layouts of <= 8 leaves live inline.
#include <cstdint>
#include <string>

#include "benchmark/benchmark.h"
#include "layout/algebra.h"
#include "layout/layout.h"
#include "util/alloc_counter.h"

namespace strata {
namespace {

Layout L(const char* text) { return *ParseLayout(text); }

// Runs body per iteration and reports allocations per iteration.
template <typename Body>
void Run(benchmark::State& state, Body body) {
  const int64_t before = testing::AllocationCount();
  for (auto _ : state) body();
  state.counters["allocs/op"] = benchmark::Counter(
      static_cast<double>(testing::AllocationCount() - before),
      benchmark::Counter::kAvgIterations);
}

void BM_Crd2IdxLinearRank4(benchmark::State& state) {
  const Layout l = L("(8,16,32,64):(32768,2048,64,1)");
  int64_t i = 0;
  Run(state, [&] {
    benchmark::DoNotOptimize(l(i));
    i = (i + 7919) & (l.size() - 1);
  });
}
BENCHMARK(BM_Crd2IdxLinearRank4);

void BM_Crd2IdxCheckedRank4(benchmark::State& state) {
  const Layout l = L("(8,16,32,64):(32768,2048,64,1)");
  const IntTuple crd = IntTuple::Tuple({3, 5, 7, 11});
  Run(state, [&] { benchmark::DoNotOptimize(l.Crd2Idx(crd)); });
}
BENCHMARK(BM_Crd2IdxCheckedRank4);

void BM_Idx2CrdRank4(benchmark::State& state) {
  const IntTuple shape = IntTuple::Tuple({8, 16, 32, 64});
  int64_t i = 0;
  Run(state, [&] {
    benchmark::DoNotOptimize(Idx2Crd(i, shape));
    i = (i + 7919) & ((1 << 18) - 1);
  });
}
BENCHMARK(BM_Idx2CrdRank4);

void BM_CosizeCreate(benchmark::State& state) {
  // Create computes and caches size, cosize and min_index: this is the analytic
  // cost.
  const IntTuple shape = IntTuple::Tuple({8, 16, 32, 64});
  const IntTuple stride = IntTuple::Tuple({-32768, 2048, 0, 1});
  Run(state, [&] {
    benchmark::DoNotOptimize(Layout::Create(shape, stride)->cosize());
  });
}
BENCHMARK(BM_CosizeCreate);

void BM_ParsePrint(benchmark::State& state) {
  const std::string text = "((2,2),(4,8)):((1,16),(2,64))";
  Run(state, [&] { benchmark::DoNotOptimize(ParseLayout(text)->ToString()); });
}
BENCHMARK(BM_ParsePrint);

void BM_CompositionRank3(benchmark::State& state) {
  const Layout a = L("(8,16,32):(512,32,1)");
  const Layout b = L("(4,8,16):(2,64,512)");
  Run(state, [&] { benchmark::DoNotOptimize(Composition(a, b)); });
}
BENCHMARK(BM_CompositionRank3);

void BM_LogicalDivideRank3(benchmark::State& state) {
  const Layout a = L("(8,16,32):(512,32,1)");
  const Layout b = L("(4,8):(1,32)");
  Run(state, [&] { benchmark::DoNotOptimize(LogicalDivide(a, b)); });
}
BENCHMARK(BM_LogicalDivideRank3);

}  // namespace
}  // namespace strata
