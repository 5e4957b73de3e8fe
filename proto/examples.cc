#include "proto/examples.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/layout.h"
#include "ops/quantize.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

// Deterministic non-zero bytes so that dumps with data show something.
void FillPattern(Carrier& carrier, int64_t bytes, uint8_t seed) {
  auto* data = static_cast<uint8_t*>(carrier.mutable_data());
  for (int64_t i = 0; i < bytes; ++i)
    data[i] = static_cast<uint8_t>(seed + 7 * i);
}

absl::StatusOr<Tensor> BlockScaled(const CompoundDType* dtype, int64_t rows,
                                   int64_t cols, int64_t block) {
  const SimpleDType* value_type = dtype->simple_types()[0];
  const SimpleDType* scale_type = dtype->simple_types()[1];
  const int64_t blocks = cols / block;
  STRATA_ASSIGN_OR_RETURN(auto values,
                          HostCarrier::Create(*value_type, rows * cols));
  STRATA_ASSIGN_OR_RETURN(auto scales,
                          HostCarrier::Create(*scale_type, rows * blocks));
  FillPattern(*values, values->size_in_bytes(), 1);
  FillPattern(*scales, scales->size_in_bytes(), 120);
  const IntTuple shape =
      IntTuple::Tuple({rows, IntTuple::Tuple({block, blocks})});
  STRATA_ASSIGN_OR_RETURN(
      Layout l0,
      Layout::Create(shape,
                     IntTuple::Tuple({cols, IntTuple::Tuple({1, block})})));
  STRATA_ASSIGN_OR_RETURN(Layout l1,
                          Layout::RowMajor(IntTuple::Tuple({rows, blocks})));
  // Scale coordinate (r, c / block) has linear (column-major) index r + rows *
  // (c/B).
  STRATA_ASSIGN_OR_RETURN(
      Layout s0,
      Layout::Create(shape, IntTuple::Tuple({1, IntTuple::Tuple({0, rows})})));
  STRATA_ASSIGN_OR_RETURN(
      auto rep,
      Representation::Create(
          dtype, {{value_type, values, 0, l0}, {scale_type, scales, 0, l1}},
          {s0}));
  return MakeTensor(std::move(rep));
}

// A row-major float32 source of `shape` with a deterministic pattern of
// values exact in float (magnitudes vary by block), quantized by
// QuantizeBlockScaled with blocks along `blocked_mode` (or the format's own)
// in `scale_layout`.
absl::StatusOr<Tensor> Quantized(
    const CompoundDType* dtype, std::vector<int64_t> shape,
    int64_t blocked_mode, ScaleLayout scale_layout = ScaleLayout::kRowMajor) {
  int64_t n = 1;
  std::vector<IntTuple> extents;
  for (int64_t e : shape) {
    n *= e;
    extents.push_back(e);
  }
  STRATA_ASSIGN_OR_RETURN(auto carrier,
                          HostCarrier::Create(*dtypes::Float32(), n));
  auto* data = static_cast<float*>(carrier->mutable_data());
  for (int64_t i = 0; i < n; ++i) {
    data[i] = static_cast<float>((i * 37) % 97 - 48) * 0.125f *
              static_cast<float>(1 + (i / 32) % 5);
  }
  STRATA_ASSIGN_OR_RETURN(Layout row_major,
                          Layout::RowMajor(IntTuple::Tuple(extents)));
  STRATA_ASSIGN_OR_RETURN(Tensor source, Tensor::Create(carrier, 0, row_major));
  return QuantizeBlockScaled(source, *dtype, blocked_mode, scale_layout);
}

absl::StatusOr<Tensor> Swizzled(const CompoundDType* dtype,
                                std::vector<int64_t> shape,
                                int64_t blocked_mode) {
  return Quantized(dtype, std::move(shape), blocked_mode,
                   ScaleLayout::kSwizzled128x4);
}

}  // namespace

std::vector<std::string> ExampleNames() {
  return {"float32_4x8",
          "mxfp8_4x64",
          "mxfp4_2x32",
          "mxfp8_swizzled_256x256",
          "nvfp4_swizzled_128x64",
          "mxfp8_swizzled_padded_200x160",
          "mxfp8_swizzled_batched_2x128x128",
          "fp8_block128x128_576x256",
          "fp8_rowwise_4x64",
          "fp8_tensorwise_4x64",
          "fp8_block1x128_2x200",
          "nvfp4_ts_4x64",
          "nvfp4_ts_recip_swizzled_128x64",
          "q8_0_4x64",
          "q4_0_4x64"};
}

absl::StatusOr<Tensor> MakeExample(absl::string_view name) {
  if (name == "float32_4x8") {
    STRATA_ASSIGN_OR_RETURN(auto carrier,
                            HostCarrier::Create(*dtypes::Float32(), 32));
    auto* data = static_cast<float*>(carrier->mutable_data());
    for (int i = 0; i < 32; ++i) data[i] = 0.5f * i;
    STRATA_ASSIGN_OR_RETURN(Layout row_major, ParseLayout("(4,8):(8,1)"));
    return Tensor::Create(carrier, 0, row_major);
  }
  if (name == "mxfp8_4x64") return BlockScaled(dtypes::MXFP8E4M3(), 4, 64, 32);
  if (name == "mxfp4_2x32") return BlockScaled(dtypes::MXFP4(), 2, 32, 32);
  if (name == "mxfp8_swizzled_256x256") {
    return Swizzled(dtypes::MXFP8E4M3(), {256, 256}, 1);
  }
  if (name == "nvfp4_swizzled_128x64") {
    return Swizzled(dtypes::NVFP4(), {128, 64}, 1);
  }
  if (name == "mxfp8_swizzled_padded_200x160") {
    return Swizzled(dtypes::MXFP8E4M3(), {200, 160}, 1);
  }
  if (name == "mxfp8_swizzled_batched_2x128x128") {
    return Swizzled(dtypes::MXFP8E4M3(), {2, 128, 128}, 2);
  }
  // The family of ../shared/design/formats.md, one example each.
  if (name == "fp8_block128x128_576x256") {
    return Quantized(dtypes::FP8E4M3Block128x128(), {576, 256},
                     kBlocksOfTheFormat);
  }
  if (name == "fp8_rowwise_4x64") {
    return Quantized(dtypes::FP8E4M3Rowwise(), {4, 64}, kBlocksOfTheFormat);
  }
  if (name == "fp8_tensorwise_4x64") {
    return Quantized(dtypes::FP8E4M3Tensorwise(), {4, 64}, kBlocksOfTheFormat);
  }
  if (name == "fp8_block1x128_2x200") {
    return Quantized(dtypes::FP8E4M3Block1x128(), {2, 200}, 1);
  }
  if (name == "nvfp4_ts_4x64") return Quantized(dtypes::NVFP4TS(), {4, 64}, 1);
  if (name == "nvfp4_ts_recip_swizzled_128x64") {
    return Swizzled(dtypes::NVFP4TSRecip(), {128, 64}, 1);
  }
  if (name == "q8_0_4x64") {
    return Quantized(dtypes::Q8_0(), {4, 64}, kBlocksOfTheFormat);
  }
  if (name == "q4_0_4x64") {
    return Quantized(dtypes::Q4_0(), {4, 64}, kBlocksOfTheFormat);
  }
  return ValueErrorCat("unknown example \"", name, "\"");
}

}  // namespace strata
