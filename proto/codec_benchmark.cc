// bazel run --config=opt //proto:codec_benchmark
#include <string>

#include "benchmark/benchmark.h"
#include "carrier/carrier.h"
#include "dtype/registry.h"
#include "layout/layout.h"
#include "proto/codec.h"
#include "proto/examples.h"

namespace strata {
namespace {

Tensor Example(int which, bool mib) {
  if (!mib) return *MakeExample(which == 0 ? "float32_4x8" : "mxfp8_4x64");
  // 1 MiB of values: 512x512 float32, or a 1024x1024 mxfp8 tensor.
  if (which == 0) {
    auto c = *HostCarrier::Create(*dtypes::Float32(), 512 * 512);
    return *Tensor::Create(c, 0, *ParseLayout("(512,512):(512,1)"));
  }
  return *MakeExample("mxfp8_4x64");
}

void BM_ToProto(benchmark::State& state) {
  const Tensor t = Example(state.range(0), state.range(1));
  for (auto _ : state)
    benchmark::DoNotOptimize(ToProto(t, {state.range(1) != 0}));
}
void BM_TextDump(benchmark::State& state) {
  const auto p =
      ToProto(Example(state.range(0), state.range(1)), {state.range(1) != 0});
  for (auto _ : state) benchmark::DoNotOptimize(ToText(p));
}
void BM_TextParse(benchmark::State& state) {
  const std::string text = ToText(
      ToProto(Example(state.range(0), state.range(1)), {state.range(1) != 0}));
  for (auto _ : state) benchmark::DoNotOptimize(ParseText(text));
}
void BM_Replay(benchmark::State& state) {
  const auto p =
      ToProto(Example(state.range(0), state.range(1)), {state.range(1) != 0});
  for (auto _ : state) benchmark::DoNotOptimize(Replay(p));
}
// Args: {0 one-level | 1 two-level, 0 metadata | 1 with 1 MiB data
// (one-level)}.
#define STRATA_CODEC_ARGS \
  ->Args({0, 0})->Args({1, 0})->Args({0, 1})->Unit(benchmark::kMicrosecond)
BENCHMARK(BM_ToProto) STRATA_CODEC_ARGS;
BENCHMARK(BM_TextDump) STRATA_CODEC_ARGS;
BENCHMARK(BM_TextParse) STRATA_CODEC_ARGS;
BENCHMARK(BM_Replay) STRATA_CODEC_ARGS;

}  // namespace
}  // namespace strata
