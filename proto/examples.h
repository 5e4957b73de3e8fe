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
// clang-format on
std::vector<std::string> ExampleNames();
// Errors (ValueError): unknown name.
absl::StatusOr<Tensor> MakeExample(absl::string_view name);

}  // namespace strata

#endif  // STRATA_PROTO_EXAMPLES_H_
