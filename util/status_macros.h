// Strata's one propagation idiom (after TensorStore's util/status.h):
//
// clang-format off
//   STRATA_RETURN_IF_ERROR(expr);            // expr is an absl::Status
//   STRATA_ASSIGN_OR_RETURN(lhs, expr);      // expr is an absl::StatusOr<T>
// clang-format on
//
// Both return the failing status from the enclosing function unchanged.
#ifndef STRATA_UTIL_STATUS_MACROS_H_
#define STRATA_UTIL_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define STRATA_RETURN_IF_ERROR(expr)                       \
  do {                                                     \
    const ::absl::Status strata_status_internal_ = (expr); \
    if (!strata_status_internal_.ok()) {                   \
      return strata_status_internal_;                      \
    }                                                      \
  } while (false)

#define STRATA_STATUS_MACROS_CONCAT_INNER_(x, y) x##y
#define STRATA_STATUS_MACROS_CONCAT_(x, y) \
  STRATA_STATUS_MACROS_CONCAT_INNER_(x, y)

#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL_(           \
      STRATA_STATUS_MACROS_CONCAT_(strata_statusor_, __LINE__), lhs, expr)

#define STRATA_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) {                                    \
    return std::move(statusor).status();                   \
  }                                                        \
  lhs = *std::move(statusor)

#endif  // STRATA_UTIL_STATUS_MACROS_H_
