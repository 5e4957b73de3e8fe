// The checks every operation family shares, run before any effect: host data,
// walkable modes, writable (injective) destinations, broadcasting, aliasing;
// and the shape and dtype helpers the families use.
#ifndef STRATA_OPS_INTERNAL_CHECKS_H_
#define STRATA_OPS_INTERNAL_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "dtype/dtype.h"
#include "dtype/scalar_type.h"
#include "layout/layout.h"

namespace strata {
namespace ops_internal {

// "(4,8)".
std::string ShapeText(const std::vector<int64_t>& shape);
// The logical dtype of a Tensor that passed RequireKernelTensor.
inline const SimpleDType& DTypeOf(const Tensor& t) {
  return *t.dtype().AsSimple();
}

// Whether RequireHostData lets an empty Tensor pass without host data.
enum class EmptyTensors { kPass, kNeedHostData };

// ValueError "<op>: the <class> carrier of <dtype> holds no host data" unless
// the carrier holds host data. An empty Tensor passes unless `empty` is
// kNeedHostData (an export hands out a data pointer even for no values).
absl::Status RequireHostData(const Tensor& t, absl::string_view op,
                             EmptyTensors empty = EmptyTensors::kPass);
// RequireHostData, and every top-level mode walkable by ForEachIndex within
// the offset-table budget (NOTE [ Offset-table budget ] in checks.cc).
absl::Status RequireData(const Tensor& t, absl::string_view op);
// ValueError "<op>: cannot write through the read-only <carrier described>"
// for a read-only carrier (NOTE [ Read-only carriers ] in carrier/carrier.h):
// the one check every write makes before any effect, whatever the Tensor's
// size.
absl::Status RequireMutableCarrier(const Tensor& t, absl::string_view op);
// RequireMutableCarrier, RequireData, and a layout proven to reach each
// carrier value at most once (NOTE [ Proving a write injective ] in
// checks.cc).
absl::Status RequireWritable(const Tensor& t, absl::string_view op);

// NumPy broadcasting of two shapes (ValueError naming both when they do not).
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(
    absl::string_view op, const std::vector<int64_t>& a,
    const std::vector<int64_t>& b);
// ValueError unless `from` broadcasts to exactly `to`.
absl::Status RequireBroadcastsTo(absl::string_view op,
                                 const std::vector<int64_t>& from,
                                 const std::vector<int64_t>& to);

// Whether the memory the two Tensors reach may intersect: their carriers'
// bytes, not their identities, decide (NOTE [ Aliasing by address ]).
bool MayOverlap(const Tensor& a, const Tensor& b);
// The same values in the same order: one start address, value width and
// layout.
bool SameView(const Tensor& a, const Tensor& b);

// Calls f(T{}) with T the C++ type of a dtype whose values are plain C++
// arithmetic values (the integers, float32, float64) and returns true;
// false for every other dtype (NOTE [ One dtype switch ]).
template <typename F>
bool DispatchNative(const SimpleDType& d, F&& f) {
  if (!d.scalar_type()) return false;
  return ScalarTypeSwitch(*d.scalar_type(), [&](auto type) {
    constexpr ScalarType kType = decltype(type)::value;
    if constexpr (kIsNativeArithmetic<kType>) {
      f(typename ScalarTraits<kType>::Storage{});
      return true;
    } else {
      return false;
    }
  });
}

// Whether arithmetic computes in `d` (a built-in, not a narrow storage float).
inline bool IsArithmetic(const SimpleDType& d) {
  return d.scalar_type() && IsArithmeticType(*d.scalar_type());
}

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_CHECKS_H_
