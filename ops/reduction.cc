// Reductions: Sum (ops.h).
#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "dtype/registry.h"
#include "ops/internal/checks.h"
#include "ops/internal/element_io.h"
#include "ops/internal/iterate.h"
#include "ops/internal/require.h"
#include "ops/ops.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

using ops_internal::AlignedAccess;
using ops_internal::DTypeOf;
using ops_internal::ForEachIndex;
using ops_internal::IsArithmetic;
using ops_internal::LoadDouble;
using ops_internal::LoadInt;
using ops_internal::ModeAccess;
using ops_internal::RequireData;
using ops_internal::RequireKernelTensor;
using ops_internal::ShapeText;
using ops_internal::StoreDouble;
using ops_internal::StoreInt;

absl::StatusOr<Tensor> Sum(const Tensor& a) {
  std::vector<int64_t> all(a.shape().size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return Sum(a, all);
}

absl::StatusOr<Tensor> Sum(const Tensor& a, absl::Span<const int64_t> dims) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(a, "Sum"));
  STRATA_RETURN_IF_ERROR(RequireData(a, "Sum"));
  const SimpleDType& d = DTypeOf(a);
  if (!IsArithmetic(d)) {
    return TypeErrorCat("Sum: ", d.name(),
                        " is a storage type, not an arithmetic type");
  }
  const std::vector<int64_t> shape = a.shape();
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t m : dims) {
    if (m < 0 || m >= static_cast<int64_t>(shape.size()) || reduced[m]) {
      return ValueErrorCat("Sum: dim ", m,
                           " is out of range or repeated for rank ",
                           shape.size());
    }
    reduced[m] = true;
  }
  std::vector<int64_t> out_shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!reduced[i]) out_shape.push_back(shape[i]);
  }
  const SimpleDType& result = d.is_floating() ? d : *dtypes::Int64();
  STRATA_ASSIGN_OR_RETURN(Tensor out, Zeros(result, out_shape));
  // An empty input sums to zeros, which Zeros already holds: touching a large
  // output (the sum over the empty dim of a (0, 3037000499) Tensor) or an
  // accumulator of its size would cost memory for nothing.
  if (a.size() == 0) return out;
  // The accumulator, seen through a layout of a's shape with stride 0 on
  // reduced dims.
  std::vector<ModeAccess> acc_access(shape.size());
  {
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      if (reduced[i]) continue;
      acc_access[i].stride = shape[i] == 1 ? 0 : stride;
      stride *= shape[i];
    }
  }
  const std::array<std::vector<ModeAccess>, 2> ops = {
      acc_access, AlignedAccess(a.layout(), shape)};
  const void* in = a.carrier()->data();
  void* o = out.carrier()->mutable_data();
  if (d.is_floating()) {
    std::vector<double> acc(out.size(), 0.0);
    ForEachIndex<2>(shape, ops, {0, a.offset()},
                    [&](const std::array<int64_t, 2>& i) {
                      acc[i[0]] += LoadDouble(d, in, i[1]);
                    });
    for (int64_t i = 0; i < out.size(); ++i) StoreDouble(result, o, i, acc[i]);
  } else {
    std::vector<int64_t> acc(out.size(), 0);
    ForEachIndex<2>(
        shape, ops, {0, a.offset()}, [&](const std::array<int64_t, 2>& i) {
          acc[i[0]] =
              static_cast<int64_t>(static_cast<uint64_t>(acc[i[0]]) +
                                   static_cast<uint64_t>(LoadInt(d, in, i[1])));
        });
    for (int64_t i = 0; i < out.size(); ++i) StoreInt(result, o, i, acc[i]);
  }
  return out;
}

}  // namespace strata
