// Checkpoints out in the Hugging Face layout (../shared/design/checkpoints.md
// section 2): WriteCheckpoint.
//
// NOTE [ Hugging Face directories out ]
// Everything fits in options.max_shard_size: one model.safetensors. Else the
// Tensors are split greedily in the order given (huggingface_hub's
// split_state_dict_into_shards: a new shard when the next Tensor would take
// the current one past the limit; a Tensor larger than the limit alone in a
// shard of its own), written as model-0000i-of-0000N.safetensors, with
// model.safetensors.index.json {"metadata": {"total_size": bytes of every
// tensor}, "weight_map": {entry: file}} (names sorted, indent 2, as
// transformers' save_pretrained writes it). A Tensor never spans two files:
// a block-scaled one is written as its convention's members (formats.md
// section 3; WriteSafetensors) or an mxfp4 pair, all in one shard. The whole
// directory is written into a staging directory beside `dir` and renamed
// into place when complete (NOTE [ Files complete or absent ]).
#ifndef STRATA_CHECKPOINT_CHECKPOINT_WRITER_H_
#define STRATA_CHECKPOINT_CHECKPOINT_WRITER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/tensor_to_write.h"

namespace strata {

// huggingface_hub's default shard size, 5 GB.
inline constexpr int64_t kDefaultMaxShardSize = 5'000'000'000;

struct WriteCheckpointOptions {
  int64_t max_shard_size = kDefaultMaxShardSize;  // Bytes, >= 1.
  // Replace an existing non-empty `dir` (an empty one is always used).
  bool overwrite = false;
  // Each safetensors file's __metadata__ (transformers wants "format").
  std::vector<std::pair<std::string, std::string>> metadata = {
      {"format", "pt"}};
  // The index's "metadata" besides total_size: key -> JSON text.
  std::vector<std::pair<std::string, std::string>> index_metadata;
  // Other files of the checkpoint (config.json, tokenizer files), by their
  // name in `dir`: given as bytes, or copied from a path.
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::pair<std::string, std::string>> copied_files;
  WriteControl control;
};

struct WrittenCheckpoint {
  std::vector<std::string> files;  // Safetensors files, then the index.
  int64_t total_size = 0;          // Tensor bytes.
};

// Whether `path` may become a written checkpoint (a directory, or a file
// where !directory): absent, an empty directory, or (with `overwrite`) one of
// the same kind; ValueError naming it otherwise ("exists; --overwrite
// replaces it"). Removes what killed writers of `path` left beside it (NOTE
// [ Files complete or absent ]).
absl::Status CheckCheckpointDestination(const std::string& path, bool directory,
                                        bool overwrite);

// Whether WriteCheckpoint (WriteSafetensors) can write a Tensor of `dtype`
// and `shape` named `name`: OK, or the ValueError it would refuse it with.
absl::Status CheckSafetensorsForm(const std::string& name, const DType& dtype,
                                  const std::vector<int64_t>& shape);

// Writes `tensors` (names unique; each made once, in order) as the directory
// `dir`. Errors, with nothing left but what existed before: ValueError for
// max_shard_size < 1, an existing `dir` that is a file or holds anything
// without `overwrite`, a Tensor WriteSafetensors refuses (before any file is
// written), a name of `files` that is not a plain name or is a checkpoint's
// own; what a Tensor's `make` returns; a write error (naming the file and the
// OS error, e.g. "No space left on device"); CancelledError when
// control.cancel is set.
absl::StatusOr<WrittenCheckpoint> WriteCheckpoint(
    const std::string& dir, std::vector<TensorToWrite> tensors,
    const WriteCheckpointOptions& options);

}  // namespace strata

#endif  // STRATA_CHECKPOINT_CHECKPOINT_WRITER_H_
