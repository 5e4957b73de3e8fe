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
  // rules), with at most one allocation (NOTE [ Recycled representation
  // blocks ] in representation.cc). Tensor::Create uses it (one-level views
  // use OneLevelFlatView and OneLevelViewWithPlacement).
  // Errors: TypeError for a null carrier; ValueError when the carrier's dtype
  // is not simple or the placement does not fit (as Create).
  static absl::StatusOr<std::shared_ptr<const Representation>> CreateOneLevel(
      std::shared_ptr<Carrier> carrier, int64_t offset,
      const Layout& placement);

  // A one-level view's representation, built without a draft (NOTE
  // [ One-level flat views ] in representation.cc): `source`'s dtypes and
  // carrier, `offset`, and the flat placement of `n` modes extent[k] :
  // stride[k] (one mode: an integer layout) with `bounds`; then the logical
  // dtype's rules. Preconditions, which the view established: `source` has
  // one level; 0 <= n <= LayoutAssembler::kFlatBuffer and both arrays hold
  // kFlatBuffer values; `bounds` are those Layout::Create computes for the
  // modes; the placement fits the carrier at `offset`. Builds without NDEBUG
  // check all but the arrays' length (AddressSanitizer's) and fail with an
  // InternalError where one fails. `*error` is always assigned: OK with the
  // representation, or a rule's error (or that InternalError) with nullptr.
  // No StatusOr: its out-of-line destructor cost 10 instructions per view.
  static std::shared_ptr<const Representation> OneLevelFlatView(
      const Representation& source, int64_t offset, int n,
      const int64_t* extents, const int64_t* strides,
      const LayoutAssembler::DerivedBounds& bounds, absl::Status* error);

  // A one-level view's representation with a placement the view was given
  // (AsStrided): `source`'s dtypes and carrier, `offset` and `placement`,
  // with Create's level checks (the placement fits the carrier, with its
  // messages) and the logical dtype's rules. Precondition: `source` has one
  // level (builds without NDEBUG return an InternalError otherwise).
  static absl::StatusOr<std::shared_ptr<const Representation>>
  OneLevelViewWithPlacement(const Representation& source, int64_t offset,
                            const Layout& placement);

  const DType& logical_dtype() const { return *logical_dtype_; }
  absl::Span<const Subtensor> subtensors() const {
    return absl::MakeConstSpan(subtensors_, num_levels_);
  }
  const Subtensor& subtensor(int i) const { return subtensors_[i]; }
  int num_levels() const { return num_levels_; }
  absl::Span<const Layout> adjacent_layouts() const {
    return absl::MakeConstSpan(adjacent_, num_levels_ - 1);
  }

  // Each distinct carrier once, with its current version, in order of first
  // use.
  MutationSnapshot Snapshot() const;

  // A view's new representation, built in place (NOTE [ Views build in
  // place ] in representation.cc). The draft starts as a copy of `source`
  // except L_0 and S_0, which are 1:0 until the view writes them: the logical
  // dtype, every storage dtype and carrier, every offset, the placements of
  // levels >= 1 and the adjacent layouts S_i for i >= 1. A view can change
  // offsets, placements and adjacent layouts only, never a dtype or a carrier.
  // Finish() validates what a view can change and publishes the one
  // allocation the draft made.
  class ViewDraft {
   public:
    explicit ViewDraft(const Representation& source);
    ViewDraft(const ViewDraft&) = delete;
    ViewDraft& operator=(const ViewDraft&) = delete;

    int num_levels() const { return rep_->num_levels_; }
    int64_t& offset(int i) { return rep_->subtensors_[i].offset; }
    Layout& placement(int i) { return rep_->subtensors_[i].placement; }
    Layout& adjacent(int i) { return rep_->adjacent_[i]; }

    // Checks, in Create's order and with its messages, everything a view can
    // break: every level's placement fits its carrier (offset >= 0, offset +
    // cosize <= carrier size, offset + min_index >= 0), shape(S_i) ==
    // shape(L_i) and S_i reaches only [0, size(L_(i+1))); then the logical
    // dtype's rules, in order, on one frozen context. The storage schema,
    // the carriers, their class and their dtypes are the validated source's,
    // unchanged. O(levels * leaves) plus the rules.
    absl::StatusOr<std::shared_ptr<const Representation>> Finish() &&;
    // Finish in two steps, without a StatusOr of the representation: Check()
    // validates as Finish does; Take() then publishes. Precondition of Take:
    // Check() returned OK.
    absl::Status Check() const;
    // Check() for a view that keeps every level's reach (NOTE [ Views that
    // keep their reach ] in representation.cc): the offsets are the
    // source's, every placement and adjacent layout has the bounds of the
    // source's (the same max_index and min_index, or is empty), and each
    // S_i was given L_i's shape. Only the dtype's rules then run. Builds
    // without NDEBUG (the tests' and the fuzzers') also recompute every
    // layout's bounds with Layout::Create and make Check()'s level checks,
    // and return an internal error where the precondition failed.
    absl::Status CheckKeepingReach() const;
    // CheckKeepingReach() for a view that only rearranges the top-level
    // modes of L_0 and S_0 (NOTE [ Verdicts that views keep ] in
    // dtype/representation_rule.h): the rules that keep their verdict under
    // such views do not run (builds without NDEBUG run them, and return an
    // internal error where one refuses); the others run in order.
    absl::Status CheckRearrangingModes() const;
    // Check() for `slice` of `source` (NOTE [ Verdicts that slices keep ] in
    // dtype/representation_rule.h), where `source` is the representation
    // the draft started from and the draft is a slice of it (NOTE [ Slices
    // stay inside their source ] in representation.cc): the level checks
    // and the rules that keep their verdict on the slice do not run (builds
    // without NDEBUG run them, and return an internal error where one
    // fails); the other rules run in order.
    absl::Status CheckSlice(const Representation& source,
                            const ModeSlice& slice) const;
    std::shared_ptr<const Representation> Take() && { return std::move(rep_); }

   private:
    std::shared_ptr<Representation> rep_;
  };

 private:
  struct PrivateTag {
    explicit PrivateTag() = default;
  };
  template <int N>
  struct Storage;
  struct DynamicStorage;
  // One allocation holding the representation, its subtensors and its
  // adjacent layouts (any number of levels; at most 4 without a second one).
  static std::shared_ptr<Representation> Allocate(int num_levels);
  template <int N, typename... Args>
  static std::shared_ptr<Representation> AllocateStorage(Args&&... args);
  // A view's draft of `source` in one allocation, built from it in one pass;
  // nullptr beyond 4 levels (then Allocate, and copies).
  static std::shared_ptr<Representation> AllocateDraft(
      const Representation& source);

 public:
  // For allocate_shared inside Allocate.
  explicit Representation(PrivateTag) {}
  Representation(const Representation&) = delete;
  Representation& operator=(const Representation&) = delete;

 private:
  const DType* logical_dtype_ = nullptr;
  Subtensor* subtensors_ = nullptr;  // num_levels_ of them, in the storage.
  Layout* adjacent_ = nullptr;       // num_levels_ - 1 of them, too.
  int num_levels_ = 0;
};

}  // namespace strata

#endif  // STRATA_CORE_REPRESENTATION_H_
