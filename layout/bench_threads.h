// STRATA_BENCH_THREADED=1 makes a benchmark binary that links this library
// start and join one thread before any benchmark runs, as every
// multi-threaded process has (libtorch starts its own, so the peer benchmarks
// of tools/peer always run so). From then on libstdc++ changes shared_ptr
// counts with locked instructions, where a process that never had a second
// thread changes them with plain ones: the difference between the two runs is
// what a Tensor or a view pays for its carrier's reference count.
#ifndef STRATA_LAYOUT_BENCH_THREADS_H_
#define STRATA_LAYOUT_BENCH_THREADS_H_

namespace strata {
namespace testing {

// Whether this process started its thread (a benchmark labels itself so).
bool BenchmarksThreaded();

}  // namespace testing
}  // namespace strata

#endif  // STRATA_LAYOUT_BENCH_THREADS_H_
