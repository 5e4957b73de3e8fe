// Builds under --config=strict: a package that depends on //:strata and
// includes the umbrella header (tests/fence/check.sh).
#include "strata.h"

namespace fence {

bool BuildsATensor() {
  auto carrier = strata::HostCarrier::Create(*strata::dtypes::Float32(), 32);
  if (!carrier.ok()) return false;
  auto layout = strata::ParseLayout("(4,8):(8,1)");
  if (!layout.ok()) return false;
  return strata::Tensor::Create(*carrier, 0, *layout).ok();
}

}  // namespace fence
