#include "ops/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/float_formats.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/algebra.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/internal/checks.h"
#include "ops/internal/iterate.h"
#include "ops/internal/quantize_chunk.h"
#include "ops/internal/quantize_family.h"
#include "ops/internal/quantize_kernel.h"
#include "ops/internal/require.h"
#include "ops/internal/scale_grid.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

using ops_internal::RequireHostData;
using ops_internal::RequireKernelTensor;
using ops_internal::RowMajorOffsets;
namespace {

using ops_internal::PlanRowMajor;
using ops_internal::PlanSwizzle;
using ops_internal::QuantFormat;
using ops_internal::ScaleGrid;
using ops_internal::StoreSwizzledBand;
using ops_internal::SwizzledBlockTerm;
using ops_internal::SwizzledRowBase;

struct Source {
  const uint8_t* bytes;
  const SimpleDType* dtype;
  float Load(int64_t index) const {
    if (dtype == dtypes::Float32()) {
      float f;
      std::memcpy(&f, bytes + 4 * index, 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, bytes + 2 * index, 2);
    return dtype == dtypes::Float16() ? HalfToFloat(h) : BFloat16ToFloat(h);
  }
};

constexpr const char* kQuantizableFormats =
    "mxfp8_e4m3, mxfp4, nvfp4, nvfp4_ts, nvfp4_ts_recip, fp8_e4m3_tensorwise, "
    "fp8_e4m3_rowwise, fp8_e4m3_block1x128, fp8_e4m3_block128x128, "
    "fp8_e4m3_block128x128_ue8m0, q8_0, "
    "q4_0";

using ops_internal::FamilyRecipe;

// The arithmetic of a format beyond the 1-D MX kernels (NOTE [ The family's
// quantization arithmetic ]): every float8_e4m3fn x float32 format (the
// built-in fp8_e4m3_* and user-made ones of any blocks), and the built-in
// nvfp4_ts, nvfp4_ts_recip, q8_0 and q4_0 by identity (their layouts alone
// do not say the arithmetic).
std::optional<FamilyRecipe> FamilyRecipeOf(const CompoundDType& format) {
  if (&format == dtypes::NVFP4TS()) return FamilyRecipe::kNVFP4TS;
  if (&format == dtypes::FP8E4M3Block128x128UE8M0()) {
    return FamilyRecipe::kFP8UE8M0;
  }
  if (&format == dtypes::NVFP4TSRecip()) return FamilyRecipe::kNVFP4TSRecip;
  if (&format == dtypes::Q8_0()) return FamilyRecipe::kQ8_0;
  if (&format == dtypes::Q4_0()) return FamilyRecipe::kQ4_0;
  const auto types = format.simple_types();
  if (types.size() == 2 && types[0] == dtypes::Float8E4M3FN() &&
      types[1] == dtypes::Float32()) {
    return FamilyRecipe::kFP8;
  }
  return std::nullopt;
}

// Whether `mode` reads its coordinates at a constant stride from 0: extent
// at most 1, or one leaf of stride `stride` once coalesced. O(its leaves).
bool IsOneRun(const Layout& mode, int64_t stride) {
  if (mode.size() <= 1) return true;
  const Layout run = Coalesce(mode);
  return run.shape().is_leaf() && run.stride().value() == stride;
}

// The source as row-major float32: its own values where it already is one,
// else a widened copy in `copy`.
const float* RowMajorFloats(const Tensor& src, absl::Span<const Layout> modes,
                            std::vector<float>* copy) {
  const int rank = static_cast<int>(modes.size());
  const SimpleDType* in = src.dtype().AsSimple();
  const Source source{static_cast<const uint8_t*>(src.carrier()->data()), in};
  if (rank == 0) {  // A scalar: its one value.
    copy->assign(1, source.Load(src.offset()));
    return copy->data();
  }
  // Its own row-major array where each mode is one run whose stride is the
  // product of the extents after it, known in O(rank) (offset tables cost
  // O(rows + columns): a seventh of quantizing a 32x4096 source in cache
  // into fp8 1x128). Any other float32 layout is no row-major array either
  // (a mode whose offsets are linear coalesces to one run), so the tables
  // below serve the copy alone.
  if (in == dtypes::Float32()) {
    int64_t stride = 1;  // No product overflows: at most the source's size.
    bool row_major = true;
    for (int j = rank - 1; row_major && j >= 0; --j) {
      row_major = IsOneRun(modes[j], stride);
      stride *= modes[j].size();
    }
    if (row_major) {
      return static_cast<const float*>(src.carrier()->data()) + src.offset();
    }
  }
  const std::vector<int64_t> outer = RowMajorOffsets(modes, 0, rank - 1);
  const std::vector<int64_t> inner = RowMajorOffsets(modes, rank - 1, rank);
  const int64_t k = static_cast<int64_t>(inner.size());
  copy->resize(outer.size() * k);
  float* out = copy->data();
  for (int64_t base : outer) {
    for (int64_t i = 0; i < k; ++i) {
      *out++ = source.Load(src.offset() + base + inner[i]);
    }
  }
  return copy->data();
}

// NOTE [ Outputs written in full ]
// A quantized level that the kernel writes in full (every value code, every
// row-major scale) starts unzeroed: zeroing 16 MiB of codes for a 64 MiB
// source cost a fifth of nvfp4_ts's time. A level with bytes the kernel never
// writes (the padding of the 128x4 tiles) or one not written at all (layouts
// only, an empty source) starts zeroed.
absl::StatusOr<std::shared_ptr<HostCarrier>> NewOutput(const SimpleDType& dtype,
                                                       int64_t size,
                                                       bool written_in_full) {
  return written_in_full ? HostCarrier::CreateForOverwrite(dtype, size)
                         : HostCarrier::Create(dtype, size);
}

// QuantizeBlockScaled for the formats of FamilyRecipeOf.
absl::StatusOr<Tensor> QuantizeIntoFamily(
    const Tensor& src, const CompoundDType& format, const BlockScaleRule& rule,
    FamilyRecipe recipe, int64_t blocked_dim, ScaleLayout scale_layout,
    int64_t whole_amax_bits, bool layouts_only) {
  const BlockScaling& scaling = rule.scaling();
  const auto modes = TopLevelModes(src.layout());
  const int64_t rank = modes.size();
  std::vector<int64_t> extents(rank);
  for (int64_t j = 0; j < rank; ++j) extents[j] = modes[j].size();
  // The block of each mode: the chosen one, or the format's last modes.
  std::vector<int64_t> block_of_mode(rank, scaling.other_modes);
  if (scaling.chosen_mode) {
    if (blocked_dim < 0 || blocked_dim >= rank) {
      return ValueErrorCat("QuantizeBlockScaled: blocked dim ", blocked_dim,
                           " is out of range for rank ", rank);
    }
    block_of_mode[blocked_dim] = scaling.blocks[0];
  } else {
    const int64_t fixed = static_cast<int64_t>(scaling.blocks.size());
    const bool one_fixed = fixed == 1 && rank >= 1;
    if (blocked_dim != kBlocksOfTheFormat &&
        !(one_fixed && blocked_dim == rank - 1)) {
      return ValueErrorCat(
          "QuantizeBlockScaled: ", format.name(), " fixes its blocks (",
          scaling.Describe(),
          "): pass kBlocksOfTheFormat (BLOCKED_MODE '-'), not blocked dim ",
          blocked_dim);
    }
    for (int64_t k = 0; k < fixed && k < rank; ++k) {
      block_of_mode[rank - 1 - k] = scaling.blocks[fixed - 1 - k];
    }
    // A block of the format that no dim holds would be partial.
    for (int64_t k = rank; k < fixed && !scaling.ragged; ++k) {
      const int64_t b = scaling.blocks[fixed - 1 - k];
      if (b > 1) {
        return ValueErrorCat("QuantizeBlockScaled: ", format.name(),
                             " needs a dim for each of its blocks (",
                             scaling.Describe(), "); the source has rank ",
                             rank);
      }
    }
  }
  for (int64_t j = 0; j < rank; ++j) {
    const int64_t b = block_of_mode[j];
    if (b > 1 && extents[j] % b != 0 && !scaling.ragged) {
      return ValueErrorCat("QuantizeBlockScaled: dim ", j, " has extent ",
                           extents[j], ", not divisible by the ", format.name(),
                           " block size ", b);
    }
  }
  const bool swizzled = scale_layout == ScaleLayout::kSwizzled128x4;
  const bool nv =
      recipe == FamilyRecipe::kNVFP4TS || recipe == FamilyRecipe::kNVFP4TSRecip;
  if (swizzled && !nv) {
    return ValueErrorCat("QuantizeBlockScaled: scale layout swizzled_128x4 ",
                         "applies to the 1-D formats with float8 scales, not ",
                         format.name());
  }
  if (swizzled && (rank < 2 || blocked_dim < rank - 2)) {
    return ValueErrorCat(
        "QuantizeBlockScaled: scale layout swizzled_128x4 needs a source of "
        "rank >= 2 blocked along one of its last two dims; got blocked dim ",
        blocked_dim, " of shape ", src.layout().shape().ToString());
  }

  // Layouts: L_0 and S_0 by the blocks; L_1 row-major over the block grid
  // (a ragged mode's merging leaf of stride 0), or the 128x4 tiles.
  ScaleGrid grid;
  BlockScaledValueLayouts value_layouts;
  if (swizzled) {
    STRATA_ASSIGN_OR_RETURN(
        grid, PlanSwizzle(extents, blocked_dim,
                          extents[blocked_dim] / scaling.blocks[0]));
    STRATA_ASSIGN_OR_RETURN(
        value_layouts,
        MakeBlockScaledValueLayouts(extents, block_of_mode, grid.domain));
  } else {
    STRATA_ASSIGN_OR_RETURN(
        RowMajorBlockScaledLayouts layouts,
        MakeRowMajorBlockScaledLayouts(extents, block_of_mode));
    grid.l1 = std::move(layouts.scales);
    grid.scale_size = layouts.scale_count;
    value_layouts = {std::move(layouts.values), std::move(layouts.adjacent)};
  }

  if (!layouts_only) {
    STRATA_RETURN_IF_ERROR(RequireHostData(src, "QuantizeBlockScaled"));
  }
  const int64_t total = src.layout().size();
  const SimpleDType* element = format.simple_types()[0];
  const SimpleDType* scale = format.simple_types()[1];
  if (total == 0) grid.scale_size = 0;
  // The kernel writes every value and every row-major scale; the 128x4
  // tiles' padding is zero (NOTE [ Outputs written in full ]).
  const bool written = total > 0 && !layouts_only;
  STRATA_ASSIGN_OR_RETURN(auto values, NewOutput(*element, total, written));
  STRATA_ASSIGN_OR_RETURN(
      auto scales, NewOutput(*scale, grid.scale_size, written && !swizzled));
  float tensor_scale = 1.0f;
  if (total > 0 && !layouts_only) {
    std::vector<float> copy;
    const float* x = RowMajorFloats(src, modes, &copy);
    auto* out_values = static_cast<uint8_t*>(values->mutable_data());
    auto* out_scales = static_cast<uint8_t*>(scales->mutable_data());
    std::vector<uint8_t> row_major_scales(swizzled ? total / 16 : 0);
    tensor_scale = ops_internal::QuantizeFamily(
        recipe, x, extents, block_of_mode, out_values,
        swizzled ? row_major_scales.data() : out_scales, whole_amax_bits);
    if (swizzled) {
      // Row-major (batch, r, b) or (batch, b, r) scale codes into the tiles:
      // four consecutive blocks of a row are four consecutive bytes.
      const int64_t nb = extents[blocked_dim] / 16;
      const int64_t rows = grid.rows;
      const bool last = blocked_dim == rank - 1;
      const int64_t batches =
          static_cast<int64_t>(row_major_scales.size()) / (rows * nb);
      const uint8_t* in = row_major_scales.data();
      for (int64_t batch = 0; batch < batches; ++batch) {
        uint8_t* tile = out_scales + batch * grid.tile;
        const uint8_t* from = in + batch * rows * nb;
        if (last) {
          for (int64_t r = 0; r < rows; r += 128) {
            StoreSwizzledBand(from + r * nb, std::min<int64_t>(128, rows - r),
                              nb,
                              tile + SwizzledRowBase(r, grid.padded_blocks));
          }
          continue;
        }
        for (int64_t r = 0; r < rows; ++r) {
          uint8_t* row = tile + SwizzledRowBase(r, grid.padded_blocks);
          for (int64_t b = 0; b < nb; ++b) {
            row[SwizzledBlockTerm(b)] = from[b * rows + r];
          }
        }
      }
    }
  }
  std::vector<SubtensorCandidate> subtensors = {
      {element, values, 0, std::move(value_layouts.values)},
      {scale, scales, 0, grid.l1}};
  std::vector<absl::StatusOr<Layout>> adjacent = {
      std::move(value_layouts.adjacent)};
  if (format.simple_types().size() == 3) {
    // Level 2: the one tensor scale, reached from every block scale.
    STRATA_ASSIGN_OR_RETURN(auto global,
                            HostCarrier::Create(*dtypes::Float32(), 1));
    std::memcpy(global->mutable_data(), &tensor_scale, 4);
    STRATA_ASSIGN_OR_RETURN(Layout l2, Layout::Create(1, 0));
    STRATA_ASSIGN_OR_RETURN(
        Layout s1, Layout::Create(grid.l1.shape(),
                                  grid.l1.shape().TransformLeaves(
                                      [](size_t, int64_t) { return 0; })));
    subtensors.push_back({dtypes::Float32(), global, 0, std::move(l2)});
    adjacent.push_back(std::move(s1));
  }
  STRATA_ASSIGN_OR_RETURN(auto rep,
                          Representation::Create(&format, std::move(subtensors),
                                                 std::move(adjacent)));
  return MakeTensor(std::move(rep));
}

}  // namespace

const char* ScaleLayoutName(ScaleLayout layout) {
  switch (layout) {
    case ScaleLayout::kRowMajor:
      return "row_major";
    case ScaleLayout::kSwizzled128x4:
      return "swizzled_128x4";
  }
  return "unknown";
}

absl::StatusOr<Tensor> QuantizeBlockScaled(const Tensor& src,
                                           const CompoundDType& format,
                                           int64_t blocked_dim,
                                           ScaleLayout scale_layout) {
  return ops_internal::QuantizeChunk(src, format, blocked_dim, scale_layout, -1,
                                     false);
}

namespace ops_internal {

absl::StatusOr<Tensor> QuantizeChunk(
    const Tensor& src, const CompoundDType& format, int64_t blocked_dim,
    ScaleLayout scale_layout, int64_t whole_amax_bits, bool layouts_only) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(src, "QuantizeBlockScaled"));
  const SimpleDType* in = src.dtype().AsSimple();
  if (in != dtypes::Float32() && in != dtypes::Float16() &&
      in != dtypes::BFloat16()) {
    return TypeErrorCat("QuantizeBlockScaled: source dtype ",
                        src.dtype().name(),
                        " is not float32, float16 or bfloat16");
  }
  const BlockScaleRule* rule = FindBlockScaleRule(format);
  if (scale_layout != ScaleLayout::kRowMajor &&
      scale_layout != ScaleLayout::kSwizzled128x4) {
    return ValueErrorCat("QuantizeBlockScaled: scale layout ",
                         static_cast<int>(scale_layout),
                         " is not row_major (0) or swizzled_128x4 (1)");
  }
  if (rule != nullptr && rule->scaling().chosen_mode &&
      blocked_dim == kBlocksOfTheFormat) {
    return ValueErrorCat("QuantizeBlockScaled: ", format.name(),
                         " needs the dim its blocks lie along (",
                         rule->scaling().Describe(),
                         "); got kBlocksOfTheFormat (BLOCKED_MODE '-')");
  }
  if (rule != nullptr) {
    if (auto recipe = FamilyRecipeOf(format)) {
      return QuantizeIntoFamily(src, format, *rule, *recipe, blocked_dim,
                                scale_layout, whole_amax_bits, layouts_only);
    }
  }
  const SimpleDType* element = format.simple_types()[0];
  const SimpleDType* scale =
      format.simple_types().size() == 2 ? format.simple_types()[1] : nullptr;
  const MiniFloat* element_format = MiniFloatFormat(*element);
  const bool mx = scale == dtypes::Float8E8M0FNU();
  const bool nv = scale == dtypes::Float8E4M3FN();
  const bool fp4 = element == dtypes::Float4E2M1FN();
  if (rule == nullptr || element_format == nullptr || (!mx && !nv) ||
      (element != dtypes::Float8E4M3FN() && !fp4) || (nv && !fp4) ||
      rule->block_size() != (nv ? 16 : 32)) {
    return ValueErrorCat(
        "QuantizeBlockScaled: ", format.name(),
        " is not a block-scaled format Strata quantizes into (",
        kQuantizableFormats, ")");
  }
  const QuantFormat kernel_format =
      nv ? QuantFormat::kNVFP4
         : (fp4 ? QuantFormat::kMXFP4 : QuantFormat::kMXFP8E4M3);
  const bool swizzled = scale_layout == ScaleLayout::kSwizzled128x4;
  const int64_t block = rule->block_size();
  const auto modes = TopLevelModes(src.layout());
  const int64_t rank = modes.size();
  if (blocked_dim < 0 || blocked_dim >= rank) {
    return ValueErrorCat("QuantizeBlockScaled: blocked dim ", blocked_dim,
                         " is out of range for rank ", rank);
  }
  const int64_t extent = modes[blocked_dim].size();
  if (extent % block != 0) {
    return ValueErrorCat("QuantizeBlockScaled: blocked dim ", blocked_dim,
                         " has extent ", extent, ", not divisible by the ",
                         format.name(), " block size ", block);
  }
  if (swizzled && rank < 2) {
    return ValueErrorCat(
        "QuantizeBlockScaled: scale layout swizzled_128x4 needs a source of "
        "rank >= 2; got rank ",
        rank, " (shape ", src.layout().shape().ToString(), ")");
  }
  if (swizzled && blocked_dim < rank - 2) {
    return ValueErrorCat(
        "QuantizeBlockScaled: scale layout swizzled_128x4 needs the blocked "
        "dim to be one of the last two (",
        rank - 2, " or ", rank - 1, "); got blocked dim ", blocked_dim,
        " of shape ", src.layout().shape().ToString());
  }
  const int64_t blocks = extent / block;
  std::vector<int64_t> extents(rank);
  for (int64_t j = 0; j < rank; ++j) extents[j] = modes[j].size();
  ScaleGrid grid;
  STRATA_ASSIGN_OR_RETURN(
      grid, swizzled ? PlanSwizzle(extents, blocked_dim, blocks)
                     : PlanRowMajor(extents, blocked_dim, blocks));
  const int64_t rows = grid.rows, padded_blocks = grid.padded_blocks,
                tile = grid.tile;
  int64_t scale_size = grid.scale_size;
  STRATA_ASSIGN_OR_RETURN(
      BlockScaledValueLayouts value_layouts,
      MakeBlockScaledValueLayouts(extents, blocked_dim, block, grid.domain));
  Layout l1 = std::move(grid.l1);
  Layout& l0 = value_layouts.values;
  Layout& s0 = value_layouts.adjacent;

  // The carriers come last, after every layout is known to exist: a refused
  // layout (a size past int64 before a zero extent) allocates nothing.
  if (!layouts_only) {
    STRATA_RETURN_IF_ERROR(RequireHostData(src, "QuantizeBlockScaled"));
  }
  const int64_t total = src.layout().size();
  const bool written = total > 0 && !layouts_only;
  STRATA_ASSIGN_OR_RETURN(auto values, NewOutput(*element, total, written));
  STRATA_ASSIGN_OR_RETURN(auto scales,
                          NewOutput(*scale, scale_size, written && !swizzled));

  // The kernel: every block of every (outer, inner) pair. An empty source
  // has none (and its offset tables could be huge: a (2^41, 0) source has
  // 2^41 outer coordinates and no value).
  if (total > 0 && !layouts_only) {
    // Outer dims, the blocked dim, inner dims (row-major); no product
    // overflows in a nonempty Tensor.
    int64_t outer = 1, inner = 1;
    for (int64_t j = 0; j < rank; ++j) {
      if (j < blocked_dim) outer *= modes[j].size();
      if (j > blocked_dim) inner *= modes[j].size();
    }
    const std::vector<int64_t> outer_off =
        RowMajorOffsets(modes, 0, blocked_dim);
    // Fast path: a float32 source whose blocks are contiguous runs of
    // consecutive values (the blocked dim is the last one of extent > 1 and
    // one run of stride 1, known in O(rank)): a row of `blocks` blocks per
    // outer coordinate. The blocked dim's and inner dims' tables (O(columns),
    // 7% of quantizing 512 KiB in cache) are built only for the other path.
    const bool contiguous_f32 = in == dtypes::Float32() && inner == 1 &&
                                IsOneRun(modes[blocked_dim], 1);
    const std::vector<int64_t> block_off =
        contiguous_f32 ? std::vector<int64_t>()
                       : RowMajorOffsets(modes, blocked_dim, blocked_dim + 1);
    const std::vector<int64_t> inner_off =
        contiguous_f32 ? std::vector<int64_t>()
                       : RowMajorOffsets(modes, blocked_dim + 1, rank);
    const Source source{static_cast<const uint8_t*>(src.carrier()->data()), in};
    auto* out_values = static_cast<uint8_t*>(values->mutable_data());
    auto* out_scales = static_cast<uint8_t*>(scales->mutable_data());
    // The scale index of block b of (outer o, inner i).
    auto scale_index = [&](int64_t o, int64_t b, int64_t i) -> int64_t {
      if (!swizzled) return (o * blocks + b) * inner + i;
      // Blocked last: o = (batch, r), i = 0. Blocked rank-2: o = batch, i = r.
      const int64_t batch = blocked_dim == rank - 1 ? o / rows : o;
      const int64_t r = blocked_dim == rank - 1 ? o % rows : i;
      return batch * tile + SwizzledRowBase(r, padded_blocks) +
             SwizzledBlockTerm(b);
    };
    if (contiguous_f32) {
      const float* f32 =
          static_cast<const float*>(src.carrier()->data()) + src.offset();
      const int64_t row_bytes = fp4 ? extent / 2 : extent;
      // Swizzled: the scales of one band of up to 128 rows (the rows of a
      // band of 128x4 tiles) gather in a row-major buffer, and each band is
      // written into its tiles at once (StoreSwizzledBand). Scattered row by
      // row, each row's scales went to one line of every tile of the band
      // (64 lines 512 bytes apart for a 4096-value nvfp4 row), lines the
      // source's stream had evicted since the row before: the stores
      // missed, filled the store queue and stalled the kernel (swizzled
      // cost 1.3-1.7x row-major on an AMD EPYC; scattering a row at once
      // also waited on the kernel's byte stores in flight). Where the
      // blocked dim is not last, each row is a batch of one row.
      const bool bands = swizzled && blocked_dim == rank - 1;
      const int64_t band_rows = bands ? std::min<int64_t>(128, rows) : 1;
      std::vector<uint8_t> band(swizzled ? band_rows * blocks : 0);
      int64_t band_first = 0;  // The outer coordinate of the band's row 0.
      for (int64_t o = 0; o < outer; ++o) {
        uint8_t* scale_out = swizzled ? band.data() + (o - band_first) * blocks
                                      : out_scales + o * blocks;
        ops_internal::QuantizeBlocks(kernel_format, f32 + outer_off[o], blocks,
                                     out_values + o * row_bytes, scale_out);
        if (!swizzled) continue;
        const int64_t r = bands ? o % rows : 0;
        if (r % 128 == 127 || r + 1 == rows || !bands) {
          StoreSwizzledBand(band.data(), o + 1 - band_first, blocks,
                            out_scales + scale_index(band_first, 0, 0));
          band_first = o + 1;
        }
      }
    } else {
      float v[32];
      uint8_t codes[32];
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t b = 0; b < blocks; ++b) {
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t base = src.offset() + outer_off[o] + inner_off[i];
            for (int64_t t = 0; t < block; ++t) {
              v[t] = source.Load(base + block_off[b * block + t]);
            }
            out_scales[scale_index(o, b, i)] =
                ops_internal::QuantizeBlockScalar(kernel_format, v, codes);
            for (int64_t t = 0; t < block; ++t) {
              const int64_t value_index =
                  (o * extent + b * block + t) * inner + i;
              if (fp4) {
                WritePacked(out_values, 4, value_index, codes[t]);
              } else {
                out_values[value_index] = codes[t];
              }
            }
          }
        }
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(
      auto rep,
      Representation::Create(
          &format, {{element, values, 0, l0}, {scale, scales, 0, l1}}, {s0}));
  return MakeTensor(std::move(rep));
}

}  // namespace ops_internal

}  // namespace strata
