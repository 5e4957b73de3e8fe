// The fuzzers' invariant checks. A failed check prints its file, line and
// condition (and the status, where one is given) before it traps, so that a
// crash found by CI on another machine is explained by its log alone, even
// when the input is too large for libFuzzer to print and the run's scratch
// directory is gone.
#ifndef STRATA_TESTS_FUZZ_FUZZ_CHECK_H_
#define STRATA_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>

#include "absl/status/status.h"
#include "util/errors.h"

namespace strata {
namespace fuzz {

[[noreturn]] inline void CheckFailed(const char* file, int line,
                                     const char* condition,
                                     const absl::Status* status) {
  std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, condition);
  if (status != nullptr) {
    std::fprintf(stderr, "  status: %s\n", FormatError(*status).c_str());
  }
  std::fflush(stderr);
  __builtin_trap();
}

}  // namespace fuzz
}  // namespace strata

#define FUZZ_CHECK(condition)                                               \
  do {                                                                      \
    if (!(condition)) {                                                     \
      ::strata::fuzz::CheckFailed(__FILE__, __LINE__, #condition, nullptr); \
    }                                                                       \
  } while (0)

// As FUZZ_CHECK, printing `status` (an absl::Status) where the check fails.
#define FUZZ_CHECK_STATUS(condition, status)                      \
  do {                                                            \
    if (!(condition)) {                                           \
      const ::absl::Status fuzz_check_status = (status);          \
      ::strata::fuzz::CheckFailed(__FILE__, __LINE__, #condition, \
                                  &fuzz_check_status);            \
    }                                                             \
  } while (0)

#endif  // STRATA_TESTS_FUZZ_FUZZ_CHECK_H_
