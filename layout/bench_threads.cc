#include "layout/bench_threads.h"

#include <cstdlib>
#include <thread>

namespace strata {
namespace testing {
namespace {

// Before main, so before the benchmarks register and run.
const bool kThreaded = [] {
  if (std::getenv("STRATA_BENCH_THREADED") == nullptr) return false;
  std::thread([] {}).join();
  return true;
}();

}  // namespace

bool BenchmarksThreaded() { return kThreaded; }

}  // namespace testing
}  // namespace strata
