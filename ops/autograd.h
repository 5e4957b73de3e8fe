// A small reverse-mode engine over the differentiable operations.
//
// A Variable is a Tensor plus its place in the recorded graph. Leaves may
// require gradients; every differentiable op on Variables records a node that
// keeps what its backward needs, with the MutationSnapshot of those Tensors.
// Backward(loss) first checks the whole graph -- every value one-subtensor
// (else OneSubtensorRequired), every saved carrier still at its saved version
// (else a ValueError naming the op, the carrier position and both versions,
// PyTorch's "modified by an inplace operation" but naming every carrier) -- and
// only then computes, accumulating into the leaves' grad(). Broadcasting in the
// forward pass is reduced (summed) in the backward pass.
#ifndef STRATA_OPS_AUTOGRAD_H_
#define STRATA_OPS_AUTOGRAD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"
#include "dtype/dtype.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"

namespace strata {
namespace autograd {

struct Node;

class Variable {
 public:
  // A leaf. Gradients are computed only for floating dtypes.
  static Variable Leaf(Tensor value, bool requires_grad = true);

  const Tensor& value() const;
  bool requires_grad() const;
  bool is_leaf() const;
  // The gradient accumulated by Backward calls (leaves that require it), else
  // nullopt.
  std::optional<Tensor> grad() const;

  explicit Variable(std::shared_ptr<Node> node) : node_(std::move(node)) {}
  const std::shared_ptr<Node>& node() const { return node_; }

 private:
  std::shared_ptr<Node> node_;
};

absl::StatusOr<Variable> Add(const Variable& a, const Variable& b);
absl::StatusOr<Variable> Sub(const Variable& a, const Variable& b);
absl::StatusOr<Variable> Mul(const Variable& a, const Variable& b);
absl::StatusOr<Variable> Div(const Variable& a, const Variable& b);
absl::StatusOr<Variable> Neg(const Variable& a);
absl::StatusOr<Variable> Sum(const Variable& a);
absl::StatusOr<Variable> Sum(const Variable& a, absl::Span<const int64_t> dims);
// Between floating dtypes only (ValueError otherwise).
absl::StatusOr<Variable> Cast(const Variable& a, const SimpleDType& dtype);

// The views; their gradients are the adjoint views.
absl::StatusOr<Variable> Permute(const Variable& a,
                                 absl::Span<const int64_t> perm);
absl::StatusOr<Variable> Slice(const Variable& a, int64_t dim, int64_t start,
                               int64_t stop, int64_t step = 1);
absl::StatusOr<Variable> Reshape(const Variable& a,
                                 absl::Span<const int64_t> shape);
absl::StatusOr<Variable> AsStrided(const Variable& a, const Layout& layout,
                                   int64_t offset);
absl::StatusOr<Variable> BroadcastTo(const Variable& a,
                                     absl::Span<const int64_t> shape);
absl::StatusOr<Variable> BroadcastInDim(const Variable& a,
                                        absl::Span<const int64_t> shape,
                                        absl::Span<const int64_t> dims);
absl::StatusOr<Variable> Squeeze(const Variable& a,
                                 std::optional<int64_t> dim = std::nullopt);
absl::StatusOr<Variable> Unsqueeze(const Variable& a, int64_t dim);

// Backpropagates from `loss` (one element, floating) with seed 1.
// Errors: ValueError when loss does not require grad, has more than one
// element, or a saved carrier was mutated since the forward pass;
// OneSubtensorRequired when a value in the graph has several subtensors. All
// checks run before any gradient is computed.
absl::Status Backward(const Variable& loss);

}  // namespace autograd
}  // namespace strata

#endif  // STRATA_OPS_AUTOGRAD_H_
