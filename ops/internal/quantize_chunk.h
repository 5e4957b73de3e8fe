// QuantizeBlockScaled for one chunk of rows of a larger Tensor
// (ops/requantize.cc): the whole Tensor's amax, where the format needs it.
#ifndef STRATA_OPS_INTERNAL_QUANTIZE_CHUNK_H_
#define STRATA_OPS_INTERNAL_QUANTIZE_CHUNK_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "dtype/dtype.h"
#include "ops/quantize.h"

namespace strata {
namespace ops_internal {

// QuantizeBlockScaled, with `whole_amax_bits` (when not negative: the |x|
// bit pattern of a float32 amax) standing for the chunk's own amax where the
// format scales by the whole Tensor's: nvfp4_ts*'s tensor scale and the one
// block of a tensorwise format (QuantizeFamily in
// ops/internal/quantize_family.h). With `layouts_only`, `src` need hold no
// data: the result has every layout and zero-filled host carriers of the
// right sizes, and nothing is read (Requantize fills them chunk by chunk).
// Errors: QuantizeBlockScaled's.
absl::StatusOr<Tensor> QuantizeChunk(
    const Tensor& src, const CompoundDType& format, int64_t blocked_dim,
    ScaleLayout scale_layout, int64_t whole_amax_bits, bool layouts_only);

}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_QUANTIZE_CHUNK_H_
