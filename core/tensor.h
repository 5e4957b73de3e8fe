// The public Tensor.
//
// Tensor::Create(carrier, offset, layout) is the only public way to build a
// Tensor, and it builds the conventional one-subtensor representation. Every
// accessor is const and side-effect free, and reads the Tensor's one
// authoritative representation (subtensor zero for carrier, offset, layout,
// size and carrier_type). Tensors are cheap values that share their immutable
// representation.
#ifndef STRATA_CORE_TENSOR_H_
#define STRATA_CORE_TENSOR_H_

#include <cstdint>
#include <memory>
#include <typeindex>
#include <vector>

#include "absl/status/statusor.h"
#include "carrier/carrier.h"
#include "core/mutation_snapshot.h"
#include "dtype/dtype.h"
#include "layout/layout.h"

namespace strata {

class Representation;

class Tensor {
 public:
  // The conventional one-subtensor Tensor: logical and storage dtype are the
  // carrier's simple dtype, subtensor 0 retains carrier, offset and layout, no
  // adjacent layouts. Errors: TypeError for a null carrier; ValueError when the
  // carrier's dtype is a category or compound (it cannot provide the
  // one-subtensor storage schema), when the offset is negative, when offset +
  // cosize(layout) exceeds the carrier size (or a negative stride reaches below
  // index 0), or the carrier size is negative. (The spec's TypeErrors for a
  // non-integer offset or a non-Layout placement cannot arise: the parameter
  // types exclude them.) A failure never mutates or releases the carrier and
  // keeps no reference to it.
  // The layout is taken by reference and copied once, into the
  // representation (a Layout holds its tuples inline: a move costs a copy).
  static absl::StatusOr<Tensor> Create(std::shared_ptr<Carrier> carrier,
                                       int64_t offset, const Layout& layout);

  // Subtensor zero's carrier, offset and placement layout.
  const std::shared_ptr<Carrier>& carrier() const;
  int64_t offset() const;
  const Layout& layout() const;
  // The logical dtype.
  const DType& dtype() const;
  // The number of logical coordinates of subtensor zero's placement.
  int64_t size() const;
  // The Tensor's shape: the extents of the top-level modes of L_0, outermost
  // first (an integer layout is one mode; "()" is rank 0). A hierarchical mode
  // counts as its size. O(rank), one allocation.
  std::vector<int64_t> shape() const;
  // The exact dynamic class of subtensor zero's carrier.
  std::type_index carrier_type() const;

  int num_subtensors() const;
  MutationSnapshot Snapshot() const;

 private:
  friend class TensorAccess;  // NOTE [ Tensor internals ].
  explicit Tensor(std::shared_ptr<const Representation> representation)
      : representation_(std::move(representation)) {}
  std::shared_ptr<const Representation> representation_;
};

}  // namespace strata

#endif  // STRATA_CORE_TENSOR_H_
