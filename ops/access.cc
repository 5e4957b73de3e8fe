// Coordinate access: GetItem and SetItem (ops.h).
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/internal/checks.h"
#include "ops/internal/element_io.h"
#include "ops/internal/require.h"
#include "ops/ops.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

using ops_internal::DTypeOf;
using ops_internal::IsIntegral;
using ops_internal::LoadDouble;
using ops_internal::LoadInt;
using ops_internal::RequireHostData;
using ops_internal::RequireKernelTensor;
using ops_internal::StoreScalar;

namespace {

// The layout index of a coordinate with one component per top-level mode (an
// integer for rank 1); a component is linear within its mode, or hierarchical
// and congruent.
absl::StatusOr<int64_t> CoordinateIndex(const Tensor& t, const IntTuple& coord,
                                        absl::string_view op) {
  const Layout& layout = t.layout();
  const int64_t rank = layout.shape().is_leaf() ? 1 : layout.rank();
  const int64_t given = coord.is_leaf() ? 1 : coord.rank();
  if (given != rank) {
    return ValueErrorCat(op, ": coordinate ", coord.ToString(), " has ", given,
                         " components; the Tensor ", layout.ToString(),
                         " has rank ", rank);
  }
  if (layout.shape().is_leaf() && !coord.is_leaf())
    return layout.Crd2Idx(coord[0]);
  if (coord.SameStructure(layout.shape())) {
    // Fully congruent (one integer per leaf): a bounds-checked dot product.
    const auto c = coord.leaves();
    const auto extents = layout.shape().leaves();
    const auto strides = layout.stride().leaves();
    int64_t index = 0;
    for (size_t k = 0; k < c.size(); ++k) {
      if (c[k] < 0 || c[k] >= extents[k])
        return layout.Crd2Idx(coord);  // The error.
      index += c[k] * strides[k];
    }
    return index;
  }
  return layout.Crd2Idx(coord);
}

}  // namespace

absl::StatusOr<Scalar> GetItem(const Tensor& t, const IntTuple& coord) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(t, "GetItem"));
  STRATA_RETURN_IF_ERROR(RequireHostData(t, "GetItem"));
  STRATA_ASSIGN_OR_RETURN(const int64_t index,
                          CoordinateIndex(t, coord, "GetItem"));
  const SimpleDType& d = DTypeOf(t);
  const void* data = t.carrier()->data();
  if (d.is_bool())
    return Scalar::Bool(LoadInt(d, data, t.offset() + index) != 0);
  if (IsIntegral(d)) return Scalar::Int(LoadInt(d, data, t.offset() + index));
  return Scalar::Float(LoadDouble(d, data, t.offset() + index));
}

absl::Status SetItem(const Tensor& t, const IntTuple& coord, Scalar value) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(t, "SetItem"));
  STRATA_RETURN_IF_ERROR(ops_internal::RequireMutableCarrier(t, "SetItem"));
  STRATA_RETURN_IF_ERROR(RequireHostData(t, "SetItem"));
  STRATA_ASSIGN_OR_RETURN(const int64_t index,
                          CoordinateIndex(t, coord, "SetItem"));
  StoreScalar(DTypeOf(t), t.carrier()->mutable_data(), t.offset() + index,
              value);
  t.carrier()->BumpVersion();
  return absl::OkStatus();
}

}  // namespace strata
