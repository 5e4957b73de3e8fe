#include "core/tensor.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/representation.h"
#include "core/status_macros.h"

namespace strata {

absl::StatusOr<Tensor> Tensor::Create(std::shared_ptr<Carrier> carrier,
                                      int64_t offset, Layout layout) {
  if (carrier == nullptr) return TypeError("Tensor: carrier is not a Carrier");
  const DType& dtype = carrier->dtype();
  if (dtype.AsSimple() == nullptr) {
    return ValueErrorCat("Tensor: carrier dtype ", dtype.name(), " is a ",
                         dtype.kind_name(),
                         " dtype and cannot provide the conventional "
                         "one-subtensor storage schema");
  }
  auto representation = Representation::CreateOneLevel(
      std::move(carrier), offset, std::move(layout));
  if (!representation.ok()) return representation.status();
  return MakeTensor(*std::move(representation));
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
std::type_index Tensor::carrier_type() const {
  return representation_->subtensor(0).carrier->type();
}
int Tensor::num_subtensors() const { return representation_->num_levels(); }
MutationSnapshot Tensor::Snapshot() const {
  return representation_->Snapshot();
}

}  // namespace strata
