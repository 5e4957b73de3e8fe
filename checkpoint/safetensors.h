// Safetensors checkpoints in and out (shared/design/representation-cli.md,
// "Checkpoints"): tensors over read-only mapped carriers, MXFP4
// `.blocks`/`.scales` pairs as one mxfp4 Tensor.
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON, then the data buffer:
//
//   {"NAME": {"dtype": D, "shape": [...], "data_offsets": [BEGIN, END]},
//    "__metadata__": {"KEY": "VALUE", ...}}
//
// with offsets relative to the buffer's first byte and the tensors covering
// the buffer exactly (no overlap, no hole).
//
// clang-format off
//   safetensors  Strata          safetensors  Strata
//   BOOL         bool            F16          float16
//   U8           uint8           BF16         bfloat16
//   I8           int8            F32          float32
//   I16          int16           F64          float64
//   I32          int32           F8_E4M3      float8_e4m3fn
//   I64          int64           F8_E5M2      float8_e5m2
//   F8_E8M0      float8_e8m0fnu  F4           float4_e2m1fn (2 per byte,
//                                                           low nibble first)
// clang-format on
//
// NOTE [ MXFP4 pairs ]
// A pair P.blocks (U8, shape (..., G, 16)) and P.scales (U8, shape (..., G))
// -- or P_blocks / P_scales, the two spellings never mixed -- is the OCP MXFP4
// layout of gpt-oss checkpoints: block g of a row holds 32 fp4 values in 16
// bytes, element 2i in the low nibble of byte i, and one e8m0 exponent byte.
// It imports as one mxfp4 Tensor P of logical shape (..., G*32), the layout
// QuantizeBlockScaled (ops/quantize.h) builds for blocks along the last dim:
//
//   L_0 = (..., (32,G)):(row-major..., (1,32))  over the P.blocks bytes read
//                                               as float4_e2m1fn
//   L_1 = row-major (..., G)                    over the P.scales bytes read
//                                               as float8_e8m0fnu
//   S_0 = (..., (32,G)):(w..., (0,w_G))         value (r, 32g+t) -> scale
//                                               (r, g); w are the colex
//                                               weights of L_1's shape
//
// so that element (r, 32g+t) is nibble t of the 16 bytes of block (r, g) and
// its scale is byte (r, g) of P.scales. The pair is listed once, as P, where
// its first half stands in the header. A pair whose dtypes or shapes do not
// match that pattern is a ValueError for P (it must not import as bytes); a
// lone P.blocks or P.scales is a plain U8 Tensor.
#ifndef STRATA_CHECKPOINT_SAFETENSORS_H_
#define STRATA_CHECKPOINT_SAFETENSORS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace strata {

// The largest header ReadSafetensors accepts: 100 MB, as the safetensors
// library (MAX_HEADER_SIZE).
inline constexpr int64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// The 8 bytes that open a safetensors file: the header length, little-endian
// (the writer's, and the one test files and the fixture tool build).
std::string SafetensorsLengthPrefix(uint64_t header_bytes);

// One entry of a safetensors file: a Tensor, or why that Tensor was refused.
struct SafetensorsTensor {
  std::string name;
  absl::StatusOr<Tensor> tensor;
};

struct Safetensors {
  // In header order (a pair at its first half).
  std::vector<SafetensorsTensor> tensors;
  // "__metadata__", in header order.
  std::vector<std::pair<std::string, std::string>> metadata;
};

// Reads the safetensors file at `path`. Every entry is a compact row-major
// one-level Tensor over its own read-only "mapped" carrier
// (carrier/mapped_carrier.h), all sharing one mapping of the data buffer (no
// copy), except MXFP4 pairs (NOTE [ MXFP4 pairs ]). Everything is validated
// before the file is mapped.
//
// Errors of the file itself (the returned status, a ValueError whose message
// begins "ReadSafetensors: not a safetensors file: " unless the file cannot
// be read at all):
//   - the file cannot be opened, is not a regular file (a directory), or
//     cannot be read;
//   - it is shorter than 8 bytes; its header length N exceeds the bytes after
//     the length, or kMaxSafetensorsHeaderBytes;
//   - the header is not JSON (the parser's message names the byte), is not an
//     object, repeats a key, or holds a value that is not an object;
//     "__metadata__" holds a value that is not a string;
//   - a tensor's data_offsets is missing or not [BEGIN, END] with integers
//     0 <= BEGIN <= END <= the buffer's length;
//   - two tensors overlap, or bytes of the buffer belong to no tensor (sorted
//     by offsets, each tensor must begin where the previous ended, the first
//     at 0, the last ending at the buffer's end -- the safetensors library's
//     rule, so a zero-length tensor may stand between two others but not
//     inside one).
// ResourceExhaustedError when the kernel refuses to map the buffer.
//
// Errors of one tensor (its entry's status, a ValueError naming the tensor and
// the field; the other tensors still import): a dtype that is missing, not a
// string or not in the table above; a shape that is missing or not an array
// of integers; a negative extent, or extents whose product (or row-major
// strides) overflows int64; a byte length (product x bits, rounded up to
// bytes) other than END - BEGIN; for a pair P, any of these in either half,
// or dtypes or shapes that do not match NOTE [ MXFP4 pairs ], or a P that
// another entry of the file is also named.
absl::StatusOr<Safetensors> ReadSafetensors(const std::string& path);

struct SafetensorsReadOptions {
  // Whether the convention groups are formed (NOTE [ Checkpoint
  // conventions ]); without, every member is a plain Tensor of its own. A
  // directory reader forms them across shards itself (checkpoint/directory.h).
  bool convention_groups = true;
};
absl::StatusOr<Safetensors> ReadSafetensors(
    const std::string& path, const SafetensorsReadOptions& options);
// The same for an open file descriptor (neither closed nor kept open); `path`
// is the name the carriers report (their dumps' `file`).
absl::StatusOr<Safetensors> ReadSafetensorsFd(int fd, const std::string& path);
absl::StatusOr<Safetensors> ReadSafetensorsFd(
    int fd, const std::string& path, const SafetensorsReadOptions& options);

// Writes `tensors` (in order, each one's data after the previous one's) and
// `metadata` to `path` (created or truncated). A one-level Tensor of a dtype
// of the table is written row-major whatever its layout; an mxfp4 Tensor
// blocked along its last dim (32 consecutive values of the last dim share a
// scale) is written as the pair NAME.blocks, NAME.scales (NOTE [ MXFP4
// pairs ]). The header is compact JSON, "__metadata__" first when there is
// metadata, each tensor's keys in the order dtype, shape, data_offsets,
// padded with spaces to a multiple of 8 bytes. Deterministic: write -> read
// -> write gives identical bytes.
//
// Errors (ValueError, before the file is touched): a name repeated or written
// twice (a pair's halves included), or "__metadata__"; a name, key or value
// that is not valid UTF-8; a dtype not in the table; a multi-level Tensor
// other than mxfp4, or an mxfp4 one not blocked along its last dim; a carrier
// without host data. ValueError naming the file when it cannot be written.
absl::Status WriteSafetensors(
    const std::string& path,
    absl::Span<const std::pair<std::string, Tensor>> tensors,
    absl::Span<const std::pair<std::string, std::string>> metadata = {});

}  // namespace strata

#endif  // STRATA_CHECKPOINT_SAFETENSORS_H_
