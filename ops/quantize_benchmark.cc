// bazel run -c opt //ops:quantize_benchmark (or --config=opt)
// Quantizing a 4096x4096 float32 Tensor blocked along its last dim, in both
// scale layouts, reported as bytes of input read per second, next to memcpy of
// the same 64 MiB in the same run. The kernel is chosen at run time
// (Highway), so -march=native is not needed.
//
// BM_QuantizeInCache does the same on a 32x4096 source (512 KiB, which the
// L2 of current server cores holds with the output), next to BM_MemcpyInCache
// of the same bytes: the kernel's arithmetic alone, without the memory. A
// kernel whose in-cache ratio is well under its 64 MiB one is compute bound
// here, and will fall further behind memcpy on a machine with faster memory
// (tools/bench_report.py pairs each InCache row with the InCache memcpy).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "carrier/carrier.h"
#include "dtype/registry.h"
#include "ops/internal/quantize_kernel.h"
#include "ops/quantize.h"
#include "util/memcpy_benchmark.h"

namespace strata {
namespace {

// The kernels' run-time dispatch in the report's context (tools/bench.sh
// prints it beside every ratio).
const bool kContextAdded = [] {
  benchmark::AddCustomContext("simd_target",
                              ops_internal::QuantizeKernelTarget());
  return true;
}();

constexpr int64_t kN = 4096;
constexpr int64_t kInCacheRows = 32;
constexpr int64_t kInCacheCols = kN;

// A rows x cols row-major float32 Tensor of the benchmark's values.
Tensor MakeSource(int64_t rows, int64_t cols) {
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), rows * cols);
  auto* f = static_cast<float*>(carrier->mutable_data());
  for (int64_t i = 0; i < rows * cols; ++i)
    f[i] = std::sin(0.001f * i) * (1 + i % 97);
  const std::string layout = "(" + std::to_string(rows) + "," +
                             std::to_string(cols) + "):(" +
                             std::to_string(cols) + ",1)";
  return *Tensor::Create(carrier, 0, *ParseLayout(layout));
}

// One source for every benchmark of the binary: every format reads the same
// pages (a source made per benchmark took whichever mapping was spare at the
// time). This does not remove the run-to-run spread of this machine: one
// benchmark still differs by up to 2x between runs, later benchmarks of a
// run more often, with the same profile (every kernel slower alike).
const Tensor& Source() {
  static const Tensor* const source = new Tensor(MakeSource(kN, kN));
  return *source;
}

const Tensor& InCacheSource() {
  static const Tensor* const source =
      new Tensor(MakeSource(kInCacheRows, kInCacheCols));
  return *source;
}

// memcpy of n floats' bytes.
void Memcpy(benchmark::State& state, int64_t n) {
  MemcpyBenchmark(state, 4 * n);
}

void BM_Memcpy64MiB(benchmark::State& state) { Memcpy(state, kN * kN); }
BENCHMARK(BM_Memcpy64MiB)->Unit(benchmark::kMillisecond);

void BM_MemcpyInCache(benchmark::State& state) {
  Memcpy(state, kInCacheRows * kInCacheCols);
}
BENCHMARK(BM_MemcpyInCache)->Unit(benchmark::kMicrosecond);

void Quantize(benchmark::State& state, const Tensor& src,
              const CompoundDType* format, ScaleLayout layout,
              int64_t blocked_dim) {
  for (auto _ : state) {
    auto q = QuantizeBlockScaled(src, *format, blocked_dim, layout);
    if (!q.ok()) state.SkipWithError(std::string(q.status().message()).c_str());
    benchmark::DoNotOptimize(q);
  }
  state.SetBytesProcessed(state.iterations() * src.size() * 4);
}

// The formats and layouts, each run at 64 MiB (BM_Quantize/FORMAT/LAYOUT,
// in milliseconds) and in cache (BM_QuantizeInCache/FORMAT/LAYOUT, in
// microseconds); the names have no spaces.
struct QuantizeCase {
  const char* name;
  const CompoundDType* (*format)();
  ScaleLayout layout;
  int64_t blocked_dim;
};
constexpr QuantizeCase kCases[] = {
    {"mxfp8_e4m3/row_major", dtypes::MXFP8E4M3, ScaleLayout::kRowMajor, 1},
    {"mxfp8_e4m3/swizzled_128x4", dtypes::MXFP8E4M3,
     ScaleLayout::kSwizzled128x4, 1},
    {"mxfp4/row_major", dtypes::MXFP4, ScaleLayout::kRowMajor, 1},
    {"mxfp4/swizzled_128x4", dtypes::MXFP4, ScaleLayout::kSwizzled128x4, 1},
    {"nvfp4/row_major", dtypes::NVFP4, ScaleLayout::kRowMajor, 1},
    {"nvfp4/swizzled_128x4", dtypes::NVFP4, ScaleLayout::kSwizzled128x4, 1},
    // The family of ../shared/design/formats.md.
    {"nvfp4_ts/row_major", dtypes::NVFP4TS, ScaleLayout::kRowMajor, 1},
    {"nvfp4_ts/swizzled_128x4", dtypes::NVFP4TS, ScaleLayout::kSwizzled128x4,
     1},
    {"nvfp4_ts_recip/row_major", dtypes::NVFP4TSRecip, ScaleLayout::kRowMajor,
     1},
    {"fp8_e4m3_tensorwise/row_major", dtypes::FP8E4M3Tensorwise,
     ScaleLayout::kRowMajor, kBlocksOfTheFormat},
    {"fp8_e4m3_rowwise/row_major", dtypes::FP8E4M3Rowwise,
     ScaleLayout::kRowMajor, kBlocksOfTheFormat},
    {"fp8_e4m3_block1x128/row_major", dtypes::FP8E4M3Block1x128,
     ScaleLayout::kRowMajor, 1},
    {"fp8_e4m3_block128x128/row_major", dtypes::FP8E4M3Block128x128,
     ScaleLayout::kRowMajor, kBlocksOfTheFormat},
    {"q8_0/row_major", dtypes::Q8_0, ScaleLayout::kRowMajor,
     kBlocksOfTheFormat},
    {"q4_0/row_major", dtypes::Q4_0, ScaleLayout::kRowMajor,
     kBlocksOfTheFormat},
};

const bool kRegistered = [] {
  for (const bool in_cache : {false, true}) {
    for (const QuantizeCase& c : kCases) {
      const std::string name =
          std::string(in_cache ? "BM_QuantizeInCache/" : "BM_Quantize/") +
          c.name;
      benchmark::RegisterBenchmark(name.c_str(), [c, in_cache](
                                                     benchmark::State& state) {
        Quantize(state, in_cache ? InCacheSource() : Source(), c.format(),
                 c.layout, c.blocked_dim);
      })->Unit(in_cache ? benchmark::kMicrosecond : benchmark::kMillisecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace strata
