// Whole checkpoints converted (../shared/design/checkpoints.md section 2):
// ConvertCheckpoint, what `strata convert` and Python's strata.convert run.
//
// NOTE [ Converting a checkpoint ]
// The source is anything ReadCheckpoint reads (a safetensors file, a Hugging
// Face directory, a GGUF file or split set), opened by its headers alone.
// Every tensor gets one of three fates, decided before a byte is written:
//   - to a plain float dtype (bfloat16, float16, float32): a block-scaled
//     Tensor is dequantized (values.md section 1, NOTE [ Dequantize
//     arithmetic ]); a plain one is copied unchanged;
//   - to a block-scaled format: a float Tensor of rank >= 2 named "*.weight"
//     that `only` finds (all, by default) and `skip` does not
//     ("embed|norm|lm_head") is quantized, or requantized from a block-scaled
//     source (values.md section 2; where the format is the source's own, only
//     its scales move: Relayout, codes copied as bytes); the others are
//     copied unchanged;
//   - refused, named with its reason, the others still written: a tensor the
//     reader refused, or one whose result the destination cannot hold (no
//     safetensors convention or GGUF type for its dtype, blocks that do not
//     divide its last dim).
// Tensors are written in the source's order (its files in name order, then
// by the byte where each begins), so reading streams through the source.
// The destination is a GGUF file (a name ending in ".gguf": WriteGguf, the
// metadata of a GGUF source passed through, its split.* keys dropped) or a
// Hugging Face directory (WriteCheckpoint, sharded by max_shard_size, the
// source's __metadata__ on each file, the source directory's other files
// copied, config.json's quantization_config removed for a plain target, set
// to DeepSeek's fp8 block entry for fp8_e4m3_block128x128[_ue8m0], removed
// for any other format, whose entry Strata does not know).
//
// Memory stays bounded whatever the checkpoint's size: one output Tensor is
// made at a time (Requantize works in bounded chunks; Dequantize writes its
// output once), written, and dropped, and the mapped input pages it was read
// from are given back (MappedRegion::DropPages) before the next. Peak
// resident memory is about one tensor's output plus one tensor's input.
#ifndef STRATA_CONVERT_CONVERT_H_
#define STRATA_CONVERT_CONVERT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/tensor_to_write.h"
#include "ops/quantize.h"

namespace strata {

inline constexpr char kDefaultConvertSkip[] = "embed|norm|lm_head";

struct ConvertOptions {
  // A plain float dtype or a block-scaled format, by its registry name.
  std::string to;
  // The scales' layout of quantized Tensors; for a GGUF or safetensors
  // destination only row_major exists (both store scales row-major).
  std::optional<ScaleLayout> scale_layout;
  // RE2 searches (a match anywhere in the name) choosing what a block-scaled
  // target quantizes; empty `only`: every name.
  std::string only;
  std::string skip = kDefaultConvertSkip;
  int64_t max_shard_size = kDefaultMaxShardSize;
  bool overwrite = false;
  WriteControl control;
};

struct ConvertReport {
  std::vector<std::string> converted;  // Dequantized, quantized, relaid out.
  std::vector<std::string> copied;
  std::vector<std::pair<std::string, absl::Status>> refused;
  std::vector<std::string> files;        // Written: safetensors, index, GGUF.
  std::vector<std::string> other_files;  // Copied from the source directory.
  int64_t input_bytes = 0;               // Of the tensors read.
  int64_t output_bytes = 0;              // Of the tensors written.
};

// Converts `src` into `dst` (NOTE [ Converting a checkpoint ]). Errors, with
// nothing left behind but what existed before (strata convert's exit 2):
// ValueError for `to` that is no float dtype or block-scaled format, a
// scale layout the destination cannot store or given with a plain `to`, an
// `only` or `skip` RE2 refuses, max_shard_size < 1, a `src` that is not a
// checkpoint (the reader's error), a `dst` that is `src` or lies inside it,
// a `dst` that exists without `overwrite` (an empty directory excepted) or
// is of the other kind; a write error (naming the file and the OS error);
// what a tensor's conversion returns once begun; CancelledError when
// options.control.cancel is set. Refused tensors are not errors: they are
// in the report (exit 1).
absl::StatusOr<ConvertReport> ConvertCheckpoint(const std::string& src,
                                                const std::string& dst,
                                                const ConvertOptions& options);

// "5GB", "500 MB", "1.5GiB", "12345": bytes, KB MB GB TB (powers of 1000)
// and KiB MiB GiB TiB (powers of 1024), as huggingface_hub reads them.
// ValueError for anything else, a fraction of a byte, or a size < 1 or past
// int64.
absl::StatusOr<int64_t> ParseShardSize(const std::string& text);

}  // namespace strata

#endif  // STRATA_CONVERT_CONVERT_H_
