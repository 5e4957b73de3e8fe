// The authoritative representation of a Tensor and its framework-owned factory.
//
// A representation is one logical dtype, an ordered non-empty sequence of
// carrier-backed subtensors (levels) and the ordered adjacent layouts between
// consecutive levels:
//
// clang-format off
//   level i:  placement L_i maps a level-i logical coordinate c to carrier
//             index offset_i + L_i(c) of subtensor i's carrier;
//   S_i:      maps the same coordinate to a linear index, decoded as a logical
//             coordinate in shape(L_(i+1)).
// clang-format on
//
// Representation::Create is the only way to build one, and its Bazel target is
// visible to Strata's own packages only: the public constructor of
// one-subtensor Tensors is Tensor::Create (core/tensor.h). Validated
// representations are immutable.
#ifndef STRATA_CORE_REPRESENTATION_H_
#define STRATA_CORE_REPRESENTATION_H_

#include <cstdint>
#include <memory>
#include <typeindex>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "carrier/carrier.h"
#include "core/mutation_snapshot.h"
#include "dtype/dtype.h"
#include "dtype/representation_rule.h"
#include "layout/layout.h"

namespace strata {

class Tensor;

// One validated level.
struct Subtensor {
  const SimpleDType* storage_dtype;
  std::shared_ptr<Carrier> carrier;
  int64_t offset;
  Layout placement;
};

// One level as a caller or a text proposes it; any field may be invalid. A null
// carrier is "not a Carrier" and a placement holding an error is "not a Layout"
// (both TypeErrors at universal validation, in the spec's order).
struct SubtensorCandidate {
  const DType* storage_dtype = nullptr;
  std::shared_ptr<Carrier> carrier;
  int64_t offset = 0;
  absl::StatusOr<Layout> placement = Layout();
};

class Representation {
 public:
  // Validates and builds a representation, stopping at the first failure, in
  // order:
  //
  // clang-format off
  //  1. storage schema: the logical dtype provides one (ValueError: a category
  //     has none); exactly n subtensors and n - 1 adjacent layouts (ValueError
  //     naming the expected count); subtensor i's storage dtype is identical
  //     to D_i (ValueError naming position i and both dtypes);
  //  2. universal validation of every subtensor i: a carrier (TypeError: not
  //     a Carrier); a placement Layout (TypeError: not a Layout); the exact
  //     carrier class of subtensor 0 (TypeError naming both positions and
  //     classes); carrier dtype identical to the storage dtype (ValueError);
  //     offset >= 0, carrier size >= 0, offset + cosize(L_i) <= carrier size
  //     and offset + min_index(L_i) >= 0 (ValueError naming the bound and the
  //     values; NOTE [ Placement bounds ] in representation.cc);
  //  3. adjacent level i: S_i is a Layout (TypeError); shape(S_i) ==
  //     shape(L_i) (ValueError naming the required shape); every index S_i
  //     reaches lies in [0, size(L_(i+1))) (ValueError naming the reached
  //     index and the size);
  //  4. the logical dtype's rules, in order, each given the same frozen
  //     context; the first error is returned unchanged and later rules do
  //     not run.
  // clang-format on
  //
  // Every check costs O(rank): bounds come from shapes and strides
  // analytically. A failure has no effect: no carrier is mutated, released or
  // retained.
  static absl::StatusOr<std::shared_ptr<const Representation>> Create(
      const DType* logical_dtype, std::vector<SubtensorCandidate> subtensors,
      std::vector<absl::StatusOr<Layout>> adjacent_layouts);

  // The one-subtensor representation of a simple dtype (the carrier's): exactly
  // the checks Create makes for it (a simple dtype has one schema entry and no
  // rules), with one allocation. Tensor::Create and the one-level views use it.
  // Errors: TypeError for a null carrier; ValueError when the carrier's dtype
  // is not simple or the placement does not fit (as Create).
  static absl::StatusOr<std::shared_ptr<const Representation>> CreateOneLevel(
      std::shared_ptr<Carrier> carrier, int64_t offset, Layout placement);

  const DType& logical_dtype() const { return *logical_dtype_; }
  absl::Span<const Subtensor> subtensors() const { return subtensors_; }
  const Subtensor& subtensor(int i) const { return subtensors_[i]; }
  int num_levels() const { return static_cast<int>(subtensors_.size()); }
  absl::Span<const Layout> adjacent_layouts() const {
    return adjacent_layouts_;
  }

  // Each distinct carrier once, with its current version, in order of first
  // use.
  MutationSnapshot Snapshot() const;

 private:
  struct PrivateTag {
    explicit PrivateTag() = default;
  };

 public:
  // For make_shared inside the factories.
  explicit Representation(PrivateTag) {}

 private:
  const DType* logical_dtype_ = nullptr;
  absl::InlinedVector<Subtensor, 2> subtensors_;
  absl::InlinedVector<Layout, 1> adjacent_layouts_;
};

}  // namespace strata

#endif  // STRATA_CORE_REPRESENTATION_H_
