#include "views/views.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/errors.h"
#include "core/representation.h"
#include "core/status_macros.h"
#include "core/tensor_access.h"
#include "layout/algebra.h"
#include "layout/checked_math.h"
#include "views/narrow_level.h"

namespace strata {
namespace {

using Modes = absl::InlinedVector<Layout, 4>;

// The layout of `modes`: one integer mode stays an integer layout.
absl::StatusOr<Layout> FromTopModes(absl::Span<const Layout> modes) {
  if (modes.size() == 1 && modes[0].shape().is_leaf()) return modes[0];
  return MakeLayout(modes);
}

// Builds the view's Tensor from new candidates through the factory.
absl::StatusOr<Tensor> Rebuild(const Representation& source,
                               std::vector<SubtensorCandidate> subtensors,
                               std::vector<absl::StatusOr<Layout>> adjacent) {
  STRATA_ASSIGN_OR_RETURN(
      auto representation,
      Representation::Create(&source.logical_dtype(), std::move(subtensors),
                             std::move(adjacent)));
  return MakeTensor(std::move(representation));
}

std::vector<SubtensorCandidate> Candidates(const Representation& rep) {
  std::vector<SubtensorCandidate> out;
  for (const Subtensor& s : rep.subtensors()) {
    out.push_back({s.storage_dtype, s.carrier, s.offset, s.placement});
  }
  return out;
}

std::vector<absl::StatusOr<Layout>> Adjacent(const Representation& rep) {
  return {rep.adjacent_layouts().begin(), rep.adjacent_layouts().end()};
}

// One mode of an offset-free view: mode `source` of the input, or (source < 0)
// a new integer mode of `extent` with stride 0.
struct ModeSpec {
  int source;
  int64_t extent;
};
using ModeSpecs = absl::InlinedVector<ModeSpec, 8>;
using Extents = absl::InlinedVector<int64_t, 8>;

// The layout whose modes `specs` name, assembled from `layout`'s own token
// ranges (no intermediate Layouts); one integer mode stays an integer layout.
absl::StatusOr<Layout> Assemble(const Layout& layout,
                                const IntTuple::Elements& elements,
                                absl::Span<const ModeSpec> specs) {
  IntTupleBuilder shape, stride;
  for (const ModeSpec& m : specs) {
    if (m.source >= 0) {
      shape.AppendElement(layout.shape(), elements, m.source);
      stride.AppendElement(layout.stride(), elements, m.source);
    } else {
      shape.AppendInteger(m.extent);
      stride.AppendInteger(0);
    }
  }
  return Layout::Create(std::move(shape).Build(true),
                        std::move(stride).Build(true));
}

// The extent of each top-level mode.
Extents ModeExtents(const Layout& layout, const IntTuple::Elements& elements) {
  Extents extents;
  const auto leaves = layout.shape().leaves();
  for (int i = 0; i < elements.size(); ++i) {
    int64_t e = 1;
    // Bounded by the product of the positive extents (NOTE [ Layout bounds ]).
    for (int k = elements.leaf[i]; k < elements.leaf[i + 1]; ++k)
      e *= leaves[k];
    extents.push_back(e);
  }
  return extents;
}

// Applies an offset-free view, given as mode specs over the input's top-level
// modes, to L_0 and S_0 alike (S_0 has L_0's shape, so the same specs apply).
template <typename MakeSpecs>
absl::StatusOr<Tensor> MapModes(const Tensor& tensor, MakeSpecs make_specs) {
  const Representation& rep = TensorAccess::representation(tensor);
  const Layout& l0 = rep.subtensor(0).placement;
  const IntTuple::Elements elements = l0.shape().TopElements();
  STRATA_ASSIGN_OR_RETURN(ModeSpecs specs,
                          make_specs(ModeExtents(l0, elements)));
  auto subtensors = Candidates(rep);
  auto adjacent = Adjacent(rep);
  STRATA_ASSIGN_OR_RETURN(subtensors[0].placement,
                          Assemble(l0, elements, specs));
  if (rep.num_levels() > 1) {
    adjacent[0] = Assemble(rep.adjacent_layouts()[0], elements, specs);
  }
  return Rebuild(rep, std::move(subtensors), std::move(adjacent));
}

// Errors of the public views begin with the function's name (the factory's and
// the dtype rules' errors get it as context).
absl::StatusOr<Tensor> Named(absl::string_view op,
                             absl::StatusOr<Tensor> result) {
  if (result.ok() ||
      absl::StartsWith(result.status().message(), absl::StrCat(op, ": "))) {
    return result;
  }
  return WithContext(result.status(), op);
}

absl::Status CheckDim(absl::string_view op, int64_t dim, int64_t rank) {
  if (dim < 0 || dim >= rank) {
    return ValueErrorCat(op, ": dim ", dim, " is out of range for rank ", rank);
  }
  return absl::OkStatus();
}

// Deeper levels of NOTE [ The view invariant ]: the view reaches level i
// through `reached` (a layout over the new level-(i-1) shape, relative to
// linear index `base` of level i). Narrows level i to the box of its leaf grid
// that the view reaches (NOTE [ Boxes of a level's leaf grid ]), moves base's
// image into the level's offset, rewrites the adjacent layout into the box,
// and continues below.
absl::Status NarrowLevels(const Representation& rep, int64_t base,
                          Layout reached,
                          std::vector<SubtensorCandidate>* subtensors,
                          std::vector<absl::StatusOr<Layout>>* adjacent) {
  for (int level = 1; level < rep.num_levels(); ++level) {
    if (reached.size() == 0) {  // Nothing is reached: deeper levels stay.
      (*adjacent)[level - 1] = reached;
      return absl::OkStatus();
    }
    auto narrowed = views_internal::NarrowLevel(rep.subtensor(level).placement,
                                                base, reached);
    if (!narrowed.ok()) {
      return ValueErrorCat("level ", level, " cannot be narrowed exactly: ",
                           narrowed.status().message());
    }
    if (narrowed->whole) {  // The whole level is still reached: it stays.
      (*adjacent)[level - 1] = reached;
      return absl::OkStatus();
    }
    SubtensorCandidate& candidate = (*subtensors)[level];
    if (!CheckedAdd(candidate.offset, narrowed->offset_shift,
                    &candidate.offset)) {
      return ValueErrorCat("level ", level, " offset overflows");
    }
    candidate.placement = narrowed->placement;
    (*adjacent)[level - 1] = narrowed->adjacent;
    if (level + 1 == rep.num_levels()) break;
    // Level level+1 is reached through S_level restricted to the box.
    const Layout& next = rep.adjacent_layouts()[level];
    const auto next_strides = next.stride().leaves();
    base = 0;
    for (size_t a = 0; a < next_strides.size(); ++a) {
      base += narrowed->start[a] * next_strides[a];  // Reached: no overflow.
    }
    STRATA_ASSIGN_OR_RETURN(
        reached,
        Layout::Create(narrowed->placement.shape(),
                       next.stride().TransformLeaves([&](size_t a, int64_t t) {
                         return narrowed->step[a] * t;  // Reached, too.
                       })));
  }
  return absl::OkStatus();
}

}  // namespace

static absl::StatusOr<Tensor> PermuteImpl(const Tensor& tensor,
                                          absl::Span<const int64_t> perm) {
  return MapModes(tensor, [&](const Extents& in) -> absl::StatusOr<ModeSpecs> {
    const int64_t rank = in.size();
    absl::InlinedVector<bool, 8> seen(rank, false);
    bool valid = static_cast<int64_t>(perm.size()) == rank;
    ModeSpecs out;
    for (int64_t p : perm) {
      valid = valid && p >= 0 && p < rank && !seen[p];
      if (!valid) break;
      seen[p] = true;
      out.push_back({static_cast<int>(p), 0});
    }
    if (!valid) {
      return ValueErrorCat("Permute: (", absl::StrJoin(perm, ","),
                           ") is not a permutation of the ", rank, " modes");
    }
    return out;
  });
}

absl::StatusOr<Tensor> Permute(const Tensor& tensor,
                               absl::Span<const int64_t> perm) {
  return Named("Permute", PermuteImpl(tensor, perm));
}

static absl::StatusOr<Tensor> SqueezeImpl(const Tensor& tensor,
                                          std::optional<int64_t> dim) {
  return MapModes(tensor, [&](const Extents& in) -> absl::StatusOr<ModeSpecs> {
    if (dim.has_value()) {
      STRATA_RETURN_IF_ERROR(CheckDim("Squeeze", *dim, in.size()));
      if (in[*dim] != 1) {
        return ValueErrorCat("Squeeze: dim ", *dim, " has extent ", in[*dim],
                             "; only a dim of extent 1 can be removed");
      }
    }
    ModeSpecs out;
    for (size_t i = 0; i < in.size(); ++i) {
      const bool drop =
          dim.has_value() ? static_cast<int64_t>(i) == *dim : in[i] == 1;
      if (!drop) out.push_back({static_cast<int>(i), 0});
    }
    return out;
  });
}

absl::StatusOr<Tensor> Squeeze(const Tensor& tensor,
                               std::optional<int64_t> dim) {
  return Named("Squeeze", SqueezeImpl(tensor, dim));
}

static absl::StatusOr<Tensor> UnsqueezeImpl(const Tensor& tensor, int64_t dim) {
  return MapModes(tensor, [&](const Extents& in) -> absl::StatusOr<ModeSpecs> {
    const int64_t rank = in.size();
    if (dim < 0 || dim > rank) {
      return ValueErrorCat("Unsqueeze: position ", dim, " is out of range [0, ",
                           rank, "]");
    }
    ModeSpecs out;
    for (int64_t i = 0; i < rank; ++i) {
      if (i == dim) out.push_back({-1, 1});
      out.push_back({static_cast<int>(i), 0});
    }
    if (dim == rank) out.push_back({-1, 1});
    return out;
  });
}

absl::StatusOr<Tensor> Unsqueeze(const Tensor& tensor, int64_t dim) {
  return Named("Unsqueeze", UnsqueezeImpl(tensor, dim));
}

namespace {

absl::StatusOr<std::vector<int64_t>> TargetExtents(absl::string_view op,
                                                   const IntTuple& shape) {
  std::vector<int64_t> extents;
  const int rank = shape.is_leaf() ? 1 : shape.rank();
  for (int i = 0; i < rank; ++i) {
    const IntTuple mode = shape[i];  // Owns the leaves the loop reads.
    STRATA_ASSIGN_OR_RETURN(int64_t e, TupleProduct(mode));
    for (int64_t leaf : mode.leaves()) {
      if (leaf < 0) {
        return ValueErrorCat(op, ": shape ", shape.ToString(),
                             " has a negative extent");
      }
    }
    extents.push_back(e);
  }
  return extents;
}

}  // namespace

static absl::StatusOr<Tensor> BroadcastToImpl(const Tensor& tensor,
                                              const IntTuple& shape) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> target,
                          TargetExtents("BroadcastTo", shape));
  return MapModes(tensor, [&](const Extents& in) -> absl::StatusOr<ModeSpecs> {
    const int64_t rank = in.size();
    if (static_cast<int64_t>(target.size()) < rank) {
      return ValueErrorCat("BroadcastTo: shape ", shape.ToString(), " has ",
                           target.size(), " modes, fewer than the Tensor's ",
                           rank);
    }
    ModeSpecs out;
    const int64_t lead = target.size() - rank;
    for (int64_t p = 0; p < static_cast<int64_t>(target.size()); ++p) {
      const int64_t source = p - lead;
      if (source < 0 || (in[source] == 1 && target[p] != 1)) {
        out.push_back({-1, target[p]});
      } else if (in[source] == target[p]) {
        out.push_back({static_cast<int>(source), 0});
      } else {
        return ValueErrorCat("BroadcastTo: dim ", source, " of extent ",
                             in[source], " cannot broadcast to extent ",
                             target[p]);
      }
    }
    return out;
  });
}

absl::StatusOr<Tensor> BroadcastTo(const Tensor& tensor,
                                   absl::Span<const int64_t> shape) {
  return Named("BroadcastTo", BroadcastToImpl(tensor, IntTuple::Flat(shape)));
}

static absl::StatusOr<Tensor> BroadcastInDimImpl(
    const Tensor& tensor, const IntTuple& shape,
    absl::Span<const int64_t> dims) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> target,
                          TargetExtents("BroadcastInDim", shape));
  return MapModes(tensor, [&](const Extents& in) -> absl::StatusOr<ModeSpecs> {
    const int64_t rank = in.size();
    bool valid = static_cast<int64_t>(dims.size()) == rank;
    for (size_t i = 0; valid && i < dims.size(); ++i) {
      valid = dims[i] >= 0 && dims[i] < static_cast<int64_t>(target.size()) &&
              (i == 0 || dims[i] > dims[i - 1]);
    }
    if (!valid) {
      return ValueErrorCat(
          "BroadcastInDim: dims (", absl::StrJoin(dims, ","), ") must be ",
          rank, " strictly increasing positions in shape ", shape.ToString());
    }
    ModeSpecs out;
    size_t source = 0;
    for (int64_t p = 0; p < static_cast<int64_t>(target.size()); ++p) {
      if (source < dims.size() && dims[source] == p) {
        if (in[source] == target[p]) {
          out.push_back({static_cast<int>(source), 0});
        } else if (in[source] == 1) {
          out.push_back({-1, target[p]});
        } else {
          return ValueErrorCat("BroadcastInDim: dim ", source, " of extent ",
                               in[source], " cannot broadcast to extent ",
                               target[p]);
        }
        ++source;
      } else {
        out.push_back({-1, target[p]});
      }
    }
    return out;
  });
}

absl::StatusOr<Tensor> BroadcastInDim(const Tensor& tensor,
                                      absl::Span<const int64_t> shape,
                                      absl::Span<const int64_t> dims) {
  return Named("BroadcastInDim",
               BroadcastInDimImpl(tensor, IntTuple::Flat(shape), dims));
}

static absl::StatusOr<Tensor> ReshapeImpl(const Tensor& tensor,
                                          const IntTuple& shape) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> target,
                          TargetExtents("Reshape", shape));
  // Always a tuple, so that composition keeps one result mode per target mode.
  const IntTuple flat = IntTuple::Flat(target);
  STRATA_ASSIGN_OR_RETURN(const int64_t size, TupleProduct(flat));
  if (size != tensor.size()) {
    return ValueErrorCat("Reshape: shape ", shape.ToString(), " has ", size,
                         " elements, the Tensor has ", tensor.size());
  }
  const Representation& rep = TensorAccess::representation(tensor);
  auto subtensors = Candidates(rep);
  auto adjacent = Adjacent(rep);
  STRATA_ASSIGN_OR_RETURN(Layout row_major, Layout::RowMajor(flat));
  if (size == 0) {  // Nothing is reached: any layout of the new shape will do.
    STRATA_ASSIGN_OR_RETURN(subtensors[0].placement,
                            FromTopModes(TopLevelModes(row_major)));
    if (rep.num_levels() > 1) adjacent[0] = subtensors[0].placement;
    return Rebuild(rep, std::move(subtensors), std::move(adjacent));
  }
  // As a function of the row-major index, the Tensor is its modes in reverse
  // order.
  std::vector<Layout> reversed;
  for (int level_layout = 0; level_layout < std::min(rep.num_levels(), 2);
       ++level_layout) {
    Modes modes = TopLevelModes(level_layout == 0 ? rep.subtensor(0).placement
                                                  : rep.adjacent_layouts()[0]);
    std::reverse(modes.begin(), modes.end());
    STRATA_ASSIGN_OR_RETURN(Layout x, MakeLayout(modes));
    reversed.push_back(std::move(x));
  }
  auto joint = ComposeJointly(reversed, 0, row_major);
  if (!joint.ok()) {
    return ValueErrorCat("Reshape: ", tensor.layout().ToString(), " to ",
                         shape.ToString(),
                         " is not a view: ", joint.status().message());
  }
  STRATA_ASSIGN_OR_RETURN(subtensors[0].placement,
                          FromTopModes(TopLevelModes(joint->results[0])));
  if (rep.num_levels() > 1) {
    adjacent[0] = FromTopModes(TopLevelModes(joint->results[1]));
  }
  return Rebuild(rep, std::move(subtensors), std::move(adjacent));
}

absl::StatusOr<Tensor> Reshape(const Tensor& tensor,
                               absl::Span<const int64_t> shape) {
  return Named("Reshape", ReshapeImpl(tensor, IntTuple::Flat(shape)));
}

static absl::StatusOr<Tensor> SliceImpl(const Tensor& tensor, int64_t dim,
                                        int64_t start, int64_t stop,
                                        int64_t step) {
  const Representation& rep = TensorAccess::representation(tensor);
  const Modes l_modes = TopLevelModes(rep.subtensor(0).placement);
  STRATA_RETURN_IF_ERROR(CheckDim("Slice", dim, l_modes.size()));
  const int64_t extent = l_modes[dim].size();
  if (step <= 0) return ValueErrorCat("Slice: step ", step, " is not positive");
  if (start < 0 || start > stop || stop > extent) {
    return ValueErrorCat("Slice: [", start, ", ", stop,
                         ") is not a range within [0, ", extent,
                         "] with start <= stop (dim ", dim, ")");
  }
  // ceil((stop - start) / step) without overflow: 0 <= stop - start and
  // step > 0 (NumPy and PyTorch give 1 element for Slice(t, d, 0, 8,
  // INT64_MAX)).
  const int64_t count = CeilDiv(stop - start, step);
  auto subtensors = Candidates(rep);
  auto adjacent = Adjacent(rep);
  const bool levels = rep.num_levels() > 1;
  Modes s_modes;
  if (levels) s_modes = TopLevelModes(rep.adjacent_layouts()[0]);
  int64_t base = 0;
  if (count == 0) {
    STRATA_ASSIGN_OR_RETURN(Layout empty, Layout::Create(0, 0));
    Modes l = l_modes;
    l[dim] = empty;
    STRATA_ASSIGN_OR_RETURN(subtensors[0].placement, FromTopModes(l));
    if (levels) {
      s_modes[dim] = empty;
      adjacent[0] = FromTopModes(s_modes);
    }
    return Rebuild(rep, std::move(subtensors), std::move(adjacent));
  }
  std::vector<Layout> operands = {l_modes[dim]};
  if (levels) operands.push_back(s_modes[dim]);
  STRATA_ASSIGN_OR_RETURN(Layout stepping, Layout::Create(count, step));
  auto joint = ComposeJointly(operands, start, stepping);
  if (!joint.ok()) {
    return ValueErrorCat("Slice: dim ", dim, " (", l_modes[dim].ToString(),
                         ") from ", start, " by ", step,
                         " is not a layout: ", joint.status().message());
  }
  Modes l = l_modes;
  l[dim] = joint->results[0];
  STRATA_ASSIGN_OR_RETURN(subtensors[0].placement, FromTopModes(l));
  if (!CheckedAdd(subtensors[0].offset, joint->bases[0],
                  &subtensors[0].offset)) {
    return ValueError("Slice: offset overflows");
  }
  if (levels) {
    s_modes[dim] = joint->results[1];
    STRATA_ASSIGN_OR_RETURN(Layout reached, FromTopModes(s_modes));
    base = joint->bases[1];
    STRATA_RETURN_IF_ERROR(
        NarrowLevels(rep, base, std::move(reached), &subtensors, &adjacent));
  }
  return Rebuild(rep, std::move(subtensors), std::move(adjacent));
}

absl::StatusOr<Tensor> Slice(const Tensor& tensor, int64_t dim, int64_t start,
                             int64_t stop, int64_t step) {
  return Named("Slice", SliceImpl(tensor, dim, start, stop, step));
}

static absl::StatusOr<Tensor> AsStridedImpl(const Tensor& tensor,
                                            const Layout& layout,
                                            int64_t offset) {
  if (offset < 0) {
    return ValueErrorCat("AsStrided: offset ", offset,
                         " is negative; Tensor offsets must be non-negative");
  }
  const Representation& rep = TensorAccess::representation(tensor);
  auto subtensors = Candidates(rep);
  auto adjacent = Adjacent(rep);
  subtensors[0].offset = offset;
  subtensors[0].placement = layout;
  if (rep.num_levels() == 1 || layout.size() == 0) {
    if (rep.num_levels() > 1) {
      STRATA_ASSIGN_OR_RETURN(
          adjacent[0],
          Layout::Create(layout.shape(),
                         layout.shape().TransformLeaves(
                             [](size_t, int64_t) { return int64_t{0}; })));
    }
    return Rebuild(rep, std::move(subtensors), std::move(adjacent));
  }
  // Map each new coordinate back to a source coordinate through L_0's left
  // inverse.
  const Subtensor& level0 = rep.subtensor(0);
  const int64_t delta = offset - level0.offset;
  // LeftInverse is only a quasi-inverse where L_0 has stride-0 modes; a
  // carrier index would then name several source coordinates, whose deeper
  // levels may differ.
  const auto l0_extents = level0.placement.shape().leaves();
  const auto l0_strides = level0.placement.stride().leaves();
  for (size_t k = 0; k < l0_extents.size(); ++k) {
    if (l0_extents[k] > 1 && l0_strides[k] == 0) {
      return ValueErrorCat(
          "AsStrided: a multi-subtensor Tensor needs an injective L_0: ",
          level0.placement.ToString(), " has a leaf of extent ", l0_extents[k],
          " with stride 0");
    }
  }
  auto inverse = LeftInverse(level0.placement);
  if (!inverse.ok()) {
    return ValueErrorCat(
        "AsStrided: a multi-subtensor Tensor needs an injective "
        "L_0: ",
        inverse.status().message());
  }
  auto unreached = [&](absl::string_view why) {
    return ValueErrorCat("AsStrided: ", layout.ToString(), " at offset ",
                         offset, " reaches carrier indices that level 0 (",
                         level0.placement.ToString(), " at offset ",
                         level0.offset, ") does not: ", why);
  };
  if (delta < 0) return unreached("the offset precedes level 0's offset");
  auto back = ComposeJointly({*inverse}, delta, layout);
  if (!back.ok()) return unreached(back.status().message());
  const int64_t source_start = back->bases[0];
  // The inverse sends indices L_0 does not reach to coordinates that may lie
  // beyond L_0's domain, where composition extends L_0 along its last mode and
  // can land on the index again (L_0 = (2,2):(4,1) sends 2 to coordinate 4,
  // extended to 2): every source coordinate must be one of L_0's.
  if (int64_t last;
      back->results[0].min_index() < 0 ||
      !CheckedAdd(source_start, back->results[0].max_index(), &last) ||
      last >= level0.placement.size()) {
    return unreached("they map outside level 0's coordinates");
  }
  auto forward = ComposeJointly({level0.placement, rep.adjacent_layouts()[0]},
                                source_start, back->results[0]);
  if (!forward.ok()) return unreached(forward.status().message());
  if (forward->bases[0] != delta ||
      Coalesce(forward->results[0]) != Coalesce(layout)) {
    return unreached("they are not in the image of L_0");
  }
  // The layout, refined like S_0's image, keeps its modes: composition
  // refines an integer layout 6:1 into (2,3):(1,2) and returns a one-mode
  // tuple's mode, either of which would change the view's rank.
  auto keep_modes = [&](const Layout& x) -> absl::StatusOr<Layout> {
    auto rank = [](const Layout& l) {
      return l.shape().is_leaf() ? 1 : l.shape().rank();
    };
    if (rank(x) == rank(layout)) return x;
    if (rank(layout) == 1) return MakeLayout({x});
    return ValueErrorCat("AsStrided: composition changed the rank of ",
                         layout.ToString(), " to that of ", x.ToString());
  };
  STRATA_ASSIGN_OR_RETURN(subtensors[0].placement,
                          keep_modes(forward->results[0]));
  STRATA_ASSIGN_OR_RETURN(Layout reached, keep_modes(forward->results[1]));
  STRATA_RETURN_IF_ERROR(NarrowLevels(
      rep, forward->bases[1], std::move(reached), &subtensors, &adjacent));
  return Rebuild(rep, std::move(subtensors), std::move(adjacent));
}

absl::StatusOr<Tensor> AsStrided(const Tensor& tensor, const Layout& layout,
                                 int64_t offset) {
  return Named("AsStrided", AsStridedImpl(tensor, layout, offset));
}

}  // namespace strata
