// Requantize (../shared/design/values.md section 2): the values of a
// block-scaled Tensor in another format, scale layout or blocked dim.
//
// NOTE [ Requantizing in chunks ]
// The values are never all in float32 at once: the source is walked in
// chunks of whole rows along dim 0 (each a view of it: a multiple of its
// shard granule, of the target's block along dim 0, of 128 where dim 0 is
// the row mode of 128x4 tiles, and of 2 for 4-bit codes), each chunk
// dequantized to float32 (Dequantize) and quantized (QuantizeBlockScaled's
// arithmetic), and its codes and scales appended to the result's carriers:
// row-major codes, and row-major or tiled scales, are the chunks' bytes one
// after another. A chunk holds at most options.max_chunk_bytes of float32
// (16 MiB) or one row of blocks, whichever is larger. Where the target
// scales by the whole Tensor (nvfp4_ts*'s tensor scale, a tensorwise
// format's one block) a first pass over the same chunks finds the whole
// amax, which every chunk then uses. For 128x4 tiles whose blocks lie along
// dim 0 of a rank-2 Tensor (a chunk of rows is not a contiguous run of
// tiles) the chunks are quantized with row-major scales, which then move
// into the tiles (Relayout): the codes are the chunks', the scales are
// written twice. A format whose blocks span all of dim 0 without being one
// block of the whole Tensor (a user's "columnwise" format) is cut along the
// first dim of finite blocks instead, each chunk written into the result
// through both Tensors' layouts (NOTE [ Chunks along another dim ] in
// requantize.cc).
// Where `to` is the source's own format and its blocks stay where they are,
// Requantize is Relayout (ops/relayout.h): the codes are shared.
#ifndef STRATA_OPS_REQUANTIZE_H_
#define STRATA_OPS_REQUANTIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "dtype/dtype.h"
#include "ops/quantize.h"

namespace strata {

struct QuantizeOptions {
  // The dim of a 1-D block, for the formats whose caller chooses it;
  // kBlocksOfTheFormat for those whose blocks the format fixes.
  int64_t blocked_dim = kBlocksOfTheFormat;
  ScaleLayout scale_layout = ScaleLayout::kRowMajor;
  // The float32 bytes one chunk may hold (NOTE [ Requantizing in chunks ]).
  int64_t max_chunk_bytes = int64_t{16} << 20;
};

// The values of `t` (any Tensor of the block-scaled family, through any
// admitted view, or a one-level float Tensor) quantized into `to` with
// `options`: bit for bit QuantizeBlockScaled(Dequantize(t, float32), to,
// options.blocked_dim, options.scale_layout), or Relayout where only the
// scale layout changes. Errors: those of Dequantize and QuantizeBlockScaled
// (before any chunk is quantized where they depend on the shape alone);
// ValueError for max_chunk_bytes < 1.
absl::StatusOr<Tensor> Requantize(const Tensor& t, const CompoundDType& to,
                                  const QuantizeOptions& options);

}  // namespace strata

#endif  // STRATA_OPS_REQUANTIZE_H_
