// Strata next to libtorch (PyTorch 1.13's C++ library), single-threaded, in one
// process. Pairs are named .../strata and .../torch; tools/bench_report.py
// reports the ratio. Tensors cross between the two through DLPack (ToDLPack ->
// at::fromDLPack), and the values are compared before any timing.
#include <ATen/DLConvertor.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "carrier/carrier.h"
#include "dtype/registry.h"
#include "ops/dlpack.h"
#include "ops/ops.h"
#include "ops/quantize.h"
#include "util/alloc_counter.h"
#include "views/views.h"

namespace strata {
namespace {

constexpr int64_t kN = 4096;

// A touched (written) Tensor: untouched fresh pages would make every first read
// fault.
Tensor Touched(std::vector<int64_t> shape) {
  Tensor t = *Zeros(*dtypes::Float32(), shape);
  (void)Fill(t, Scalar::Float(1.0));
  return t;
}

Tensor StrataRank4() {
  const Layout l = *ParseLayout("(8,16,32,64):(32768,2048,64,1)");
  return *Tensor::Create(*HostCarrier::Create(*dtypes::Float32(), l.cosize()),
                         0, l);
}

at::Tensor TorchRank4() { return torch::zeros({8, 16, 32, 64}); }

// Heap allocations per iteration since `before`, as the counter `allocs`
// (util/alloc_counter.h counts every operator new of the binary, libtorch's
// included; Strata's representation blocks recycled through a thread's cache
// are not, NOTE [ Recycled representation blocks ] in core/representation.cc).
void ReportAllocs(benchmark::State& state, int64_t before) {
  state.counters["allocs"] = benchmark::Counter(
      static_cast<double>(testing::AllocationCount() - before),
      benchmark::Counter::kAvgIterations);
}

// --- Construction ------------------------------------------------------------

void Create(benchmark::State& state, const char* layout_text, bool strata) {
  const Layout layout = *ParseLayout(layout_text);
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), layout.cosize());
  std::vector<int64_t> sizes, strides;
  const auto extents = layout.shape().leaves();
  const auto steps = layout.stride().leaves();
  sizes.assign(extents.begin(), extents.end());
  strides.assign(steps.begin(), steps.end());
  void* data = carrier->mutable_data();
  const int64_t before = testing::AllocationCount();
  if (strata) {
    for (auto _ : state)
      benchmark::DoNotOptimize(Tensor::Create(carrier, 0, layout));
  } else {
    for (auto _ : state)
      benchmark::DoNotOptimize(torch::from_blob(data, sizes, strides));
  }
  ReportAllocs(state, before);
}
BENCHMARK_CAPTURE(Create, rank1 / strata, "1024:1", true);
BENCHMARK_CAPTURE(Create, rank1 / torch, "1024:1", false);
BENCHMARK_CAPTURE(Create, rank2 / strata, "(32,64):(64,1)", true);
BENCHMARK_CAPTURE(Create, rank2 / torch, "(32,64):(64,1)", false);
BENCHMARK_CAPTURE(Create, rank4 / strata, "(8,16,32,64):(32768,2048,64,1)",
                  true);
BENCHMARK_CAPTURE(Create, rank4 / torch, "(8,16,32,64):(32768,2048,64,1)",
                  false);

// --- Views on (8,16,32,64) ---------------------------------------------------

// A view of `make()` (Strata) against the same view of libtorch's one-level
// (8,16,32,64) float Tensor.
#define STRATA_VIEW_PAIR_OF(name, make, strata_expr, torch_expr)          \
  void name##_strata(benchmark::State& state) {                           \
    const Tensor t = make();                                              \
    if (const auto first = (strata_expr); !first.ok()) {                  \
      state.SkipWithError(std::string(first.status().message()).c_str()); \
      return;                                                             \
    }                                                                     \
    const int64_t before = testing::AllocationCount();                    \
    for (auto _ : state) benchmark::DoNotOptimize(strata_expr);           \
    ReportAllocs(state, before);                                          \
  }                                                                       \
  void name##_torch(benchmark::State& state) {                            \
    const at::Tensor t = TorchRank4();                                    \
    const int64_t before = testing::AllocationCount();                    \
    for (auto _ : state) benchmark::DoNotOptimize(torch_expr);            \
    ReportAllocs(state, before);                                          \
  }                                                                       \
  BENCHMARK(name##_strata)->Name(#name "/strata");                        \
  BENCHMARK(name##_torch)->Name(#name "/torch");
#define STRATA_VIEW_PAIR(name, strata_expr, torch_expr) \
  STRATA_VIEW_PAIR_OF(name, StrataRank4, strata_expr, torch_expr)

const std::vector<int64_t> kPerm = {3, 1, 2, 0};
STRATA_VIEW_PAIR(Permute, Permute(t, kPerm), t.permute({3, 1, 2, 0}))
STRATA_VIEW_PAIR(SliceStep, Slice(t, 1, 2, 14, 3), t.slice(1, 2, 14, 3))
STRATA_VIEW_PAIR(Reshape, Reshape(t, {128, 32, 64}), t.view({128, 32, 64}))
// Both sides get their sizes prepared: the layout is parsed once, outside the
// timed loop, as libtorch's sizes and strides are built once.
const Layout& AsStridedLayout() {
  static const Layout* const layout =
      new Layout(*ParseLayout("(4,16,32,64):(32768,2048,64,1)"));
  return *layout;
}
const std::vector<int64_t> kAsStridedSizes = {4, 16, 32, 64};
const std::vector<int64_t> kAsStridedStrides = {32768, 2048, 64, 1};
STRATA_VIEW_PAIR(AsStrided, AsStrided(t, AsStridedLayout(), 32768),
                 t.as_strided(kAsStridedSizes, kAsStridedStrides, 32768))
STRATA_VIEW_PAIR(Expand, BroadcastTo(t, {4, 8, 16, 32, 64}),
                 t.expand({4, 8, 16, 32, 64}))
STRATA_VIEW_PAIR(Unsqueeze, Unsqueeze(t, 2), t.unsqueeze(2))

void Squeeze_strata(benchmark::State& state) {
  const Tensor t = *Unsqueeze(StrataRank4(), 2);
  if (const auto first = Squeeze(t, 2); !first.ok()) {
    state.SkipWithError(std::string(first.status().message()).c_str());
    return;
  }
  const int64_t before = testing::AllocationCount();
  for (auto _ : state) benchmark::DoNotOptimize(Squeeze(t, 2));
  ReportAllocs(state, before);
}
void Squeeze_torch(benchmark::State& state) {
  const at::Tensor t = TorchRank4().unsqueeze(2);
  const int64_t before = testing::AllocationCount();
  for (auto _ : state) benchmark::DoNotOptimize(t.squeeze(2));
  ReportAllocs(state, before);
}
BENCHMARK(Squeeze_strata)->Name("Squeeze/strata");
BENCHMARK(Squeeze_torch)->Name("Squeeze/torch");

// --- Block-scaled views against libtorch's one-level view of the same rank ---
// A 3-level nvfp4_ts Tensor (8,16,32,64) blocked along dim 3, and a
// fp8_e4m3_block128x128 Tensor (2,4,256,256), quantized from float32; the
// torch side is the same view of a one-level (8,16,32,64) float Tensor.

Tensor Quantized(const CompoundDType* format, std::vector<int64_t> shape,
                 int64_t blocked_dim) {
  return *QuantizeBlockScaled(Touched(shape), *format, blocked_dim);
}
Tensor NVFP4TSRank4() {
  static const Tensor* t =
      new Tensor(Quantized(dtypes::NVFP4TS(), {8, 16, 32, 64}, 3));
  return *t;
}
Tensor Block128Rank4() {
  static const Tensor* t = new Tensor(Quantized(
      dtypes::FP8E4M3Block128x128(), {2, 4, 256, 256}, kBlocksOfTheFormat));
  return *t;
}

STRATA_VIEW_PAIR_OF(PermuteNVFP4TS, NVFP4TSRank4, Permute(t, kPerm),
                    t.permute({3, 1, 2, 0}))
STRATA_VIEW_PAIR_OF(SliceNVFP4TS, NVFP4TSRank4, Slice(t, 1, 2, 14, 3),
                    t.slice(1, 2, 14, 3))
STRATA_VIEW_PAIR_OF(UnsqueezeNVFP4TS, NVFP4TSRank4, Unsqueeze(t, 2),
                    t.unsqueeze(2))
STRATA_VIEW_PAIR_OF(PermuteBlock128, Block128Rank4, Permute(t, kPerm),
                    t.permute({3, 1, 2, 0}))
// A tensor-parallel shard: rows [128, 256) of each matrix.
STRATA_VIEW_PAIR_OF(SliceBlock128, Block128Rank4, Slice(t, 2, 128, 256, 1),
                    t.slice(2, 16, 32, 1))
STRATA_VIEW_PAIR_OF(UnsqueezeBlock128, Block128Rank4, Unsqueeze(t, 2),
                    t.unsqueeze(2))

// --- DLPack ------------------------------------------------------------------

void ToDLPack_strata(benchmark::State& state) {
  const Tensor t = StrataRank4();
  const int64_t before = testing::AllocationCount();
  for (auto _ : state) {
    DLManagedTensor* m = *ToDLPack(t);
    benchmark::DoNotOptimize(m);
    m->deleter(m);
  }
  ReportAllocs(state, before);
}
void ToDLPack_torch(benchmark::State& state) {
  const at::Tensor t = TorchRank4();
  const int64_t before = testing::AllocationCount();
  for (auto _ : state) {
    DLManagedTensor* m = at::toDLPack(t);
    benchmark::DoNotOptimize(m);
    m->deleter(m);
  }
  ReportAllocs(state, before);
}
BENCHMARK(ToDLPack_strata)->Name("ToDLPack/strata");
BENCHMARK(ToDLPack_torch)->Name("ToDLPack/torch");

// --- Kernels on 4096x4096 float32 --------------------------------------------

void Memcpy64MiB(benchmark::State& state) {
  std::vector<char> a(kN * kN * 4, 1), b(kN * kN * 4);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kN * kN * 4);
}
BENCHMARK(Memcpy64MiB)->Name("Memcpy64MiB")->Unit(benchmark::kMillisecond);

void ContiguousTransposed_strata(benchmark::State& state) {
  const Tensor t = *Permute(Touched({kN, kN}), {1, 0});
  for (auto _ : state) benchmark::DoNotOptimize(Contiguous(t));
  state.SetBytesProcessed(state.iterations() * 2 * kN * kN * 4);
}
void ContiguousTransposed_torch(benchmark::State& state) {
  const at::Tensor t = torch::zeros({kN, kN}).t();
  for (auto _ : state) benchmark::DoNotOptimize(t.contiguous());
  state.SetBytesProcessed(state.iterations() * 2 * kN * kN * 4);
}
BENCHMARK(ContiguousTransposed_strata)
    ->Name("ContiguousTransposed/strata")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(ContiguousTransposed_torch)
    ->Name("ContiguousTransposed/torch")
    ->Unit(benchmark::kMillisecond);

void CopyTransposedInto_strata(benchmark::State& state) {
  const Tensor t = *Permute(Touched({kN, kN}), {1, 0});
  const Tensor out = Touched({kN, kN});
  for (auto _ : state) benchmark::DoNotOptimize(CopyFrom(out, t));
  state.SetBytesProcessed(state.iterations() * 2 * kN * kN * 4);
}
void CopyTransposedInto_torch(benchmark::State& state) {
  const at::Tensor t = torch::zeros({kN, kN}).t();
  at::Tensor out = torch::zeros({kN, kN});
  for (auto _ : state) benchmark::DoNotOptimize(out.copy_(t));
  state.SetBytesProcessed(state.iterations() * 2 * kN * kN * 4);
}
BENCHMARK(CopyTransposedInto_strata)
    ->Name("CopyTransposedInto/strata")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(CopyTransposedInto_torch)
    ->Name("CopyTransposedInto/torch")
    ->Unit(benchmark::kMillisecond);

void AddOut_strata(benchmark::State& state) {
  const Tensor a = Touched({kN, kN});
  const Tensor b = Touched({kN, kN});
  const Tensor out = Touched({kN, kN});
  for (auto _ : state) benchmark::DoNotOptimize(AddOut(out, a, b));
  state.SetBytesProcessed(state.iterations() * 3 * kN * kN * 4);
}
void AddOut_torch(benchmark::State& state) {
  const at::Tensor a = torch::zeros({kN, kN}), b = torch::zeros({kN, kN});
  at::Tensor out = torch::zeros({kN, kN});
  for (auto _ : state) benchmark::DoNotOptimize(at::add_out(out, a, b));
  state.SetBytesProcessed(state.iterations() * 3 * kN * kN * 4);
}
BENCHMARK(AddOut_strata)->Name("AddOut/strata")->Unit(benchmark::kMillisecond);
BENCHMARK(AddOut_torch)->Name("AddOut/torch")->Unit(benchmark::kMillisecond);

void Scatter_strata(benchmark::State& state) {
  const Tensor dst = Touched({1 << 22});
  const Tensor src = Touched({1 << 20});
  const Tensor index = *Zeros(*dtypes::Int64(), {1 << 20});
  std::mt19937_64 rng(1);
  auto* idx = static_cast<int64_t*>(index.carrier()->mutable_data());
  for (int64_t i = 0; i < (1 << 20); ++i) idx[i] = rng() % (1 << 22);
  for (auto _ : state) benchmark::DoNotOptimize(Scatter(dst, 0, index, src));
  state.SetItemsProcessed(state.iterations() * (1 << 20));
}
void Scatter_torch(benchmark::State& state) {
  at::Tensor dst = torch::zeros({1 << 22});
  const at::Tensor src = torch::zeros({1 << 20});
  const at::Tensor index = torch::randint(0, 1 << 22, {1 << 20}, torch::kLong);
  for (auto _ : state) benchmark::DoNotOptimize(dst.scatter_(0, index, src));
  state.SetItemsProcessed(state.iterations() * (1 << 20));
}
BENCHMARK(Scatter_strata)
    ->Name("Scatter1MInto4M/strata")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(Scatter_torch)
    ->Name("Scatter1MInto4M/torch")
    ->Unit(benchmark::kMillisecond);

// A Strata Tensor exported through DLPack and read by libtorch must hold the
// same values.
void CheckDLPackExchange() {
  Tensor t = *Zeros(*dtypes::Float32(), {6, 7});
  auto* data = static_cast<float*>(t.carrier()->mutable_data());
  for (int i = 0; i < 42; ++i) data[i] = 0.5f * i;
  const Tensor view = *Slice(*Permute(t, {1, 0}), 0, 1, 7, 2);
  at::Tensor imported = at::fromDLPack(*ToDLPack(view));
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 6; ++j) {
      const double strata_value =
          GetItem(view, IntTuple::Tuple({i, j}))->as_double();
      const double torch_value = imported.index({i, j}).item<float>();
      if (strata_value != torch_value) {
        std::fprintf(stderr,
                     "DLPack exchange mismatch at (%ld,%ld): %g vs %g\n",
                     static_cast<long>(i), static_cast<long>(j), strata_value,
                     torch_value);
        std::exit(1);
      }
    }
  }
  std::fprintf(
      stderr,
      "DLPack exchange: Strata (3,6) view read by libtorch, values equal\n");
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  at::set_num_threads(1);
  strata::CheckDLPackExchange();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
