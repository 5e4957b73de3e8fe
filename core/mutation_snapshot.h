// Mutation snapshots: the identity and version of each distinct carrier, which
// tell whether its data changed since (NOTE [ Carrier ownership and aliasing ]
// in carrier/carrier.h).
#ifndef STRATA_CORE_MUTATION_SNAPSHOT_H_
#define STRATA_CORE_MUTATION_SNAPSHOT_H_

#include <cstdint>
#include <string>

#include "absl/container/inlined_vector.h"
#include "carrier/carrier.h"

namespace strata {

struct CarrierVersion {
  const Carrier* carrier;  // Identity only; the representation keeps it alive.
  uint64_t version;
  friend bool operator==(const CarrierVersion& a, const CarrierVersion& b) {
    return a.carrier == b.carrier && a.version == b.version;
  }
};

// Each unique constituent carrier once, ordered by its first subtensor
// occurrence; never collapsed to subtensor zero, a maximum or a sum.
using MutationSnapshot = absl::InlinedVector<CarrierVersion, 2>;

}  // namespace strata

#endif  // STRATA_CORE_MUTATION_SNAPSHOT_H_
