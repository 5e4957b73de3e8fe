// What the checkpoint writers take (WriteCheckpoint, WriteGguf,
// WriteSafetensorsStreaming): each Tensor known by its name, dtype and
// logical shape before its values, so that a writer lays out every file
// (offsets, shards, headers) from those alone and asks for the values one
// Tensor at a time, in order, when their bytes are due. A conversion makes
// each output Tensor only then (strata convert); nothing else needs to be
// resident.
#ifndef STRATA_CHECKPOINT_TENSOR_TO_WRITE_H_
#define STRATA_CHECKPOINT_TENSOR_TO_WRITE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "dtype/dtype.h"

namespace strata {

struct TensorToWrite {
  std::string name;
  const DType* dtype = nullptr;
  std::vector<int64_t> shape;  // Logical.
  // Called once, when the Tensor's bytes are due; its result must have
  // `dtype` and `shape` (else the write fails with an internal error).
  std::function<absl::StatusOr<Tensor>()> make;
  // For a one-level (plain) result, optional: its row-major bytes, in order
  // and in pieces, handed to `sink` -- used instead of `make`, so that a
  // producer that works in chunks (a dequantization) never holds the whole
  // result. Must hand over exactly the planned bytes (else an internal
  // error).
  using Sink = std::function<absl::Status(absl::string_view)>;
  std::function<absl::Status(const Sink& sink)> stream;
  // Called once after the Tensor's bytes are written (e.g. to give back the
  // input pages it was made from); may be empty.
  std::function<void()> written;
};

// A Tensor that exists already.
inline TensorToWrite ToWrite(std::string name, Tensor tensor) {
  TensorToWrite out;
  out.name = std::move(name);
  out.dtype = &tensor.dtype();
  out.shape = tensor.shape();
  out.make = [tensor = std::move(tensor)]() -> absl::StatusOr<Tensor> {
    return tensor;
  };
  return out;
}

// Where a write stands, after each chunk of bytes.
struct WriteProgress {
  int64_t tensors_done = 0;
  int64_t tensors_total = 0;
  int64_t bytes_done = 0;   // Tensor bytes written (headers not counted).
  int64_t bytes_total = 0;  // Of all files.
  std::string file;         // The file being written (its final name).
};

// What a caller may ask of a write in progress.
struct WriteControl {
  // Called after each chunk written (at most every few MiB); may be empty.
  std::function<void(const WriteProgress&)> progress;
  // Called when a file is complete under its final name; may be empty.
  std::function<void(const std::string& path)> file_written;
  // When set (a signal handler sets it), the write stops at the next chunk:
  // CancelledError, its temporary files removed. May be null.
  const std::atomic<bool>* cancel = nullptr;
};

}  // namespace strata

#endif  // STRATA_CHECKPOINT_TENSOR_TO_WRITE_H_
