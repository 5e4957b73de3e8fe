// Counts global operator new calls in the binary that links alloc_counter.cc,
// so that benchmarks can report (and tests can assert) allocation-free paths.
#ifndef STRATA_UTIL_ALLOC_COUNTER_H_
#define STRATA_UTIL_ALLOC_COUNTER_H_

#include <cstdint>

namespace strata {
namespace testing {

// Number of operator new calls so far in this process.
int64_t AllocationCount();

}  // namespace testing
}  // namespace strata

#endif  // STRATA_UTIL_ALLOC_COUNTER_H_
