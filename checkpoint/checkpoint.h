// A checkpoint of any format Strata reads, told by the file's first bytes
// (not its name): GGUF (checkpoint/gguf.h) where it begins with "GGUF",
// safetensors (checkpoint/safetensors.h) otherwise.
#ifndef STRATA_CHECKPOINT_CHECKPOINT_H_
#define STRATA_CHECKPOINT_CHECKPOINT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace strata {

struct CheckpointTensor {
  std::string name;
  absl::StatusOr<Tensor> tensor;
  // For a directory or a split set (checkpoint/directory.h): the name within
  // the directory of the file holding level 0; empty for a single file.
  std::string file;
};

struct Checkpoint {
  std::string format;                     // "safetensors" or "gguf".
  std::vector<CheckpointTensor> tensors;  // File order (a directory: index's).
  // A sharded directory's index "metadata" (values as JSON text where they
  // are not strings), by key.
  std::vector<std::pair<std::string, std::string>> metadata;
};

// A directory, a *.safetensors.index.json or one file of a GGUF split set is
// read whole (ReadCheckpointDirectory, checkpoint/directory.h); any other
// path as one file. The errors are the reader's (ReadSafetensors, ReadGguf,
// ReadCheckpointDirectory), plus those of opening the file.
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);
absl::StatusOr<Checkpoint> ReadCheckpointFd(int fd, const std::string& path);

}  // namespace strata

#endif  // STRATA_CHECKPOINT_CHECKPOINT_H_
