// Must NOT build under --config=strict (tests/fence/check.sh): it depends on
// //:strata only, yet reaches for the framework-owned factory and the door to a
// Tensor's internals (NOTE [ Tensor internals ]).
#include "core/representation.h"
#include "core/tensor_access.h"
#include "strata.h"

namespace fence {

int Levels(const strata::Tensor& tensor) {
  return strata::TensorAccess::representation(tensor).num_levels();
}

}  // namespace fence
