#include "ops/autograd.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "core/mutation_snapshot.h"
#include "dtype/registry.h"
#include "ops/internal/require.h"
#include "ops/ops.h"
#include "util/errors.h"
#include "util/status_macros.h"
#include "views/views.h"

namespace strata {
namespace autograd {

using ops_internal::RequireKernelTensor;
using ops_internal::RequireOneSubtensor;

using Grads = std::vector<std::optional<Tensor>>;

struct Node {
  Tensor value;
  bool requires_grad = false;
  std::string op = "leaf";
  std::vector<std::shared_ptr<Node>> inputs;
  // Input gradients from the output gradient (nullopt for inputs without grad).
  std::function<absl::StatusOr<Grads>(const Tensor& grad)> backward;
  // What backward keeps, and the versions its carriers had when it was kept.
  std::vector<Tensor> saved;
  MutationSnapshot saved_versions;
  std::optional<Tensor> grad;  // Leaves only.

  explicit Node(Tensor v) : value(std::move(v)) {}
};

Variable Variable::Leaf(Tensor value, bool requires_grad) {
  auto node = std::make_shared<Node>(std::move(value));
  node->requires_grad = requires_grad;
  return Variable(std::move(node));
}
const Tensor& Variable::value() const { return node_->value; }
bool Variable::requires_grad() const { return node_->requires_grad; }
bool Variable::is_leaf() const { return node_->inputs.empty(); }
std::optional<Tensor> Variable::grad() const { return node_->grad; }

namespace {

// Records a node for `value` computed by `op` from `inputs`; `saved` are kept
// for backward with their current versions.
Variable Record(Tensor value, std::string op,
                std::vector<const Variable*> inputs, std::vector<Tensor> saved,
                std::function<absl::StatusOr<Grads>(const Tensor&)> backward) {
  auto node = std::make_shared<Node>(std::move(value));
  node->op = std::move(op);
  for (const Variable* in : inputs) {
    node->requires_grad = node->requires_grad || in->requires_grad();
    node->inputs.push_back(in->node());
  }
  if (node->requires_grad) {
    for (const Tensor& t : saved) {
      for (const CarrierVersion& v : t.Snapshot())
        node->saved_versions.push_back(v);
    }
    node->saved = std::move(saved);
    node->backward = std::move(backward);
  }
  return Variable(std::move(node));
}

// Sums g over the dims broadcasting introduced, back to `shape`.
absl::StatusOr<Tensor> ReduceTo(const Tensor& g,
                                const std::vector<int64_t>& shape) {
  const std::vector<int64_t> gs = g.shape();
  if (gs == shape) return g;
  const int64_t lead = gs.size() - shape.size();
  std::vector<int64_t> modes;
  for (int64_t p = 0; p < static_cast<int64_t>(gs.size()); ++p) {
    if (p < lead || (shape[p - lead] == 1 && gs[p] != 1)) modes.push_back(p);
  }
  STRATA_ASSIGN_OR_RETURN(Tensor s, strata::Sum(g, modes));
  return strata::Reshape(s, shape);
}

// The spec's order: a one-subtensor Tensor of a built-in dtype first (before
// any autograd bookkeeping), then a floating dtype where gradients flow.
absl::Status RequireFloating(const Variable& v, absl::string_view op) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(v.value(), op));
  if (v.requires_grad() && !v.value().dtype().AsSimple()->is_floating()) {
    return ValueErrorCat(op, ": gradients need a floating dtype, got ",
                         v.value().dtype().name());
  }
  return absl::OkStatus();
}

using BinaryFn = absl::StatusOr<Tensor> (*)(const Tensor&, const Tensor&);

absl::StatusOr<Variable> Binary(
    const char* name, BinaryFn forward, const Variable& a, const Variable& b,
    bool save,
    std::function<absl::StatusOr<Grads>(const Tensor& g, const Tensor& a,
                                        const Tensor& b)>
        backward) {
  STRATA_RETURN_IF_ERROR(RequireFloating(a, name));
  STRATA_RETURN_IF_ERROR(RequireFloating(b, name));
  STRATA_ASSIGN_OR_RETURN(Tensor out, forward(a.value(), b.value()));
  const Tensor av = a.value(), bv = b.value();
  std::vector<Tensor> saved;
  if (save) saved = {av, bv};
  return Record(
      out, name, {&a, &b}, saved,
      [backward, av, bv](const Tensor& g) { return backward(g, av, bv); });
}

}  // namespace

absl::StatusOr<Variable> Add(const Variable& a, const Variable& b) {
  return Binary("Add", strata::Add, a, b, false,
                [](const Tensor& g, const Tensor& x,
                   const Tensor& y) -> absl::StatusOr<Grads> {
                  STRATA_ASSIGN_OR_RETURN(Tensor ga, ReduceTo(g, x.shape()));
                  STRATA_ASSIGN_OR_RETURN(Tensor gb, ReduceTo(g, y.shape()));
                  return Grads{ga, gb};
                });
}

absl::StatusOr<Variable> Sub(const Variable& a, const Variable& b) {
  return Binary("Sub", strata::Sub, a, b, false,
                [](const Tensor& g, const Tensor& x,
                   const Tensor& y) -> absl::StatusOr<Grads> {
                  STRATA_ASSIGN_OR_RETURN(Tensor ga, ReduceTo(g, x.shape()));
                  STRATA_ASSIGN_OR_RETURN(Tensor ng, strata::Neg(g));
                  STRATA_ASSIGN_OR_RETURN(Tensor gb, ReduceTo(ng, y.shape()));
                  return Grads{ga, gb};
                });
}

absl::StatusOr<Variable> Mul(const Variable& a, const Variable& b) {
  return Binary("Mul", strata::Mul, a, b, true,
                [](const Tensor& g, const Tensor& x,
                   const Tensor& y) -> absl::StatusOr<Grads> {
                  STRATA_ASSIGN_OR_RETURN(Tensor gy, strata::Mul(g, y));
                  STRATA_ASSIGN_OR_RETURN(Tensor gx, strata::Mul(g, x));
                  STRATA_ASSIGN_OR_RETURN(Tensor ga, ReduceTo(gy, x.shape()));
                  STRATA_ASSIGN_OR_RETURN(Tensor gb, ReduceTo(gx, y.shape()));
                  return Grads{ga, gb};
                });
}

absl::StatusOr<Variable> Div(const Variable& a, const Variable& b) {
  return Binary("Div", strata::Div, a, b, true,
                [](const Tensor& g, const Tensor& x,
                   const Tensor& y) -> absl::StatusOr<Grads> {
                  // d(x/y)/dx = 1/y, d(x/y)/dy = -x/y^2.
                  STRATA_ASSIGN_OR_RETURN(Tensor gx, strata::Div(g, y));
                  STRATA_ASSIGN_OR_RETURN(Tensor q, strata::Div(x, y));
                  STRATA_ASSIGN_OR_RETURN(Tensor qy, strata::Div(q, y));
                  STRATA_ASSIGN_OR_RETURN(Tensor t, strata::Mul(g, qy));
                  STRATA_ASSIGN_OR_RETURN(Tensor gy, strata::Neg(t));
                  STRATA_ASSIGN_OR_RETURN(Tensor ga, ReduceTo(gx, x.shape()));
                  STRATA_ASSIGN_OR_RETURN(Tensor gb, ReduceTo(gy, y.shape()));
                  return Grads{ga, gb};
                });
}

absl::StatusOr<Variable> Neg(const Variable& a) {
  STRATA_RETURN_IF_ERROR(RequireFloating(a, "Neg"));
  STRATA_ASSIGN_OR_RETURN(Tensor out, strata::Neg(a.value()));
  return Record(out, "Neg", {&a}, {},
                [](const Tensor& g) -> absl::StatusOr<Grads> {
                  STRATA_ASSIGN_OR_RETURN(Tensor n, strata::Neg(g));
                  return Grads{n};
                });
}

absl::StatusOr<Variable> Sum(const Variable& a,
                             absl::Span<const int64_t> dims) {
  STRATA_RETURN_IF_ERROR(RequireFloating(a, "Sum"));
  STRATA_ASSIGN_OR_RETURN(Tensor out, strata::Sum(a.value(), dims));
  const std::vector<int64_t> shape = a.value().shape();
  const std::vector<int64_t> reduced(dims.begin(), dims.end());
  return Record(out, "Sum", {&a}, {},
                [shape, reduced](const Tensor& g) -> absl::StatusOr<Grads> {
                  // Put the reduced dims back as extent 1, then broadcast.
                  std::vector<int64_t> kept = shape;
                  for (int64_t m : reduced) kept[m] = 1;
                  STRATA_ASSIGN_OR_RETURN(Tensor r, strata::Reshape(g, kept));
                  STRATA_ASSIGN_OR_RETURN(Tensor b,
                                          strata::BroadcastTo(r, shape));
                  STRATA_ASSIGN_OR_RETURN(Tensor c, strata::Contiguous(b));
                  return Grads{c};
                });
}

absl::StatusOr<Variable> Sum(const Variable& a) {
  std::vector<int64_t> all(a.value().shape().size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return Sum(a, all);
}

absl::StatusOr<Variable> Cast(const Variable& a, const SimpleDType& dtype) {
  STRATA_RETURN_IF_ERROR(RequireFloating(a, "Cast"));
  if (a.requires_grad() && !dtype.is_floating()) {
    return ValueErrorCat(
        "Cast: gradients flow only between floating dtypes, not to ",
        dtype.name());
  }
  STRATA_ASSIGN_OR_RETURN(Tensor out, strata::Cast(a.value(), dtype));
  const SimpleDType* source = a.value().dtype().AsSimple();
  return Record(out, "Cast", {&a}, {},
                [source](const Tensor& g) -> absl::StatusOr<Grads> {
                  STRATA_ASSIGN_OR_RETURN(Tensor c, strata::Cast(g, *source));
                  return Grads{c};
                });
}

// --- Views -------------------------------------------------------------------

namespace {

// Views record only the input shape; their adjoint maps g back.
template <typename Forward, typename Adjoint>
absl::StatusOr<Variable> View(const char* name, const Variable& a,
                              Forward forward, Adjoint adjoint) {
  STRATA_ASSIGN_OR_RETURN(Tensor out, forward(a.value()));
  const Tensor input = a.value();
  return Record(out, name, {&a}, {},
                [input, adjoint](const Tensor& g) -> absl::StatusOr<Grads> {
                  STRATA_ASSIGN_OR_RETURN(Tensor c, strata::Contiguous(g));
                  STRATA_ASSIGN_OR_RETURN(Tensor r, adjoint(c, input));
                  return Grads{r};
                });
}

absl::StatusOr<Tensor> ReshapeBack(const Tensor& g, const Tensor& input) {
  return strata::Reshape(g, input.shape());
}

}  // namespace

absl::StatusOr<Variable> Permute(const Variable& a,
                                 absl::Span<const int64_t> perm) {
  const std::vector<int64_t> p(perm.begin(), perm.end());
  return View(
      "Permute", a, [&](const Tensor& x) { return strata::Permute(x, p); },
      [p](const Tensor& g, const Tensor&) -> absl::StatusOr<Tensor> {
        std::vector<int64_t> inverse(p.size());
        for (size_t i = 0; i < p.size(); ++i) inverse[p[i]] = i;
        STRATA_ASSIGN_OR_RETURN(Tensor back, strata::Permute(g, inverse));
        return strata::Contiguous(back);
      });
}

absl::StatusOr<Variable> Slice(const Variable& a, int64_t dim, int64_t start,
                               int64_t stop, int64_t step) {
  return View(
      "Slice", a,
      [&](const Tensor& x) { return strata::Slice(x, dim, start, stop, step); },
      [dim, start, stop, step](const Tensor& g,
                               const Tensor& input) -> absl::StatusOr<Tensor> {
        STRATA_ASSIGN_OR_RETURN(Tensor full,
                                Zeros(*g.dtype().AsSimple(), input.shape()));
        STRATA_ASSIGN_OR_RETURN(Tensor window,
                                strata::Slice(full, dim, start, stop, step));
        STRATA_RETURN_IF_ERROR(CopyFrom(window, g));
        return full;
      });
}

absl::StatusOr<Variable> Reshape(const Variable& a,
                                 absl::Span<const int64_t> shape) {
  return View(
      "Reshape", a, [&](const Tensor& x) { return strata::Reshape(x, shape); },
      ReshapeBack);
}

absl::StatusOr<Variable> Squeeze(const Variable& a,
                                 std::optional<int64_t> dim) {
  return View(
      "Squeeze", a, [&](const Tensor& x) { return strata::Squeeze(x, dim); },
      ReshapeBack);
}

absl::StatusOr<Variable> Unsqueeze(const Variable& a, int64_t dim) {
  return View(
      "Unsqueeze", a,
      [&](const Tensor& x) { return strata::Unsqueeze(x, dim); }, ReshapeBack);
}

absl::StatusOr<Variable> BroadcastTo(const Variable& a,
                                     absl::Span<const int64_t> shape) {
  return View(
      "BroadcastTo", a,
      [&](const Tensor& x) { return strata::BroadcastTo(x, shape); },
      [](const Tensor& g, const Tensor& input) {
        return ReduceTo(g, input.shape());
      });
}

absl::StatusOr<Variable> BroadcastInDim(const Variable& a,
                                        absl::Span<const int64_t> shape,
                                        absl::Span<const int64_t> dims) {
  const std::vector<int64_t> d(dims.begin(), dims.end());
  return View(
      "BroadcastInDim", a,
      [&](const Tensor& x) { return strata::BroadcastInDim(x, shape, d); },
      [d](const Tensor& g, const Tensor& input) -> absl::StatusOr<Tensor> {
        const std::vector<int64_t> in = input.shape(), out = g.shape();
        std::vector<int64_t> modes;
        size_t source = 0;
        for (int64_t p = 0; p < static_cast<int64_t>(out.size()); ++p) {
          if (source < d.size() && d[source] == p) {
            if (in[source] == 1 && out[p] != 1) modes.push_back(p);
            ++source;
          } else {
            modes.push_back(p);
          }
        }
        STRATA_ASSIGN_OR_RETURN(Tensor s, strata::Sum(g, modes));
        return strata::Reshape(s, in);
      });
}

absl::StatusOr<Variable> AsStrided(const Variable& a, const Layout& layout,
                                   int64_t offset) {
  return View(
      "AsStrided", a,
      [&](const Tensor& x) { return strata::AsStrided(x, layout, offset); },
      [layout, offset](const Tensor& g,
                       const Tensor& input) -> absl::StatusOr<Tensor> {
        // Accumulate g over the storage the view reached, then gather it back
        // through the input's own placement (which must not repeat an index).
        STRATA_RETURN_IF_ERROR(
            RequireOneSubtensor(input, "AsStrided backward"));
        const int64_t storage = input.carrier()->size();
        STRATA_ASSIGN_OR_RETURN(Tensor buffer,
                                Zeros(*dtypes::Float64(), {storage}));
        auto* acc = static_cast<double*>(buffer.carrier()->mutable_data());
        STRATA_ASSIGN_OR_RETURN(Tensor g64,
                                strata::Cast(g, *dtypes::Float64()));
        const auto* gv = static_cast<const double*>(g64.carrier()->data());
        // g64 is compact row-major; layout(i) is colexicographic: map through
        // crd2idx.
        const std::vector<int64_t> shape = g64.shape();
        std::vector<int64_t> c(shape.size(), 0);
        for (int64_t k = 0; k < g64.size(); ++k) {
          const IntTuple crd = c.size() == 1 && layout.shape().is_leaf()
                                   ? IntTuple(c[0])
                                   : IntTuple::Flat(c);
          STRATA_ASSIGN_OR_RETURN(int64_t index, layout.Crd2Idx(crd));
          acc[offset + index] += gv[k];
          for (size_t j = c.size(); j-- > 0;) {
            if (++c[j] < shape[j]) break;
            c[j] = 0;
          }
        }
        STRATA_ASSIGN_OR_RETURN(
            Tensor gathered,
            Tensor::Create(buffer.carrier(), input.offset(), input.layout()));
        return strata::Cast(gathered, *g.dtype().AsSimple());
      });
}

// --- Backward ----------------------------------------------------------------

absl::Status Backward(const Variable& loss) {
  const std::shared_ptr<Node>& root = loss.node();
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(root->value, "Backward"));
  if (!root->requires_grad)
    return ValueError("Backward: the loss does not require grad");
  if (root->value.size() != 1) {
    return ValueErrorCat("Backward: the loss has ", root->value.size(),
                         " elements; it must have one");
  }
  // Post-order of the graph (iterative, so deep graphs cannot overflow the
  // stack).
  std::vector<Node*> order;
  std::unordered_set<Node*> seen;
  std::vector<std::pair<Node*, size_t>> stack = {{root.get(), 0}};
  seen.insert(root.get());
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      Node* child = node->inputs[next++].get();
      if (child->requires_grad && seen.insert(child).second)
        stack.push_back({child, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  // Every check before any computation. A saved carrier still at its saved
  // version holds the values forward saw
  // (NOTE [ Carrier ownership and aliasing ] in carrier/carrier.h).
  for (Node* node : order) {
    STRATA_RETURN_IF_ERROR(RequireKernelTensor(
        node->value, absl::StrCat("Backward (", node->op, ")")));
    for (size_t k = 0; k < node->saved_versions.size(); ++k) {
      const CarrierVersion& saved = node->saved_versions[k];
      const uint64_t now = saved.carrier->version();
      if (now != saved.version) {
        return ValueErrorCat(
            "Backward: ", node->op, " saved carrier ", k, " (",
            saved.carrier->class_name(), " ", saved.carrier->dtype().name(),
            ") at version ", saved.version, "; it is now at version ", now,
            ": it was modified by a mutation after the forward pass");
      }
    }
  }
  std::unordered_map<Node*, Tensor> grads;
  STRATA_ASSIGN_OR_RETURN(
      Tensor seed, Zeros(*root->value.dtype().AsSimple(), root->value.shape()));
  STRATA_RETURN_IF_ERROR(Fill(seed, Scalar::Float(1.0)));
  grads.emplace(root.get(), seed);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    auto found = grads.find(node);
    if (found == grads.end()) continue;
    const Tensor g = found->second;
    if (node->inputs.empty()) {
      if (node->grad.has_value()) {
        STRATA_ASSIGN_OR_RETURN(Tensor total, strata::Add(*node->grad, g));
        node->grad = total;
      } else {
        STRATA_ASSIGN_OR_RETURN(Tensor owned, strata::Clone(g));
        node->grad = owned;
      }
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(Grads input_grads, node->backward(g));
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      Node* in = node->inputs[i].get();
      if (!in->requires_grad || !input_grads[i].has_value()) continue;
      auto existing = grads.find(in);
      if (existing == grads.end()) {
        grads.emplace(in, *input_grads[i]);
      } else {
        STRATA_ASSIGN_OR_RETURN(Tensor total,
                                strata::Add(existing->second, *input_grads[i]));
        existing->second = total;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace autograd
}  // namespace strata
