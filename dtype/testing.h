// Test helpers of the dtype package (testonly).
#ifndef STRATA_DTYPE_TESTING_H_
#define STRATA_DTYPE_TESTING_H_

#include <vector>

#include "absl/types/span.h"
#include "dtype/dtype.h"
#include "dtype/representation_rule.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"

namespace strata {
namespace testing {

// A frozen validation context for a rule alone (RepresentationRule tests).
class FrozenContext final : public RepresentationValidationContext {
 public:
  FrozenContext(const DType& dtype, std::vector<Layout> placements,
                std::vector<Layout> adjacent);
  const DType& logical_dtype() const override { return dtype_; }
  absl::Span<const SimpleDType* const> storage_dtypes() const override {
    return dtype_.storage_schema();
  }
  absl::Span<const Layout> placement_layouts() const override {
    return placements_;
  }
  absl::Span<const Layout> adjacent_layouts() const override {
    return adjacent_;
  }
  absl::Span<const IntTuple> level_shapes() const override { return shapes_; }

 private:
  const DType& dtype_;
  std::vector<Layout> placements_, adjacent_;
  std::vector<IntTuple> shapes_;
};

}  // namespace testing
}  // namespace strata

#endif  // STRATA_DTYPE_TESTING_H_
