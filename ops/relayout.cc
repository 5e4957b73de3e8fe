#include "ops/relayout.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "core/errors.h"
#include "core/representation.h"
#include "core/status_macros.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/algebra.h"
#include "layout/checked_math.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/internal/iterate.h"
#include "ops/internal/scale_grid.h"

namespace strata {
namespace {

using ops_internal::AlignedAccess;
using ops_internal::ModeAccess;
using ops_internal::SameModeSizes;

constexpr char kOp[] = "Relayout";

// The first run of one scale along each mode, through L_1 o S_0 (a ragged
// mode merges S_0's coordinates in a stride-0 leaf of L_1): the blocks
// (NOTE [ Relayout without copying codes ]).
std::vector<int64_t> BlocksOf(const std::vector<int64_t>& shape,
                              const std::vector<ModeAccess>& s0,
                              const Layout& l1) {
  std::vector<int64_t> blocks(shape.size(), 1);
  for (size_t m = 0; m < shape.size(); ++m) {
    if (shape[m] == 0) continue;
    const int64_t first = l1(s0[m].at(0));
    int64_t run = 1;
    while (run < shape[m] && l1(s0[m].at(run)) == first) ++run;
    blocks[m] = shape[m] == 0 ? 1 : run;
  }
  return blocks;
}

// A carrier for the result: `source` itself where it is a host carrier, else
// a host copy of its bytes.
absl::StatusOr<std::shared_ptr<Carrier>> HostOrCopy(
    const std::shared_ptr<Carrier>& source, int level) {
  if (source->class_name() == "host") return source;
  const SimpleDType* dtype = source->dtype().AsSimple();
  if (dtype == nullptr || (source->size() > 0 && source->data() == nullptr)) {
    return ValueErrorCat(kOp, ": level ", level, "'s ", source->class_name(),
                         " carrier holds no host data to copy");
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<HostCarrier> copy,
                          HostCarrier::Create(*dtype, source->size()));
  STRATA_ASSIGN_OR_RETURN(const int64_t bytes,
                          StorageBytes(*dtype, source->size()));
  if (bytes > 0) std::memcpy(copy->mutable_data(), source->data(), bytes);
  return std::shared_ptr<Carrier>(std::move(copy));
}

// The new scale level's carrier, of the codes' carrier class where Strata
// can make one anew (NOTE [ Relayout without copying codes ]); otherwise a
// host carrier, and the caller copies the other levels into host carriers.
struct ScaleCarrier {
  std::shared_ptr<Carrier> carrier;
  bool shares_class;
};

absl::StatusOr<ScaleCarrier> MakeScaleCarrier(
    const Carrier& codes, const SimpleDType& dtype, int64_t count,
    absl::FunctionRef<void(uint8_t*)> write) {
  const absl::string_view class_name = codes.class_name();
  if (class_name == "mapped") {
    STRATA_ASSIGN_OR_RETURN(const int64_t bytes, StorageBytes(dtype, count));
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const MappedRegion> region,
                            MappedRegion::Anonymous(bytes, write));
    STRATA_ASSIGN_OR_RETURN(
        std::shared_ptr<MappedCarrier> carrier,
        MappedCarrier::Create(dtype, count, std::move(region), 0));
    return ScaleCarrier{std::move(carrier), true};
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<HostCarrier> host,
                          HostCarrier::Create(dtype, count));
  write(static_cast<uint8_t*>(host->mutable_data()));
  if (class_name == "host") return ScaleCarrier{std::move(host), true};
  if (class_name == "external") {
    // Memory Strata owns, handed out as an external carrier whose deleter
    // lets it go: the class of a DLPack import, made anew.
    void* data = host->mutable_data();
    STRATA_ASSIGN_OR_RETURN(
        std::shared_ptr<ExternalCarrier> external,
        ExternalCarrier::Create(
            dtype, count, data,
            [keep = std::move(host)]() mutable { keep.reset(); }));
    return ScaleCarrier{std::move(external), true};
  }
  return ScaleCarrier{std::move(host), false};
}

// S_0 from the template's modes, each composed with a compact layout of L_0's
// mode so that the result is congruent with L_0.
absl::StatusOr<Layout> CongruentAdjacent(const Layout& l0,
                                         const Layout& template_s0) {
  const auto l0_modes = TopLevelModes(l0);
  const auto s0_modes = TopLevelModes(template_s0);
  if (l0_modes.size() != s0_modes.size()) {
    return ValueErrorCat(kOp, ": L_0 ", l0.ToString(), " and the scales' S_0 ",
                         template_s0.ToString(), " differ in rank");
  }
  if (l0_modes.empty()) return template_s0;
  std::vector<Layout> modes;
  for (size_t m = 0; m < l0_modes.size(); ++m) {
    STRATA_ASSIGN_OR_RETURN(Layout compact,
                            Layout::ColumnMajor(l0_modes[m].shape()));
    absl::StatusOr<Layout> composed = Composition(s0_modes[m], compact);
    if (!composed.ok() || composed->shape() != l0_modes[m].shape()) {
      return ValueErrorCat(
          kOp, ": mode ", m, " of L_0, ", l0_modes[m].ToString(),
          ", cannot address the new scales' S_0 mode ", s0_modes[m].ToString());
    }
    modes.push_back(*std::move(composed));
  }
  return MakeLayout(modes);
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ScaleBlocks(const Tensor& t) {
  const CompoundDType* format = t.dtype().AsCompound();
  if (format == nullptr || FindBlockScaleRule(*format) == nullptr ||
      t.num_subtensors() < 2) {
    return OneSubtensorRequiredError(absl::StrCat(
        "ScaleBlocks: ", t.dtype().name(), " of ", t.num_subtensors(),
        " subtensors is not a block-scaled Tensor"));
  }
  const Representation& rep = TensorAccess::representation(t);
  const std::vector<int64_t> shape = t.shape();
  return BlocksOf(shape, AlignedAccess(rep.adjacent_layouts()[0], shape),
                  rep.subtensor(1).placement);
}

absl::StatusOr<Tensor> Relayout(const Tensor& t, ScaleLayout scale_layout) {
  const CompoundDType* format = t.dtype().AsCompound();
  const BlockScaleRule* rule =
      format != nullptr ? FindBlockScaleRule(*format) : nullptr;
  if (rule == nullptr || t.num_subtensors() < 2) {
    return OneSubtensorRequiredError(absl::StrCat(
        kOp, ": ", t.dtype().name(), " of ", t.num_subtensors(),
        " subtensors is not a block-scaled Tensor with scales to move"));
  }
  if (scale_layout != ScaleLayout::kRowMajor &&
      scale_layout != ScaleLayout::kSwizzled128x4) {
    return ValueErrorCat(kOp, ": scale layout ", static_cast<int>(scale_layout),
                         " is not row_major (0) or swizzled_128x4 (1)");
  }
  const Representation& rep = TensorAccess::representation(t);
  const Subtensor& codes = rep.subtensor(0);
  const Subtensor& scales = rep.subtensor(1);
  const SimpleDType& scale_dtype = *scales.storage_dtype;
  if (scale_dtype.bits() % 8 != 0) {
    return ValueErrorCat(kOp, ": scales of ", scale_dtype.name(), " (",
                         scale_dtype.bits(), " bits) are not whole bytes");
  }
  const int64_t width = scale_dtype.bits() / 8;
  const std::vector<int64_t> shape = t.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (t.size() > 0 && scales.carrier->data() == nullptr) {
    return ValueErrorCat(kOp, ": the ", scales.carrier->class_name(),
                         " carrier of the scales holds no host data");
  }
  const Layout& s0 = rep.adjacent_layouts()[0];
  const std::vector<ModeAccess> old_access = AlignedAccess(s0, shape);
  std::vector<int64_t> blocks = BlocksOf(shape, old_access, scales.placement);

  // The asked layout's S_0 and L_1 for a compact Tensor of this shape.
  Layout template_s0, l1;
  int64_t count = 0;
  if (scale_layout == ScaleLayout::kRowMajor) {
    STRATA_ASSIGN_OR_RETURN(RowMajorBlockScaledLayouts layouts,
                            MakeRowMajorBlockScaledLayouts(shape, blocks));
    template_s0 = std::move(layouts.adjacent);
    l1 = std::move(layouts.scales);
    count = layouts.scale_count;
  } else {
    const int64_t b = rule->block_size();
    const bool float8_scales = &scale_dtype == dtypes::Float8E4M3FN() ||
                               &scale_dtype == dtypes::Float8E8M0FNU();
    int64_t blocked = -1;
    for (int64_t m = rank; b > 0 && m-- > std::max<int64_t>(0, rank - 2);) {
      if (blocked < 0 && blocks[m] == b && shape[m] % b == 0) blocked = m;
    }
    if (!float8_scales || b == 0 || rank < 2 || blocked < 0) {
      return ValueErrorCat(
          kOp,
          ": scale layout swizzled_128x4 applies to the 1-D formats with "
          "float8 scales, blocked along one of the last two dims of a "
          "Tensor of rank >= 2; ",
          t.dtype().name(), " of shape (", absl::StrJoin(shape, ","),
          ") has blocks (", absl::StrJoin(blocks, ","), ")");
    }
    for (int64_t m = 0; m < rank; ++m) {
      if (m != blocked) blocks[m] = 1;
    }
    STRATA_ASSIGN_OR_RETURN(
        ops_internal::ScaleGrid grid,
        ops_internal::PlanSwizzle(shape, blocked, shape[blocked] / b));
    STRATA_ASSIGN_OR_RETURN(
        BlockScaledValueLayouts layouts,
        MakeBlockScaledValueLayouts(shape, blocks, grid.domain));
    template_s0 = std::move(layouts.adjacent);
    l1 = std::move(grid.l1);
    count = grid.scale_size;
  }
  if (t.size() == 0) count = 0;
  STRATA_ASSIGN_OR_RETURN(Layout new_s0,
                          CongruentAdjacent(codes.placement, template_s0));

  // The scales, one block at a time: the block's first coordinate on every
  // mode, through the old S_0 and L_1 and through the new ones.
  //
  // L_1 o S_0, old and new, as layouts where the algebra admits them: each
  // mode then a table or a stride of carrier offsets, and a block is a sum
  // of lookups, not two evaluations of hierarchical layouts.
  absl::StatusOr<Layout> old_full = Composition(scales.placement, s0);
  absl::StatusOr<Layout> new_full = Composition(l1, new_s0);
  auto write_scales = [&](uint8_t* to) {
    if (t.size() > 0 && rank >= 1 && old_full.ok() && new_full.ok() &&
        SameModeSizes(*old_full, s0) && SameModeSizes(*new_full, new_s0)) {
      const std::vector<ModeAccess> from_at = AlignedAccess(*old_full, shape);
      const std::vector<ModeAccess> to_at = AlignedAccess(*new_full, shape);
      const auto* from = static_cast<const uint8_t*>(scales.carrier->data()) +
                         width * scales.offset;
      // The innermost mode's block offsets, once, merged into segments of
      // blocks whose scales are consecutive bytes on both sides (4 in a row of
      // the 128x4 tiles): one copy per segment.
      const int64_t last = rank - 1;
      struct Segment {
        int64_t from, to, bytes;
      };
      std::vector<Segment> segments;
      for (int64_t c = 0; c < shape[last]; c += blocks[last]) {
        const int64_t from_c = width * from_at[last].at(c);
        const int64_t to_c = width * to_at[last].at(c);
        if (!segments.empty()) {
          Segment& back = segments.back();
          if (from_c == back.from + back.bytes &&
              to_c == back.to + back.bytes) {
            back.bytes += width;
            continue;
          }
        }
        segments.push_back({from_c, to_c, width});
      }
      std::vector<int64_t> block(rank, 0);
      while (true) {
        int64_t from_base = 0, to_base = 0;
        for (int64_t m = 0; m < last; ++m) {
          from_base += width * from_at[m].at(block[m] * blocks[m]);
          to_base += width * to_at[m].at(block[m] * blocks[m]);
        }
        const uint8_t* from_row = from + from_base;
        uint8_t* to_row = to + to_base;
        for (const Segment& segment : segments) {
          if (segment.bytes == 4) {  // The tiles' rows: a fixed-size copy.
            std::memcpy(to_row + segment.to, from_row + segment.from, 4);
          } else {
            std::memcpy(to_row + segment.to, from_row + segment.from,
                        segment.bytes);
          }
        }
        int64_t m = last;
        while (m-- > 0) {
          if (++block[m] * blocks[m] < shape[m]) break;
          block[m] = 0;
        }
        if (m < 0) break;
      }
    } else if (t.size() > 0) {
      const std::vector<ModeAccess> new_access = AlignedAccess(new_s0, shape);
      const auto* from = static_cast<const uint8_t*>(scales.carrier->data());
      std::vector<int64_t> block(rank, 0);
      while (true) {
        int64_t old_i1 = 0, new_i1 = 0;
        for (int64_t m = 0; m < rank; ++m) {
          old_i1 += old_access[m].at(block[m] * blocks[m]);
          new_i1 += new_access[m].at(block[m] * blocks[m]);
        }
        std::memcpy(to + width * l1(new_i1),
                    from + width * (scales.offset + scales.placement(old_i1)),
                    width);
        int64_t m = rank;
        while (m-- > 0) {
          if (++block[m] * blocks[m] < shape[m]) break;
          block[m] = 0;
        }
        if (m < 0) break;
      }
    }
  };
  STRATA_ASSIGN_OR_RETURN(
      ScaleCarrier new_scales,
      MakeScaleCarrier(*codes.carrier, scale_dtype, count, write_scales));

  std::vector<SubtensorCandidate> subtensors;
  std::shared_ptr<Carrier> code_carrier = codes.carrier;
  if (!new_scales.shares_class) {
    STRATA_ASSIGN_OR_RETURN(code_carrier, HostOrCopy(codes.carrier, 0));
  }
  subtensors.push_back({codes.storage_dtype, std::move(code_carrier),
                        codes.offset, codes.placement});
  subtensors.push_back({&scale_dtype, std::move(new_scales.carrier), 0, l1});
  std::vector<absl::StatusOr<Layout>> adjacent;
  adjacent.push_back(std::move(new_s0));
  if (rep.num_levels() > 2) {
    // The tensor scale: its one value, shared, reached from every new scale.
    const Subtensor& level2 = rep.subtensor(2);
    const int64_t at =
        level2.offset + level2.placement(rep.adjacent_layouts()[1](0));
    std::shared_ptr<Carrier> carrier = level2.carrier;
    if (!new_scales.shares_class) {
      STRATA_ASSIGN_OR_RETURN(carrier, HostOrCopy(level2.carrier, 2));
    }
    STRATA_ASSIGN_OR_RETURN(Layout l2, Layout::Create(1, 0));
    STRATA_ASSIGN_OR_RETURN(
        Layout s1,
        Layout::Create(l1.shape(), l1.shape().TransformLeaves(
                                       [](size_t, int64_t) { return 0; })));
    subtensors.push_back(
        {level2.storage_dtype, std::move(carrier), at, std::move(l2)});
    adjacent.push_back(std::move(s1));
  }
  STRATA_ASSIGN_OR_RETURN(auto relaid,
                          Representation::Create(format, std::move(subtensors),
                                                 std::move(adjacent)));
  return MakeTensor(std::move(relaid));
}

}  // namespace strata
