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
#include "ops/internal/checks.h"
#include "ops/internal/iterate.h"
#include "ops/internal/require.h"

namespace strata {

using ops_internal::RequireHostData;
using ops_internal::RequireKernelTensor;
using ops_internal::RowMajorOffsets;
namespace {

// Fast round-to-nearest-even encoders for |y| of a float; exact for every float
// and checked against MiniFloat::EncodeSaturating in the tests.
inline uint8_t EncodeE4M3(float y) {
  const uint8_t sign = std::signbit(y) ? 0x80 : 0;
  const float a = std::fabs(y);
  if (!(a < 448.0f)) return std::isnan(a) ? 0x7F : sign | 0x7E;
  if (a < 0x1p-6f) {
    return a == 0 ? 0 : sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));
  }
  uint32_t u = FloatBits(a);
  u += (1u << 19) - 1 + ((u >> 20) & 1u);  // Round the 20 dropped bits to even.
  return sign | static_cast<uint8_t>((u >> 20) - ((127 - 7) << 3));
}

inline uint8_t EncodeE2M1(float y) {
  const uint8_t sign = std::signbit(y) ? 0x8 : 0;
  const float a = std::fabs(y);
  if (std::isnan(a)) return 0;
  if (!(a < 6.0f)) return sign | 0x7;
  if (a < 1.0f) {
    const uint8_t code = static_cast<uint8_t>(std::nearbyint(a * 2.0f));
    return code == 0 ? 0 : sign | code;
  }
  uint32_t u = FloatBits(a);
  u += (1u << 21) - 1 + ((u >> 22) & 1u);
  return sign | static_cast<uint8_t>((u >> 22) - ((127 - 1) << 1));
}

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

}  // namespace

absl::StatusOr<Tensor> QuantizeBlockScaled(const Tensor& src,
                                           const CompoundDType& format,
                                           int64_t blocked_dim) {
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
  if (rule == nullptr || element_format == nullptr || (!mx && !nv) ||
      (element != dtypes::Float8E4M3FN() &&
       element != dtypes::Float4E2M1FN())) {
    return ValueErrorCat(
        "QuantizeBlockScaled: ", format.name(),
        " is not a block-scaled format (mxfp8_e4m3, mxfp4, nvfp4)");
  }
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
  STRATA_RETURN_IF_ERROR(RequireHostData(src, "QuantizeBlockScaled"));
  // Shapes: outer dims, the blocked dim, inner dims (row-major).
  int64_t outer = 1, inner = 1;
  for (int64_t j = 0; j < rank; ++j) {
    if (j < blocked_dim) outer *= modes[j].size();
    if (j > blocked_dim) inner *= modes[j].size();
  }
  const int64_t blocks = extent / block;
  const int64_t total = outer * extent * inner;
  STRATA_ASSIGN_OR_RETURN(auto values, HostCarrier::Create(*element, total));
  STRATA_ASSIGN_OR_RETURN(auto scales,
                          HostCarrier::Create(*scale, total / block));

  // Layouts of the result (see the header).
  std::vector<IntTuple> shape, l0_stride, scale_shape, s0_stride;
  std::vector<int64_t> row_major(rank), weights(rank);
  int64_t running = 1;
  for (int64_t j = rank; j-- > 0;) {
    row_major[j] = running;
    running *= modes[j].size();
  }
  running = 1;
  for (int64_t j = 0; j < rank; ++j) {
    weights[j] = running;
    running *= j == blocked_dim ? blocks : modes[j].size();
  }
  for (int64_t j = 0; j < rank; ++j) {
    if (j == blocked_dim) {
      shape.push_back(IntTuple::Tuple({block, blocks}));
      l0_stride.push_back(
          IntTuple::Tuple({row_major[j], row_major[j] * block}));
      s0_stride.push_back(IntTuple::Tuple({0, weights[j]}));
      scale_shape.push_back(blocks);
    } else {
      shape.push_back(modes[j].size());
      l0_stride.push_back(row_major[j]);
      s0_stride.push_back(weights[j]);
      scale_shape.push_back(modes[j].size());
    }
  }
  STRATA_ASSIGN_OR_RETURN(
      Layout l0,
      Layout::Create(IntTuple::Tuple(shape), IntTuple::Tuple(l0_stride)));
  STRATA_ASSIGN_OR_RETURN(Layout l1,
                          Layout::RowMajor(IntTuple::Tuple(scale_shape)));
  STRATA_ASSIGN_OR_RETURN(
      Layout s0,
      Layout::Create(IntTuple::Tuple(shape), IntTuple::Tuple(s0_stride)));

  // The kernel: every block of every (outer, inner) pair. An empty source
  // has none (and its offset tables could be huge: a (2^41, 0) source has
  // 2^41 outer coordinates and no value).
  if (total > 0) {
    const std::vector<int64_t> outer_off =
        RowMajorOffsets(modes, 0, blocked_dim);
    const std::vector<int64_t> block_off =
        RowMajorOffsets(modes, blocked_dim, blocked_dim + 1);
    const std::vector<int64_t> inner_off =
        RowMajorOffsets(modes, blocked_dim + 1, rank);
    const Source source{static_cast<const uint8_t*>(src.carrier()->data()), in};
    auto* out_values = static_cast<uint8_t*>(values->mutable_data());
    auto* out_scales = static_cast<uint8_t*>(scales->mutable_data());
    const bool fp4 = element == dtypes::Float4E2M1FN();
    const int emax = element_format->emax();
    std::vector<float> v(block);
    // Fast path: a float32 source whose blocked mode is one stride.
    const float* f32 = in == dtypes::Float32()
                           ? static_cast<const float*>(src.carrier()->data())
                           : nullptr;
    int64_t block_stride = extent > 1 ? block_off[1] - block_off[0] : 0;
    bool contiguous_f32 = f32 != nullptr;
    for (int64_t c = 1; contiguous_f32 && c < extent; ++c) {
      contiguous_f32 = block_off[c] - block_off[c - 1] == block_stride;
    }
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t base = src.offset() + outer_off[o] + inner_off[i];
          // The largest |v| by its bit pattern (monotonic for non-negative
          // floats); patterns from 0x7F800000 up are Inf and NaN.
          uint32_t max_bits = 0;
          if (contiguous_f32) {
            const float* p = f32 + base + block_off[b * block];
            for (int64_t t = 0; t < block; ++t) {
              v[t] = p[t * block_stride];
              max_bits = std::max(max_bits, FloatBits(v[t]) & 0x7FFFFFFFu);
            }
          } else {
            for (int64_t t = 0; t < block; ++t) {
              v[t] = source.Load(base + block_off[b * block + t]);
              max_bits = std::max(max_bits, FloatBits(v[t]) & 0x7FFFFFFFu);
            }
          }
          const bool finite = max_bits < 0x7F800000u;
          float amax;
          std::memcpy(&amax, &max_bits, 4);
          uint8_t scale_code;
          float inverse_scale = 0;
          if (mx) {
            if (!finite) {
              scale_code = 0xFF;
            } else {
              // floor(log2(amax)) from the exponent field (ilogb for float
              // subnormals).
              const int log2 = max_bits >= 0x00800000u
                                   ? static_cast<int>(max_bits >> 23) - 127
                                   : (amax == 0 ? -1000 : std::ilogb(amax));
              int x = log2 - emax;
              x = x < -127 ? -127 : (x > 127 ? 127 : x);
              scale_code = static_cast<uint8_t>(x + 127);
              inverse_scale = std::ldexp(1.0f, -x);  // Exact power of two.
            }
          } else {
            scale_code = finite ? static_cast<uint8_t>(
                                      Float8E4M3FNFormat().EncodeSaturating(
                                          static_cast<double>(amax) / 6.0))
                                : 0x7F;
            const double s = Float8E4M3FNFormat().Decode(scale_code);
            if (finite && s > 0) inverse_scale = static_cast<float>(1.0 / s);
          }
          const int64_t scale_index = (o * blocks + b) * inner + i;
          out_scales[scale_index] = scale_code;
          for (int64_t t = 0; t < block; ++t) {
            const int64_t value_index =
                (o * extent + b * block + t) * inner + i;
            uint8_t code;
            if (!finite) {
              code = fp4 ? 0 : 0x7F;
            } else if (mx) {
              // v * 2^-x is exact in float (a power-of-two scaling within
              // range).
              const float y = v[t] * inverse_scale;
              code = fp4 ? EncodeE2M1(y) : EncodeE4M3(y);
            } else {
              code =
                  inverse_scale == 0
                      ? 0
                      : static_cast<uint8_t>(element_format->EncodeSaturating(
                            static_cast<double>(v[t]) * inverse_scale));
            }
            if (fp4) {
              WritePacked(out_values, 4, value_index, code);
            } else {
              out_values[value_index] = code;
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
