// bazel run --config=opt //core:tensor_benchmark
// (STRATA_BENCH_THREADED=1: as a multi-threaded process,
// layout/bench_threads.h)
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor.h"
#include "dtype/registry.h"
#include "layout/bench_threads.h"
#include "layout/layout.h"

namespace strata {
namespace {

std::shared_ptr<Carrier> FloatCarrier(int64_t size) {
  return *HostCarrier::Create(*dtypes::Float32(), size);
}

void TensorCreate(benchmark::State& state, const char* layout_text) {
  const Layout layout = *ParseLayout(layout_text);
  const auto carrier = FloatCarrier(layout.cosize());
  if (testing::BenchmarksThreaded()) state.SetLabel("threaded");
  for (auto _ : state) {
    benchmark::DoNotOptimize(Tensor::Create(carrier, 0, layout));
  }
}
BENCHMARK_CAPTURE(TensorCreate, rank1, "1024:1");
BENCHMARK_CAPTURE(TensorCreate, rank2, "(32,64):(64,1)");
BENCHMARK_CAPTURE(TensorCreate, rank4, "(8,16,32,64):(32768,2048,64,1)");

// A two-level mxfp8-shaped representation over 2^30 logical values: (2^15,
// 2^15) row-major values and one scale per 32 along the last mode. Validation
// is analytic, so this costs the same as a tiny one. Recorded carriers:
// metadata only, nothing allocated.
void RepresentationCreateTwoLevel2e30(benchmark::State& state) {
  const int64_t n = int64_t{1} << 15;
  const auto values = RecordedCarrier::Create(*dtypes::Float8E4M3FN(), n * n);
  const auto scales =
      RecordedCarrier::Create(*dtypes::Float8E8M0FNU(), n * (n / 32));
  const Layout l0 =
      *Layout::Create(IntTuple::Tuple({n, n}), IntTuple::Tuple({n, 1}));
  const Layout l1 = *Layout::Create(IntTuple::Tuple({n, n / 32}),
                                    IntTuple::Tuple({n / 32, 1}));
  // S_0 maps (r, c) to scale coordinate (r, c / 32), linear index r + n * (c /
  // 32).
  const Layout s0 =
      *Layout::Create(IntTuple::Tuple({n, IntTuple::Tuple({32, n / 32})}),
                      IntTuple::Tuple({1, IntTuple::Tuple({0, n})}));
  const Layout l0_hier =
      *Layout::Create(IntTuple::Tuple({n, IntTuple::Tuple({32, n / 32})}),
                      IntTuple::Tuple({n, IntTuple::Tuple({1, 32})}));
  for (auto _ : state) {
    std::vector<SubtensorCandidate> subtensors = {
        {dtypes::Float8E4M3FN(), values, 0, l0_hier},
        {dtypes::Float8E8M0FNU(), scales, 0, l1}};
    auto rep = Representation::Create(dtypes::MXFP8E4M3(),
                                      std::move(subtensors), {s0});
    if (!rep.ok()) state.SkipWithError("representation did not validate");
    benchmark::DoNotOptimize(rep);
  }
  state.counters["logical_values"] = static_cast<double>(n * n);
  (void)l0;
}
BENCHMARK(RepresentationCreateTwoLevel2e30);

void Snapshot(benchmark::State& state) {
  const auto carrier = FloatCarrier(1024);
  const Tensor t = *Tensor::Create(carrier, 0, *ParseLayout("1024:1"));
  for (auto _ : state) benchmark::DoNotOptimize(t.Snapshot());
}
BENCHMARK(Snapshot);

}  // namespace
}  // namespace strata
