// Named example representations, for `strata dump --example NAME`, the demo and
// the golden files in tests/golden/.
#ifndef STRATA_PROTO_EXAMPLES_H_
#define STRATA_PROTO_EXAMPLES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace strata {

// clang-format off
//   "float32_4x8"  a conventional row-major float32 Tensor (4,8).
//   "mxfp8_4x64"   an mxfp8_e4m3 Tensor (4,64), one e8m0 scale per 32 values
//                  of the last mode, linked by the stride-0 adjacent layout
//                  (4,(32,2)):(1,(0,4)).
//   "mxfp4_2x32"   an mxfp4 Tensor (2,32) over sub-byte float4 storage.
//   "mxfp8_swizzled_256x256"
//                  an mxfp8_e4m3 Tensor (256,256) quantized with its scales in
//                  the 128x4 swizzled layout (ScaleLayout::kSwizzled128x4):
//                  L_1 = ((32,4,2),(4,2)):((16,4,1024),(1,512)).
//   "nvfp4_swizzled_128x64"
//                  an nvfp4 Tensor (128,64), e4m3 scales of 16 values,
//                  swizzled: one 128x4 tile.
//   "mxfp8_swizzled_padded_200x160"
//                  swizzled with padding both ways: R = 200 -> 256 rows,
//                  5 -> 8 blocks; the padding scales are 0.
//   "mxfp8_swizzled_batched_2x128x128"
//                  swizzled with a batch mode (MoE experts): (2,128,128).
// The swizzled examples are QuantizeBlockScaled of a deterministic float32
// pattern.
// clang-format on
std::vector<std::string> ExampleNames();
// Errors (ValueError): unknown name.
absl::StatusOr<Tensor> MakeExample(absl::string_view name);

}  // namespace strata

#endif  // STRATA_PROTO_EXAMPLES_H_
