// bazel run --config=opt //ops:ops_benchmark
// Single-threaded kernels next to memcpy of the same bytes in the same run.
// Bytes count reads plus writes (memcpy of N bytes moves 2N).
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "carrier/carrier.h"
#include "dtype/registry.h"
#include "ops/internal/transpose.h"
#include "ops/ops.h"
#include "util/memcpy_benchmark.h"
#include "views/views.h"

namespace strata {
namespace {

// The kernels' run-time dispatch in the report's context (tools/bench.sh
// prints it beside every ratio).
const bool kContextAdded = [] {
  benchmark::AddCustomContext("transpose_path",
                              ops_internal::TransposeKernelName());
  return true;
}();

constexpr int64_t kN = 4096;
constexpr int64_t kBytes = kN * kN * 4;

Tensor Matrix(float seed) {
  Tensor t = *Zeros(*dtypes::Float32(), {kN, kN});
  auto* f = static_cast<float*>(t.carrier()->mutable_data());
  for (int64_t i = 0; i < kN * kN; ++i)
    f[i] = seed + static_cast<float>(i % 1000);
  return t;
}

// memcpy of `bytes` between two std::vectors, counted as read and written.
void Memcpy(benchmark::State& state, int64_t bytes) {
  MemcpyBenchmark(state, bytes, 2);
}

void BM_Memcpy64MiB(benchmark::State& state) { Memcpy(state, kBytes); }
BENCHMARK(BM_Memcpy64MiB)->Unit(benchmark::kMillisecond);

// memcpy between two host carriers: the memory the transposes write (large
// carriers are huge-page mappings, NOTE [ Large host carriers ] in
// carrier.cc), where a std::vector's pages are 4 KiB: the fairer reference
// for them.
void BM_MemcpyHostCarriers64MiB(benchmark::State& state) {
  const Tensor a = *Zeros(*dtypes::Float32(), {kN, kN});
  const Tensor b = *Zeros(*dtypes::Float32(), {kN, kN});
  std::memset(a.carrier()->mutable_data(), 1, kBytes);
  std::memset(b.carrier()->mutable_data(), 0, kBytes);
  for (auto _ : state) {
    std::memcpy(b.carrier()->mutable_data(), a.carrier()->data(), kBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kBytes);
}
BENCHMARK(BM_MemcpyHostCarriers64MiB)->Unit(benchmark::kMillisecond);

// memcpy of 256 KiB, which stays in L2 with its copy: the in-cache
// reference of the transposes below (tools/bench_report.py pairs each
// ...InCache benchmark with it).
void BM_MemcpyInCache(benchmark::State& state) { Memcpy(state, 256 << 10); }
BENCHMARK(BM_MemcpyInCache)->Unit(benchmark::kMicrosecond);

void BM_ContiguousTransposed(benchmark::State& state) {
  const Tensor t = *Permute(Matrix(1), {1, 0});
  for (auto _ : state) benchmark::DoNotOptimize(Contiguous(t));
  state.SetBytesProcessed(state.iterations() * 2 * kBytes);
}
BENCHMARK(BM_ContiguousTransposed)->Unit(benchmark::kMillisecond);

// The same transpose of 64 MiB in other element widths: 8-byte float64
// (2048 x 4096), 2-byte bfloat16 (4096 x 8192) and 1-byte int8 (8192 x 8192);
// the bytes of other shapes are their own.
void BM_ContiguousTransposedOf(benchmark::State& state,
                               const SimpleDType& dtype, int64_t rows,
                               int64_t cols) {
  const int64_t bytes = rows * cols * dtype.bits() / 8;
  Tensor source = *Zeros(dtype, {rows, cols});
  std::memset(source.carrier()->mutable_data(), 1, bytes);
  const Tensor t = *Permute(source, {1, 0});
  for (auto _ : state) benchmark::DoNotOptimize(Contiguous(t));
  state.SetBytesProcessed(state.iterations() * 2 * bytes);
}
BENCHMARK_CAPTURE(BM_ContiguousTransposedOf, float64, *dtypes::Float64(),
                  kN / 2, kN)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ContiguousTransposedOf, bfloat16, *dtypes::BFloat16(), kN,
                  2 * kN)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ContiguousTransposedOf, int8, *dtypes::Int8(), 2 * kN,
                  2 * kN)
    ->Unit(benchmark::kMillisecond);

// The square case, 4096 x 4096 of 1 and 2 bytes (16 and 32 MiB).
BENCHMARK_CAPTURE(BM_ContiguousTransposedOf, int8_4096, *dtypes::Int8(), kN, kN)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ContiguousTransposedOf, bfloat16_4096, *dtypes::BFloat16(),
                  kN, kN)
    ->Unit(benchmark::kMillisecond);

// Thin transposes of the same 64 MiB: a few long rows into many short ones
// (an activation's [features, tokens] into [tokens, features]), and back.
BENCHMARK_CAPTURE(BM_ContiguousTransposedOf, int8_thin, *dtypes::Int8(), 16,
                  kBytes / 16)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ContiguousTransposedOf, int8_tall, *dtypes::Int8(),
                  kBytes / 16, 16)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ContiguousTransposedOf, bfloat16_thin, *dtypes::BFloat16(),
                  16, kBytes / 32)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ContiguousTransposedOf, bfloat16_tall, *dtypes::BFloat16(),
                  kBytes / 32, 16)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ContiguousTransposedOf, float32_thin, *dtypes::Float32(),
                  16, kBytes / 64)
    ->Unit(benchmark::kMillisecond);

// The same transposes of 256 KiB, in L2 with their output: the kernels'
// work without the memory (a machine with faster memory sees the ratio to
// memcpy fall toward this one).
void BM_ContiguousTransposedInCache(benchmark::State& state,
                                    const SimpleDType& dtype, int64_t rows,
                                    int64_t cols) {
  BM_ContiguousTransposedOf(state, dtype, rows, cols);
}
BENCHMARK_CAPTURE(BM_ContiguousTransposedInCache, int8, *dtypes::Int8(), 512,
                  512)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ContiguousTransposedInCache, bfloat16, *dtypes::BFloat16(),
                  256, 512)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ContiguousTransposedInCache, float32, *dtypes::Float32(),
                  256, 256)
    ->Unit(benchmark::kMicrosecond);

void BM_CopyFromTransposedIntoExisting(benchmark::State& state) {
  const Tensor t = *Permute(Matrix(1), {1, 0});
  const Tensor out = *Zeros(*dtypes::Float32(), {kN, kN});
  for (auto _ : state) benchmark::DoNotOptimize(CopyFrom(out, t));
  state.SetBytesProcessed(state.iterations() * 2 * kBytes);
}
BENCHMARK(BM_CopyFromTransposedIntoExisting)->Unit(benchmark::kMillisecond);

void BM_AddOutCompact(benchmark::State& state) {
  const Tensor a = Matrix(1), b = Matrix(2);
  const Tensor out = *Zeros(*dtypes::Float32(), {kN, kN});
  for (auto _ : state) benchmark::DoNotOptimize(AddOut(out, a, b));
  state.SetBytesProcessed(state.iterations() * 3 * kBytes);
}
BENCHMARK(BM_AddOutCompact)->Unit(benchmark::kMillisecond);

void BM_AddAllocating(benchmark::State& state) {
  const Tensor a = Matrix(1), b = Matrix(2);
  for (auto _ : state) benchmark::DoNotOptimize(Add(a, b));
  state.SetBytesProcessed(state.iterations() * 3 * kBytes);
}
BENCHMARK(BM_AddAllocating)->Unit(benchmark::kMillisecond);

void BM_Scatter1MInto4M(benchmark::State& state) {
  const Tensor dst = *Zeros(*dtypes::Float32(), {1 << 22});
  const Tensor src = *Zeros(*dtypes::Float32(), {1 << 20});
  const Tensor index = *Zeros(*dtypes::Int64(), {1 << 20});
  std::mt19937_64 rng(1);
  auto* idx = static_cast<int64_t*>(index.carrier()->mutable_data());
  for (int64_t i = 0; i < (1 << 20); ++i) idx[i] = rng() % (1 << 22);
  for (auto _ : state) benchmark::DoNotOptimize(Scatter(dst, 0, index, src));
  state.SetItemsProcessed(state.iterations() * (1 << 20));
}
BENCHMARK(BM_Scatter1MInto4M)->Unit(benchmark::kMillisecond);

void BM_GetItemRank2(benchmark::State& state) {
  const Tensor t = *Zeros(*dtypes::Float32(), {64, 64});
  const IntTuple c = IntTuple::Tuple({17, 33});
  for (auto _ : state) benchmark::DoNotOptimize(GetItem(t, c));
}
BENCHMARK(BM_GetItemRank2);

}  // namespace
}  // namespace strata
