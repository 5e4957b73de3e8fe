// Quantization of a float Tensor to a block-scaled compound dtype.
#ifndef STRATA_OPS_QUANTIZE_H_
#define STRATA_OPS_QUANTIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "dtype/dtype.h"

namespace strata {

// Quantizes `src` (one subtensor of float32, float16 or bfloat16, any layout)
// to `format` (mxfp8_e4m3, mxfp4 or nvfp4) with blocks of B consecutive values
// along dim `blocked_dim`. Returns a new two-level Tensor over
// fresh host carriers: values row-major with the blocked dim written (B, n/B),
// scales row-major over the shape with n/B in the blocked dim, and S_0 = one
// scale per block (NOTE [ The block-scaling rule ]).
//
// MX formats follow the OCP Microscaling specification v1.0 (section 6.3): the
// shared exponent is X = floor(log2(max |v|)) - emax_elem, clamped to [-127,
// 127], stored as e8m0; elements are v / 2^X rounded to nearest even and
// saturated to the element's largest finite value. A block whose maximum is 0
// gets X = -127. A block holding NaN or +-Inf gets the NaN scale 0xFF (it
// decodes to NaN whatever its elements; elements are the element NaN, or 0 for
// fp4). nvfp4: the scale is max |v| / 6 rounded to e4m3 (NaN scale 0x7F for
// non-finite blocks, elements 0 when the scale is 0); its per-tensor
// second-level scale is out of scope.
//
// Errors, all before anything is allocated: OneSubtensorRequired for a
// multi-subtensor src; TypeError for a non-float src; ValueError for a format
// that is not block-scaled, a blocked dim out of range or of an extent not
// divisible by B, or a carrier without host data.
absl::StatusOr<Tensor> QuantizeBlockScaled(const Tensor& src,
                                           const CompoundDType& format,
                                           int64_t blocked_dim);

}  // namespace strata

#endif  // STRATA_OPS_QUANTIZE_H_
