// The dtype-provided representation rules and the read-only context they
// validate.
#ifndef STRATA_DTYPE_REPRESENTATION_RULE_H_
#define STRATA_DTYPE_REPRESENTATION_RULE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"

namespace strata {

class DType;
class SimpleDType;

// A slice of top-level mode `mode` of L_0 (and of S_0, which has its shape):
// the coordinates start + step * j for j < count along it, every other mode
// whole. A slice Slice admits: 0 <= start, step >= 1, count >= 0, and
// start + step * (count - 1) < the mode's extent where count > 0.
struct ModeSlice {
  int mode = 0;
  int64_t start = 0;
  int64_t count = 0;
  int64_t step = 1;
};

// The public RepresentationValidationContext protocol: a read-only description
// of a universally validated candidate representation. Every accessor is const
// and returns views of frozen state, so a rule can read all five fields but
// cannot mutate them.
class RepresentationValidationContext {
 public:
  virtual ~RepresentationValidationContext() = default;

  // The logical dtype of the Tensor.
  virtual const DType& logical_dtype() const = 0;
  // D_0, ..., D_(n-1): the storage dtype of each subtensor, in level order.
  virtual absl::Span<const SimpleDType* const> storage_dtypes() const = 0;
  // L_0, ..., L_(n-1): the placement layout of each subtensor.
  virtual absl::Span<const Layout> placement_layouts() const = 0;
  // S_0, ..., S_(n-2): the adjacent layout between each pair of levels.
  virtual absl::Span<const Layout> adjacent_layouts() const = 0;
  // shape(L_0), ..., shape(L_(n-1)).
  virtual absl::Span<const IntTuple> level_shapes() const = 0;

  // n, and L_i alone (0 <= i < n): what placement_layouts() holds, read
  // without materializing the sequence, for rules on the views' hot path
  // (NOTE [ Views build in place ] in core/representation.cc).
  virtual int num_levels() const {
    return static_cast<int>(storage_dtypes().size());
  }
  virtual const Layout& placement_layout(int i) const {
    return placement_layouts()[i];
  }
};

// One rule a logical dtype imposes on its representations, run after universal
// validation. Validate returns OkStatus (the spec's None) or the error to
// propagate; the first failing rule stops construction and later rules do not
// run.
class RepresentationRule {
 public:
  virtual ~RepresentationRule() = default;
  // A short name for messages ("mx_block_scale").
  virtual absl::string_view name() const = 0;
  virtual absl::Status Validate(
      const RepresentationValidationContext& context) const = 0;

  // NOTE [ Verdicts that views keep ]
  // Whether the rule gives a validated representation's verdict to every
  // view of it that only rearranges the top-level modes of L_0 and S_0
  // together: permutes them, drops or inserts modes of extent 1, or inserts
  // or widens modes of stride 0 on both (Permute, Squeeze, Unsqueeze,
  // BroadcastTo, BroadcastInDim), every offset and deeper level unchanged.
  // Such a view is not judged again by a rule that says so: in release
  // builds the rule does not run on it. Builds without NDEBUG (the tests',
  // the sanitizers', the fuzzers') run it anyway and report an InternalError
  // where it refuses, so a wrong claim fails loudly there. The default, for
  // rules that read positions or extents (a Python rule, say), is false.
  virtual bool KeepsVerdictWhenModesRearrange() const { return false; }

  // NOTE [ Verdicts that slices keep ]
  // Whether the rule gives a validated representation (`source`) its verdict
  // on the slice `slice` of it: L_0 and S_0 sliced along the mode (the
  // integer mode count:(step * d) from start * d, or a hierarchical mode's
  // last leaf cut to whole steps of the leaves before it, NOTE [ Slices by
  // whole steps of a mode's last leaf ] in views/slice_view.cc), and every
  // deeper level narrowed to the box the slice reaches (NOTE [ Boxes of a
  // level's leaf grid ] in views/narrow_level.h). Decided from the source
  // and the slice alone, in O(rank); a rule that says true is not run on
  // that slice in release builds, and, as for views that rearrange modes,
  // builds without NDEBUG run it anyway and report an InternalError where it
  // refuses. The default is false: every slice is judged again.
  virtual bool KeepsVerdictWhenSliced(
      const RepresentationValidationContext& /*source*/,
      const ModeSlice& /*slice*/) const {
    return false;
  }
};

}  // namespace strata

#endif  // STRATA_DTYPE_REPRESENTATION_RULE_H_
