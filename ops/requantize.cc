#include "ops/requantize.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "core/errors.h"
#include "core/representation.h"
#include "core/status_macros.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/float_formats.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/dequantize.h"
#include "ops/internal/quantize_chunk.h"
#include "ops/relayout.h"
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
