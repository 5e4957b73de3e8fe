#include "ops/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
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
#include "layout/checked_math.h"
#include "ops/internal/checks.h"
#include "ops/internal/iterate.h"
#include "ops/internal/quantize_kernel.h"
#include "ops/internal/require.h"

namespace strata {

using ops_internal::RequireHostData;
using ops_internal::RequireKernelTensor;
using ops_internal::RowMajorOffsets;
namespace {

using ops_internal::QuantFormat;

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

// The swizzled index of the scale of (batch, r, b) without the batch term
// (ScaleLayout::kSwizzled128x4 in the header), for Bp padded blocks.
inline int64_t SwizzledRowBase(int64_t r, int64_t padded_blocks) {
  return (r / 128) * 128 * padded_blocks + (r % 32) * 16 + ((r / 32) % 4) * 4;
}
inline int64_t SwizzledBlockTerm(int64_t b) { return (b / 4) * 512 + b % 4; }

absl::Status Overflow(absl::string_view what, int64_t a, int64_t b) {
  return ValueErrorCat("QuantizeBlockScaled: the swizzled_128x4 ", what,
                       " overflows int64 (", a, " * ", b, ")");
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
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(src, "QuantizeBlockScaled"));
  const SimpleDType* in = src.dtype().AsSimple();
  if (in != dtypes::Float32() && in != dtypes::Float16() &&
      in != dtypes::BFloat16()) {
    return TypeErrorCat("QuantizeBlockScaled: source dtype ",
                        src.dtype().name(),
                        " is not float32, float16 or bfloat16");
  }
  const BlockScaleRule* rule = nullptr;
  for (const auto& r : format.rules()) {
    if (rule == nullptr) rule = dynamic_cast<const BlockScaleRule*>(r.get());
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
        " is not a block-scaled format (mxfp8_e4m3, mxfp4, nvfp4)");
  }
  const QuantFormat kernel_format =
      nv ? QuantFormat::kNVFP4
         : (fp4 ? QuantFormat::kMXFP4 : QuantFormat::kMXFP8E4M3);
  if (scale_layout != ScaleLayout::kRowMajor &&
      scale_layout != ScaleLayout::kSwizzled128x4) {
    return ValueErrorCat("QuantizeBlockScaled: scale layout ",
                         static_cast<int>(scale_layout),
                         " is not row_major (0) or swizzled_128x4 (1)");
  }
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
  // The swizzled sizes: rows R (the other of the last two modes), padded
  // rows Rp and blocks Bp, batches, carrier size.
  const int64_t row_dim = blocked_dim == rank - 1 ? rank - 2 : rank - 1;
  int64_t rows = 0, padded_rows = 0, padded_blocks = 0, tile = 0, batches = 1,
          scale_size = 0, row_tile = 0;
  if (swizzled) {
    rows = modes[row_dim].size();
    const int64_t row_tiles = CeilDiv(rows, 128);
    const int64_t block_tiles = CeilDiv(blocks, 4);
    if (!CheckedMul(row_tiles, 128, &padded_rows)) {
      return Overflow("padded row count Rp", row_tiles, 128);
    }
    padded_blocks = block_tiles * 4;  // blocks <= extent / 16.
    if (!CheckedMul(padded_rows, padded_blocks, &tile)) {
      return Overflow("tile size Rp * Bp", padded_rows, padded_blocks);
    }
    for (int64_t j = 0; j < rank - 2; ++j) {
      if (!CheckedMul(batches, modes[j].size(), &batches)) {
        return Overflow("batch count", batches, modes[j].size());
      }
    }
    if (!CheckedMul(batches, tile, &scale_size)) {
      return Overflow("scale count batches * Rp * Bp", batches, tile);
    }
    if (!CheckedMul(padded_blocks, 128, &row_tile)) {
      return Overflow("row-tile stride 128 * Bp", padded_blocks, 128);
    }
  }
  // Layouts of the result (see the header). A product of extents that
  // overflows has a zero extent beyond it (the layouts' sizes fit), so the
  // Tensor is empty and the stride it would have been is never used: 0.
  const auto times = [](int64_t a, int64_t b) {
    int64_t p;
    return CheckedMul(a, b, &p) ? p : 0;
  };
  std::vector<IntTuple> scale_shape, l1_stride;
  // S_0 addresses level 1's domain: the shape's extents with n/B in the
  // blocked dim (padded to Rp, Bp when swizzled).
  std::vector<int64_t> extents(rank), domain(rank);
  for (int64_t j = 0; j < rank; ++j) {
    extents[j] = modes[j].size();
    domain[j] = j == blocked_dim
                    ? (swizzled ? padded_blocks : blocks)
                    : (swizzled && j == row_dim ? padded_rows : extents[j]);
  }
  STRATA_ASSIGN_OR_RETURN(
      BlockScaledValueLayouts value_layouts,
      MakeBlockScaledValueLayouts(extents, blocked_dim, block, domain));
  Layout l1;
  if (swizzled) {
    int64_t batch_stride = tile;
    std::vector<IntTuple> batch_shape, batch_stride_tuple;
    for (int64_t j = rank - 2; j-- > 0;) {
      batch_shape.insert(batch_shape.begin(), modes[j].size());
      batch_stride_tuple.insert(batch_stride_tuple.begin(), batch_stride);
      batch_stride = times(batch_stride, modes[j].size());
    }
    scale_shape = batch_shape;
    l1_stride = batch_stride_tuple;
    const IntTuple row_shape = IntTuple::Tuple({32, 4, padded_rows / 128});
    const IntTuple row_stride = IntTuple::Tuple({16, 4, row_tile});
    const IntTuple block_shape = IntTuple::Tuple({4, padded_blocks / 4});
    const IntTuple block_stride = IntTuple::Tuple({1, 512});
    if (blocked_dim == rank - 1) {
      scale_shape.insert(scale_shape.end(), {row_shape, block_shape});
      l1_stride.insert(l1_stride.end(), {row_stride, block_stride});
    } else {
      scale_shape.insert(scale_shape.end(), {block_shape, row_shape});
      l1_stride.insert(l1_stride.end(), {block_stride, row_stride});
    }
    STRATA_ASSIGN_OR_RETURN(l1, Layout::Create(IntTuple::Tuple(scale_shape),
                                               IntTuple::Tuple(l1_stride)));
  } else {
    for (int64_t j = 0; j < rank; ++j) {
      scale_shape.push_back(j == blocked_dim ? blocks : modes[j].size());
    }
    STRATA_ASSIGN_OR_RETURN(l1, Layout::RowMajor(IntTuple::Tuple(scale_shape)));
  }
  Layout& l0 = value_layouts.values;
  Layout& s0 = value_layouts.adjacent;

  // The carriers come last, after every layout is known to exist: a refused
  // layout (a size past int64 before a zero extent) allocates nothing.
  STRATA_RETURN_IF_ERROR(RequireHostData(src, "QuantizeBlockScaled"));
  const int64_t total = src.layout().size();
  if (!swizzled) scale_size = total / block;
  STRATA_ASSIGN_OR_RETURN(auto values, HostCarrier::Create(*element, total));
  STRATA_ASSIGN_OR_RETURN(auto scales, HostCarrier::Create(*scale, scale_size));

  // The kernel: every block of every (outer, inner) pair. An empty source
  // has none (and its offset tables could be huge: a (2^41, 0) source has
  // 2^41 outer coordinates and no value).
  if (total > 0) {
    // Outer dims, the blocked dim, inner dims (row-major); no product
    // overflows in a nonempty Tensor.
    int64_t outer = 1, inner = 1;
    for (int64_t j = 0; j < rank; ++j) {
      if (j < blocked_dim) outer *= modes[j].size();
      if (j > blocked_dim) inner *= modes[j].size();
    }
    const std::vector<int64_t> outer_off =
        RowMajorOffsets(modes, 0, blocked_dim);
    const std::vector<int64_t> block_off =
        RowMajorOffsets(modes, blocked_dim, blocked_dim + 1);
    const std::vector<int64_t> inner_off =
        RowMajorOffsets(modes, blocked_dim + 1, rank);
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
    // Fast path: a float32 source whose blocks are contiguous runs of
    // consecutive values (the blocked dim is the last one of extent > 1 and
    // has stride 1): a row of `blocks` blocks per outer coordinate.
    bool contiguous_f32 = in == dtypes::Float32() && inner == 1;
    for (int64_t c = 1; contiguous_f32 && c < extent; ++c) {
      contiguous_f32 = block_off[c] - block_off[c - 1] == 1;
    }
    if (contiguous_f32) {
      const float* f32 = static_cast<const float*>(src.carrier()->data()) +
                         src.offset() + block_off[0];
      const int64_t row_bytes = fp4 ? extent / 2 : extent;
      std::vector<uint8_t> row_scales(swizzled ? blocks : 0);
      for (int64_t o = 0; o < outer; ++o) {
        uint8_t* scale_out =
            swizzled ? row_scales.data() : out_scales + o * blocks;
        ops_internal::QuantizeBlocks(kernel_format, f32 + outer_off[o], blocks,
                                     out_values + o * row_bytes, scale_out);
        if (swizzled) {
          const int64_t base = scale_index(o, 0, 0);
          int64_t b = 0;
          for (; b + 4 <= blocks; b += 4) {
            std::memcpy(out_scales + base + (b / 4) * 512, scale_out + b, 4);
          }
          for (; b < blocks; ++b) {
            out_scales[base + SwizzledBlockTerm(b)] = scale_out[b];
          }
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

}  // namespace strata
