// TensorAccess: the one door to a Tensor's internals.
//
// NOTE [ Tensor internals ]
// Strata's own packages (views, ops, proto, tools, tests) read a Tensor's
// authoritative representation and wrap validated representations as Tensors
// through this class, as TensorStore reaches an IndexTransform's internals
// only through TransformAccess. Its target, //core:tensor_access, is visible
// to Strata's packages only, and under --config=strict (Bazel's
// layering_check) a package that depends on //:strata cannot include it, nor
// core/representation.h: the public construction form stays Tensor::Create.
#ifndef STRATA_CORE_TENSOR_ACCESS_H_
#define STRATA_CORE_TENSOR_ACCESS_H_

#include <memory>
#include <utility>

#include "core/representation.h"
#include "core/tensor.h"

namespace strata {

class TensorAccess {
 public:
  // The Tensor's authoritative representation.
  static const Representation& representation(const Tensor& tensor) {
    return *tensor.representation_;
  }
  static const std::shared_ptr<const Representation>& shared_representation(
      const Tensor& tensor) {
    return tensor.representation_;
  }
  // A Tensor over a representation that Representation::Create (or
  // CreateOneLevel, a ViewDraft, OneLevelFlatView or
  // OneLevelViewWithPlacement) validated.
  static Tensor Make(std::shared_ptr<const Representation> representation) {
    return Tensor(std::move(representation));
  }
};

// A Tensor over a validated representation (for views, ops and replay).
inline Tensor MakeTensor(std::shared_ptr<const Representation> representation) {
  return TensorAccess::Make(std::move(representation));
}

}  // namespace strata

#endif  // STRATA_CORE_TENSOR_ACCESS_H_
