// bazel run --config=opt //ops:dequantize_benchmark (tools/bench.sh runs it)
// values.md section 4: Dequantize of each format to bfloat16 and float32, 64
// MiB of output on one thread, beside memcpy of the same 64 MiB in the same
// run (BM_Memcpy64MiB); also through a shard that starts 128 rows in, of a
// swizzled mxfp8 Tensor and of a ragged 128x128 one. Bytes processed are the
// output's bytes, so the rates compare with memcpy's directly.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "carrier/carrier.h"
#include "dtype/block_scale_rule.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/dequantize.h"
#include "ops/internal/dequantize_kernel.h"
#include "ops/internal/quantize_kernel.h"
#include "ops/quantize.h"
#include "ops/relayout.h"
#include "util/memcpy_benchmark.h"
#include "views/views.h"

namespace strata {
namespace {

// The kernels' run-time dispatch in the report's context (tools/bench.sh
// prints it beside every ratio).
const bool kContextAdded = [] {
  benchmark::AddCustomContext("simd_target",
                              ops_internal::DequantizeKernelTarget());
  benchmark::AddCustomContext("quantize_simd_target",
                              ops_internal::QuantizeKernelTarget());
  return true;
}();

constexpr int64_t kOutBytes = int64_t{64} << 20;

void BM_Memcpy64MiB(benchmark::State& state) {
  MemcpyBenchmark(state, kOutBytes);
}
BENCHMARK(BM_Memcpy64MiB)->Unit(benchmark::kMillisecond);

Tensor Quantized(const CompoundDType* format, int64_t rows, int64_t cols,
                 ScaleLayout layout) {
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), rows * cols);
  auto* f = static_cast<float*>(carrier->mutable_data());
  for (int64_t i = 0; i < rows * cols; ++i) {
    f[i] = std::sin(0.001f * i) * (1 + i % 97);
  }
  const Tensor src = *Tensor::Create(
      carrier, 0, *Layout::RowMajor(IntTuple::Flat({rows, cols})));
  const int64_t mode = FindBlockScaleRule(*format)->scaling().chosen_mode
                           ? 1
                           : kBlocksOfTheFormat;
  return *QuantizeBlockScaled(src, *format, mode, layout);
}

// `skip` rows of the quantized Tensor are sliced off the front (a shard).
void BM_Dequantize(benchmark::State& state, const CompoundDType* format,
                   ScaleLayout layout, const SimpleDType* to, int64_t skip,
                   int64_t extra) {
  const int64_t cols = 4096;
  const int64_t rows = kOutBytes / (to->bits() / 8) / cols;
  const Tensor whole = Quantized(format, rows + skip + extra, cols, layout);
  const Tensor t =
      skip + extra == 0 ? whole : *Slice(whole, 0, skip, rows + skip + extra);
  auto out_carrier = *HostCarrier::Create(*to, t.size());
  const Tensor out = *Tensor::Create(
      out_carrier, 0, *Layout::RowMajor(IntTuple::Flat(t.shape())));
  for (auto _ : state) {
    const absl::Status s = DequantizeInto(out, t);
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * t.size() * (to->bits() / 8));
}

// The names are BM_Dequantize/FMT/DTYPE, without spaces.
// clang-format off
#define STRATA_DEQUANTIZE(NAME, FORMAT, LAYOUT)                                  \
  BENCHMARK_CAPTURE(BM_Dequantize, NAME/bfloat16, FORMAT, LAYOUT,                \
                    dtypes::BFloat16(), 0, 0)->Unit(benchmark::kMillisecond);    \
  BENCHMARK_CAPTURE(BM_Dequantize, NAME/float32, FORMAT, LAYOUT,                 \
                    dtypes::Float32(), 0, 0)->Unit(benchmark::kMillisecond)
STRATA_DEQUANTIZE(mxfp8_e4m3, dtypes::MXFP8E4M3(), ScaleLayout::kRowMajor);
STRATA_DEQUANTIZE(mxfp8_e4m3_swizzled, dtypes::MXFP8E4M3(), ScaleLayout::kSwizzled128x4);
STRATA_DEQUANTIZE(mxfp4, dtypes::MXFP4(), ScaleLayout::kRowMajor);
STRATA_DEQUANTIZE(nvfp4, dtypes::NVFP4(), ScaleLayout::kRowMajor);
STRATA_DEQUANTIZE(nvfp4_ts, dtypes::NVFP4TS(), ScaleLayout::kRowMajor);
STRATA_DEQUANTIZE(nvfp4_ts_recip_swizzled, dtypes::NVFP4TSRecip(), ScaleLayout::kSwizzled128x4);
STRATA_DEQUANTIZE(fp8_e4m3_tensorwise, dtypes::FP8E4M3Tensorwise(), ScaleLayout::kRowMajor);
STRATA_DEQUANTIZE(fp8_e4m3_rowwise, dtypes::FP8E4M3Rowwise(), ScaleLayout::kRowMajor);
STRATA_DEQUANTIZE(fp8_e4m3_block1x128, dtypes::FP8E4M3Block1x128(), ScaleLayout::kRowMajor);
STRATA_DEQUANTIZE(fp8_e4m3_block128x128, dtypes::FP8E4M3Block128x128(), ScaleLayout::kRowMajor);
STRATA_DEQUANTIZE(q8_0, dtypes::Q8_0(), ScaleLayout::kRowMajor);
STRATA_DEQUANTIZE(q4_0, dtypes::Q4_0(), ScaleLayout::kRowMajor);
// A shard from row 128 of a swizzled mxfp8 Tensor, and of a ragged 128x128
// one (64 rows past the last whole block).
BENCHMARK_CAPTURE(BM_Dequantize, mxfp8_e4m3_swizzled_shard/bfloat16, dtypes::MXFP8E4M3(),
                  ScaleLayout::kSwizzled128x4, dtypes::BFloat16(), 128, 0)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Dequantize, fp8_e4m3_block128x128_ragged_shard/bfloat16,
                  dtypes::FP8E4M3Block128x128(), ScaleLayout::kRowMajor, dtypes::BFloat16(),
                  128, 64)
    ->Unit(benchmark::kMillisecond);
// clang-format on

// values.md section 4: relayout of a (4096, 4096) mxfp8 weight between
// row-major and swizzled scales against a memcpy of its scale bytes (512
// KiB); no code byte is written.
void BM_MemcpyScales4096x4096Mxfp8(benchmark::State& state) {
  MemcpyBenchmark(state, 4096 * 128);
}
BENCHMARK(BM_MemcpyScales4096x4096Mxfp8);

void BM_Relayout(benchmark::State& state, ScaleLayout from, ScaleLayout to) {
  const Tensor t = Quantized(dtypes::MXFP8E4M3(), 4096, 4096, from);
  for (auto _ : state) {
    auto moved = Relayout(t, to);
    if (!moved.ok()) {
      state.SkipWithError(std::string(moved.status().message()).c_str());
    }
    benchmark::DoNotOptimize(moved);
  }
  state.SetBytesProcessed(state.iterations() * 4096 * 128);
}
BENCHMARK_CAPTURE(BM_Relayout, mxfp8_e4m3 / row_major_to_swizzled,
                  ScaleLayout::kRowMajor, ScaleLayout::kSwizzled128x4);
BENCHMARK_CAPTURE(BM_Relayout, mxfp8_e4m3 / swizzled_to_row_major,
                  ScaleLayout::kSwizzled128x4, ScaleLayout::kRowMajor);

}  // namespace
}  // namespace strata
