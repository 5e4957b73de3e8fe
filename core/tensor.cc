#include "core/tensor.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/representation.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

absl::StatusOr<Tensor> Tensor::Create(std::shared_ptr<Carrier> carrier,
                                      int64_t offset, const Layout& layout) {
  if (carrier == nullptr) return TypeError("Tensor: carrier is not a Carrier");
  const DType& dtype = carrier->dtype();
  if (dtype.AsSimple() == nullptr) {
    return ValueErrorCat("Tensor: carrier dtype ", dtype.name(), " is a ",
                         dtype.kind_name(),
                         " dtype and cannot provide the conventional "
                         "one-subtensor storage schema");
  }
  auto representation =
      Representation::CreateOneLevel(std::move(carrier), offset, layout);
  if (!representation.ok()) return representation.status();
  return Tensor(*std::move(representation));
}

const std::shared_ptr<Carrier>& Tensor::carrier() const {
  return representation_->subtensor(0).carrier;
}
int64_t Tensor::offset() const { return representation_->subtensor(0).offset; }
const Layout& Tensor::layout() const {
  return representation_->subtensor(0).placement;
}
const DType& Tensor::dtype() const { return representation_->logical_dtype(); }
int64_t Tensor::size() const {
  return representation_->subtensor(0).placement.size();
}
std::vector<int64_t> Tensor::shape() const {
  const Layout& placement = layout();
  const IntTuple::Elements elements = placement.shape().TopElements();
  const auto extents = placement.shape().leaves();
  std::vector<int64_t> result(elements.size());
  for (int i = 0; i < elements.size(); ++i) {
    // A product of leaves of a valid layout: at most its size unless a leaf
    // is 0, in which case the product is 0 at that leaf and stays 0.
    int64_t extent = 1;
    for (int k = elements.leaf[i]; k < elements.leaf[i + 1]; ++k) {
      extent = extents[k] == 0 ? 0 : extent * extents[k];
      if (extent == 0) break;
    }
    result[i] = extent;
  }
  return result;
}
std::type_index Tensor::carrier_type() const {
  return representation_->subtensor(0).carrier->type();
}
int Tensor::num_subtensors() const { return representation_->num_levels(); }
MutationSnapshot Tensor::Snapshot() const {
  return representation_->Snapshot();
}

}  // namespace strata
