// The in-binary reference of Strata's throughput benchmarks: each kernel's
// rate is reported as a ratio to its own binary's memcpy
// (tools/bench_report.py), so every benchmark binary runs one, written once
// here.
#ifndef STRATA_UTIL_MEMCPY_BENCHMARK_H_
#define STRATA_UTIL_MEMCPY_BENCHMARK_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "benchmark/benchmark.h"

namespace strata {

// memcpy of `bytes` from one std::vector (touched: its pages are mapped)
// into another, its bytes counted `times` over (1: as the kernels that count
// their input or output; 2: read plus written, as the movement ops count).
inline void MemcpyBenchmark(benchmark::State& state, int64_t bytes,
                            int times = 1) {
  std::vector<char> a(static_cast<size_t>(bytes), 1);
  std::vector<char> b(static_cast<size_t>(bytes));
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * times * bytes);
}

}  // namespace strata

#endif  // STRATA_UTIL_MEMCPY_BENCHMARK_H_
