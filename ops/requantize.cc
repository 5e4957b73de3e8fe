#include "ops/requantize.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/float_formats.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/dequantize.h"
#include "ops/internal/iterate.h"
#include "ops/internal/quantize_chunk.h"
#include "ops/relayout.h"
#include "util/errors.h"
#include "util/status_macros.h"
#include "views/shard_plan.h"
#include "views/views.h"

namespace strata {
namespace {

constexpr char kOp[] = "Requantize";

// The bytes of level `k`'s carrier.
std::pair<const uint8_t*, int64_t> LevelData(const Tensor& t, int k) {
  const Subtensor& s = TensorAccess::representation(t).subtensor(k);
  const int64_t bytes = (s.carrier->size() * s.storage_dtype->bits() + 7) / 8;
  return {static_cast<const uint8_t*>(s.carrier->data()), bytes};
}

// The block of each mode QuantizeBlockScaled gives `to` for `extents`:
// the chosen dim's, or the format's last modes (0 for whole).
std::vector<int64_t> TargetBlocks(const BlockScaling& scaling, int64_t rank,
                                  int64_t blocked_dim) {
  std::vector<int64_t> blocks(rank, scaling.other_modes);
  if (scaling.chosen_mode) {
    if (blocked_dim >= 0 && blocked_dim < rank) {
      blocks[blocked_dim] = scaling.blocks[0];
    }
    return blocks;
  }
  const int64_t fixed = static_cast<int64_t>(scaling.blocks.size());
  for (int64_t k = 0; k < fixed && k < rank; ++k) {
    blocks[rank - 1 - k] = scaling.blocks[fixed - 1 - k];
  }
  return blocks;
}

// NOTE [ Chunks along another dim ]
// A format whose blocks span all of dim 0 (a user's "columnwise" format:
// (whole, 32)) cannot be cut into chunks of rows; it is cut along `along`,
// the first dim whose blocks are finite, in multiples of its block and of
// the source's granule there. Each chunk is quantized on its own and written
// into the result through both Tensors' layouts: codes value by value (a
// chunk is not a run of the result's row-major codes), scales block by block.

// Value `from` of `src` (bits wide, packed) to value `to` of `dst`.
inline void CopyValue(const uint8_t* src, int64_t from, uint8_t* dst,
                      int64_t to, int bits) {
  if (bits % 8 == 0) {
    std::memcpy(dst + to * (bits / 8), src + from * (bits / 8), bits / 8);
  } else {
    WritePacked(dst, bits, to, ReadPacked(src, bits, from));
  }
}

// The access of `layout`'s modes at `counts` coordinates stepping `steps`,
// mode `along` from coordinate `k0` on: each mode's table relative to its
// first coordinate (ForEachIndex wants offset 0 there), and `*base` the
// offset of the first coordinates.
std::vector<ops_internal::ModeAccess> StartsAccess(
    const Layout& layout, const std::vector<int64_t>& full_shape,
    const std::vector<int64_t>& counts, const std::vector<int64_t>& steps,
    int64_t along, int64_t k0, int64_t* base) {
  const std::vector<ops_internal::ModeAccess> at =
      ops_internal::AlignedAccess(layout, full_shape);
  std::vector<ops_internal::ModeAccess> out(counts.size());
  for (size_t m = 0; m < counts.size(); ++m) {
    const int64_t first = static_cast<int64_t>(m) == along ? k0 : 0;
    const int64_t origin = counts[m] > 0 ? at[m].at(first) : 0;
    *base += origin;
    out[m].table.resize(counts[m]);
    for (int64_t j = 0; j < counts[m]; ++j) {
      out[m].table[j] = at[m].at(first + j * steps[m]) - origin;
    }
  }
  return out;
}

// Writes chunk `q` (the result's values [k0, k0 + q's extent) along
// `along`) into `result`'s levels 0 and 1.
void WriteChunkAlong(const Tensor& q, const Tensor& result, int64_t along,
                     int64_t k0, const std::vector<int64_t>& blocks) {
  const Representation& from = TensorAccess::representation(q);
  const Representation& into = TensorAccess::representation(result);
  const std::vector<int64_t> part = q.shape();
  const std::vector<int64_t> whole = result.shape();
  const int64_t rank = static_cast<int64_t>(part.size());
  // Codes, value by value.
  const std::vector<int64_t> ones(rank, 1);
  {
    const Subtensor& src = from.subtensor(0);
    const Subtensor& dst = into.subtensor(0);
    const int bits = src.storage_dtype->bits();
    const auto* src_data = static_cast<const uint8_t*>(src.carrier->data());
    auto* dst_data = static_cast<uint8_t*>(dst.carrier->mutable_data());
    int64_t src_base = src.offset, dst_base = dst.offset;
    auto src_at =
        StartsAccess(src.placement, part, part, ones, along, 0, &src_base);
    auto dst_at =
        StartsAccess(dst.placement, whole, part, ones, along, k0, &dst_base);
    ops_internal::ForEachIndex<2>(
        part, {std::move(src_at), std::move(dst_at)}, {src_base, dst_base},
        [&](const std::array<int64_t, 2>& i) {
          CopyValue(src_data, i[0], dst_data, i[1], bits);
        });
  }
  // Scales, block by block: a block's first value through S_0 and L_1.
  std::vector<int64_t> counts(rank), steps(rank);
  for (int64_t m = 0; m < rank; ++m) {
    steps[m] = blocks[m] == kWholeMode || blocks[m] > part[m]
                   ? std::max<int64_t>(part[m], 1)
                   : blocks[m];
    counts[m] = part[m] == 0 ? 0 : (part[m] + steps[m] - 1) / steps[m];
  }
  const Subtensor& src = from.subtensor(1);
  const Subtensor& dst = into.subtensor(1);
  const int bits = src.storage_dtype->bits();
  const auto* src_data = static_cast<const uint8_t*>(src.carrier->data());
  auto* dst_data = static_cast<uint8_t*>(dst.carrier->mutable_data());
  int64_t src_base = 0, dst_base = 0;
  auto src_at = StartsAccess(from.adjacent_layouts()[0], part, counts, steps,
                             along, 0, &src_base);
  auto dst_at = StartsAccess(into.adjacent_layouts()[0], whole, counts, steps,
                             along, k0, &dst_base);
  ops_internal::ForEachIndex<2>(
      counts, {std::move(src_at), std::move(dst_at)}, {src_base, dst_base},
      [&](const std::array<int64_t, 2>& i) {
        CopyValue(src_data, src.offset + src.placement(i[0]), dst_data,
                  dst.offset + dst.placement(i[1]), bits);
      });
}

// 128x4 tiles whose blocks lie along dim 0 of a rank-2 Tensor: a chunk of
// rows is not a run of tiles, so the chunks are quantized with row-major
// scales and the scales then move into the tiles (Relayout's bytes are the
// quantizer's); the result takes `like`'s layouts, its codes the chunks'.
absl::StatusOr<Tensor> ChunkedThenTiled(const Tensor& t,
                                        const CompoundDType& to,
                                        const QuantizeOptions& options,
                                        const Tensor& like) {
  QuantizeOptions row_major = options;
  row_major.scale_layout = ScaleLayout::kRowMajor;
  STRATA_ASSIGN_OR_RETURN(Tensor rows, Requantize(t, to, row_major));
  STRATA_ASSIGN_OR_RETURN(Tensor tiles,
                          Relayout(rows, ScaleLayout::kSwizzled128x4));
  const Representation& want = TensorAccess::representation(like);
  const Representation& codes = TensorAccess::representation(rows);
  const Representation& scales = TensorAccess::representation(tiles);
  std::vector<SubtensorCandidate> subtensors;
  subtensors.push_back({want.subtensor(0).storage_dtype,
                        codes.subtensor(0).carrier, codes.subtensor(0).offset,
                        want.subtensor(0).placement});
  subtensors.push_back({want.subtensor(1).storage_dtype,
                        scales.subtensor(1).carrier, scales.subtensor(1).offset,
                        want.subtensor(1).placement});
  std::vector<absl::StatusOr<Layout>> adjacent(want.adjacent_layouts().begin(),
                                               want.adjacent_layouts().end());
  for (int k = 2; k < want.num_levels(); ++k) {
    subtensors.push_back({want.subtensor(k).storage_dtype,
                          codes.subtensor(k).carrier, codes.subtensor(k).offset,
                          want.subtensor(k).placement});
  }
  STRATA_ASSIGN_OR_RETURN(
      auto rep,
      Representation::Create(&to, std::move(subtensors), std::move(adjacent)));
  return MakeTensor(std::move(rep));
}

// NOTE [ Chunks along another dim ]: `result` (its layouts made, its
// carriers zero) filled chunk by chunk along `along`.
absl::StatusOr<Tensor> ChunkedAlong(const Tensor& t, const CompoundDType& to,
                                    const QuantizeOptions& options,
                                    Tensor result,
                                    const std::vector<int64_t>& blocks,
                                    int64_t along) {
  const std::vector<int64_t> shape = t.shape();
  const Representation& out = TensorAccess::representation(result);
  STRATA_ASSIGN_OR_RETURN(const int64_t granule, ShardGranule(t, along));
  const int64_t unit = std::lcm(granule, blocks[along]);
  const int64_t slab_bytes = 4 * (t.size() / shape[along]);
  const int64_t per_chunk = std::max<int64_t>(
      unit,
      std::max<int64_t>(1, options.max_chunk_bytes / slab_bytes) / unit * unit);
  const auto chunk_of = [&](int64_t k0) -> absl::StatusOr<Tensor> {
    STRATA_ASSIGN_OR_RETURN(
        Tensor part,
        Slice(t, along, k0, std::min(shape[along], k0 + per_chunk)));
    return Dequantize(part, *dtypes::Float32());
  };
  // The whole amax first, where a tensor scale needs it.
  int64_t whole_amax_bits = -1;
  if (out.num_levels() > 2) {
    uint32_t amax = 0;
    for (int64_t k0 = 0; k0 < shape[along]; k0 += per_chunk) {
      STRATA_ASSIGN_OR_RETURN(Tensor values, chunk_of(k0));
      const auto* v = static_cast<const float*>(values.carrier()->data());
      for (int64_t i = 0; i < values.size(); ++i) {
        amax = std::max(amax, FloatBits(v[i]) & 0x7FFFFFFFu);
      }
    }
    whole_amax_bits = amax;
  }
  for (int64_t k0 = 0; k0 < shape[along]; k0 += per_chunk) {
    STRATA_ASSIGN_OR_RETURN(Tensor values, chunk_of(k0));
    STRATA_ASSIGN_OR_RETURN(
        Tensor q, ops_internal::QuantizeChunk(values, to, options.blocked_dim,
                                              options.scale_layout,
                                              whole_amax_bits, false));
    WriteChunkAlong(q, result, along, k0, blocks);
    if (out.num_levels() > 2) {
      const auto [bytes, n] = LevelData(q, 2);
      if (n > 0)
        std::memcpy(out.subtensor(2).carrier->mutable_data(), bytes, n);
    }
  }
  return result;
}

}  // namespace

absl::StatusOr<Tensor> Requantize(const Tensor& t, const CompoundDType& to,
                                  const QuantizeOptions& options) {
  if (options.max_chunk_bytes < 1) {
    return ValueErrorCat(kOp, ": max_chunk_bytes is ", options.max_chunk_bytes,
                         "; it must be positive");
  }
  const BlockScaleRule* to_rule = FindBlockScaleRule(to);
  const int64_t dim = options.blocked_dim;
  if (t.num_subtensors() == 1 && t.dtype().AsSimple() != nullptr) {
    return QuantizeBlockScaled(t, to, dim, options.scale_layout);
  }
  STRATA_RETURN_IF_ERROR(Levels(t).status());  // The family, or refused.
  const std::vector<int64_t> shape = t.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());

  // Relayout where the format and its blocks stay.
  if (&to == &t.dtype() && to_rule != nullptr) {
    bool stays = !to_rule->scaling().chosen_mode || dim == kBlocksOfTheFormat;
    if (!stays && dim >= 0 && dim < rank) {
      absl::StatusOr<std::vector<int64_t>> blocks = ScaleBlocks(t);
      stays = blocks.ok() && (*blocks)[dim] == to_rule->block_size() &&
              shape[dim] > 0;
    }
    if (stays) return Relayout(t, options.scale_layout);
  }

  // The result's layouts and carriers, checked before any value is read
  // (QuantizeBlockScaled's refusals of the shape, dim, layout and format).
  auto shape_only = RecordedCarrier::Create(*dtypes::Float32(),
                                            std::max<int64_t>(t.size(), 0));
  STRATA_ASSIGN_OR_RETURN(Layout row_major,
                          Layout::RowMajor(IntTuple::Flat(shape)));
  STRATA_ASSIGN_OR_RETURN(Tensor like,
                          Tensor::Create(shape_only, 0, row_major));
  STRATA_ASSIGN_OR_RETURN(
      Tensor result,
      ops_internal::QuantizeChunk(like, to, dim, options.scale_layout, -1,
                                  /*layouts_only=*/true));
  if (t.size() == 0) return result;

  // The chunks (NOTE [ Requantizing in chunks ]).
  const std::vector<int64_t> blocks =
      TargetBlocks(to_rule->scaling(), rank, dim);
  const Representation& out = TensorAccess::representation(result);
  const bool tensor_scale = out.num_levels() > 2;
  bool one_block = true;
  for (int64_t m = 0; m < rank; ++m) {
    one_block = one_block && (blocks[m] == kWholeMode || blocks[m] >= shape[m]);
  }
  const bool swizzled = options.scale_layout == ScaleLayout::kSwizzled128x4;
  bool chunked = rank >= 1;
  int64_t unit = 1;
  if (chunked) {
    STRATA_ASSIGN_OR_RETURN(const int64_t granule, ShardGranule(t, 0));
    unit = std::lcm(unit, granule);
    if (blocks[0] == kWholeMode && !one_block) {
      // NOTE [ Chunks along another dim ].
      int64_t along = 1;
      while (along < rank &&
             (blocks[along] == kWholeMode || blocks[along] >= shape[along])) {
        ++along;
      }
      return ChunkedAlong(t, to, options, std::move(result), blocks, along);
    }
    if (blocks[0] == kWholeMode) {
      chunked = one_block;
    } else if (blocks[0] > 1) {
      unit = std::lcm(unit, blocks[0]);
    }
    if (swizzled && rank == 2 && dim == 0) {
      return ChunkedThenTiled(t, to, options, result);
    }
    if (swizzled && rank == 2) unit = std::lcm<int64_t>(unit, 128);
    const int64_t row_values = t.size() / shape[0];
    if (out.subtensor(0).storage_dtype->bits() == 4 && row_values % 2 != 0) {
      unit = std::lcm<int64_t>(unit, 2);
    }
  }
  int64_t rows_per_chunk = rank >= 1 ? shape[0] : 1;
  if (chunked) {
    const int64_t row_bytes = 4 * (t.size() / shape[0]);
    const int64_t fit =
        std::max<int64_t>(1, options.max_chunk_bytes / row_bytes);
    rows_per_chunk = std::max<int64_t>(unit, fit / unit * unit);
  }
  const auto chunk_of = [&](int64_t r0) -> absl::StatusOr<Tensor> {
    if (!chunked || (r0 == 0 && rows_per_chunk >= shape[0])) {
      return Dequantize(t, *dtypes::Float32());
    }
    STRATA_ASSIGN_OR_RETURN(
        Tensor part, Slice(t, 0, r0, std::min(shape[0], r0 + rows_per_chunk)));
    return Dequantize(part, *dtypes::Float32());
  };
  const int64_t rows = chunked ? shape[0] : 1;
  const int64_t step = chunked ? rows_per_chunk : 1;

  // Pass 1, where the target scales by the whole Tensor: its amax.
  int64_t whole_amax_bits = -1;
  if (chunked && (tensor_scale || one_block)) {
    uint32_t amax = 0;
    for (int64_t r0 = 0; r0 < rows; r0 += step) {
      STRATA_ASSIGN_OR_RETURN(Tensor values, chunk_of(r0));
      const auto* v = static_cast<const float*>(values.carrier()->data());
      for (int64_t i = 0; i < values.size(); ++i) {
        amax = std::max(amax, FloatBits(v[i]) & 0x7FFFFFFFu);
      }
    }
    whole_amax_bits = amax;
  }

  // Pass 2: each chunk quantized, its bytes appended.
  std::vector<int64_t> filled(out.num_levels(), 0);
  for (int64_t r0 = 0; r0 < rows; r0 += step) {
    STRATA_ASSIGN_OR_RETURN(Tensor values, chunk_of(r0));
    STRATA_ASSIGN_OR_RETURN(Tensor q, ops_internal::QuantizeChunk(
                                          values, to, dim, options.scale_layout,
                                          whole_amax_bits, false));
    for (int k = 0; k < out.num_levels(); ++k) {
      const auto [bytes, n] = LevelData(q, k);
      const Subtensor& level = out.subtensor(k);
      const int64_t capacity =
          (level.carrier->size() * level.storage_dtype->bits() + 7) / 8;
      if (k == 2 || (k == 1 && one_block)) {
        // The one tensor scale, or the one block scale: every chunk's is the
        // same (the whole amax).
        if (n > 0) std::memcpy(level.carrier->mutable_data(), bytes, n);
        filled[k] = n;
        continue;
      }
      if (filled[k] + n > capacity) {
        return ValueErrorCat(kOp, ": level ", k, " of chunk at row ", r0,
                             " does not fit the result (", filled[k], " + ", n,
                             " > ", capacity, " bytes)");
      }
      if (n > 0) {
        std::memcpy(
            static_cast<uint8_t*>(level.carrier->mutable_data()) + filled[k],
            bytes, n);
      }
      filled[k] += n;
    }
  }
  for (int k = 0; k < 2; ++k) {
    const Subtensor& level = out.subtensor(k);
    const int64_t capacity =
        (level.carrier->size() * level.storage_dtype->bits() + 7) / 8;
    if (filled[k] != capacity) {
      return ValueErrorCat(kOp, ": the chunks filled ", filled[k], " of the ",
                           capacity, " bytes of level ", k);
    }
  }
  return result;
}

}  // namespace strata
