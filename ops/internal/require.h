// The spec's rule for operations: everything but the eight pure layout views
// needs a one-subtensor Tensor, and says so before any allocation, mutation or
// kernel.
#ifndef STRATA_OPS_INTERNAL_REQUIRE_H_
#define STRATA_OPS_INTERNAL_REQUIRE_H_

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "dtype/dtype.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace ops_internal {

// OneSubtensorRequired error naming the op, the level count and the dtype, else
// OK.
inline absl::Status RequireOneSubtensor(const Tensor& tensor,
                                        absl::string_view op) {
  if (tensor.num_subtensors() == 1) return absl::OkStatus();
  return OneSubtensorRequiredError(absl::StrCat(
      op, " requires a one-subtensor Tensor; got ", tensor.num_subtensors(),
      " subtensors (logical dtype ", tensor.dtype().name(), ")"));
}

// For an operation that touches values: a one-subtensor Tensor (the error
// above) whose dtype is a built-in simple dtype (TypeError otherwise,
// NOTE [ One dtype switch ]), checked in that order.
inline absl::Status RequireKernelTensor(const Tensor& tensor,
                                        absl::string_view op) {
  STRATA_RETURN_IF_ERROR(RequireOneSubtensor(tensor, op));
  return RequireScalarType(tensor.dtype(), op).status();
}

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_REQUIRE_H_
