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
};

struct Checkpoint {
  std::string format;                     // "safetensors" or "gguf".
  std::vector<CheckpointTensor> tensors;  // File order.
};

// The errors are the reader's (ReadSafetensors, ReadGguf), plus those of
// opening the file.
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path);
absl::StatusOr<Checkpoint> ReadCheckpointFd(int fd, const std::string& path);

}  // namespace strata

#endif  // STRATA_CHECKPOINT_CHECKPOINT_H_
