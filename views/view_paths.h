// The general (composition) paths of Reshape and Slice, which the views take
// where their plain fast paths do not apply (NOTE [ Reshape by merging modes ]
// in views.cc); declared here so that tests can check that both paths agree.
#ifndef STRATA_VIEWS_VIEW_PATHS_H_
#define STRATA_VIEWS_VIEW_PATHS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"
#include "layout/layout.h"

namespace strata {
namespace views_internal {

// Reshape(tensor, target) by composition. Preconditions (ReshapeImpl checks
// them): no target extent is negative and their product is tensor.size().
absl::StatusOr<Tensor> ReshapeByComposition(const Tensor& tensor,
                                            absl::Span<const int64_t> target);

// Slice(tensor, dim, start, start + count * step, step) by composition.
// Preconditions (SliceImpl checks them): dim is a mode, step > 0, count =
// ceil((stop - start) / step) for a range [start, stop) within the mode.
absl::StatusOr<Tensor> SliceByComposition(const Tensor& tensor, int64_t dim,
                                          int64_t start, int64_t count,
                                          int64_t step);

// AsStrided(tensor, layout, offset) by composition (NOTE [ AsStrided by
// leaves ] in views.cc), with AsStrided's errors, unnamed.
absl::StatusOr<Tensor> AsStridedByComposition(const Tensor& tensor,
                                              const Layout& layout,
                                              int64_t offset);

}  // namespace views_internal
}  // namespace strata

#endif  // STRATA_VIEWS_VIEW_PATHS_H_
