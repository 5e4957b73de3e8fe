// The safetensors writer's pieces, shared by WriteSafetensors and the
// directory writer (checkpoint/checkpoint_writer.h): each Tensor laid out
// from its name, dtype and shape before its values, the header of a file of
// such Tensors, and their bytes written one Tensor at a time.
#ifndef STRATA_CHECKPOINT_INTERNAL_SAFETENSORS_FILE_H_
#define STRATA_CHECKPOINT_INTERNAL_SAFETENSORS_FILE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "checkpoint/internal/atomic_files.h"
#include "checkpoint/internal/file_writing.h"
#include "checkpoint/tensor_to_write.h"
#include "dtype/dtype.h"

namespace strata {
namespace checkpoint_internal {

// One entry of the header.
struct PlannedEntry {
  std::string name;
  std::string dtype;  // Safetensors name.
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  int64_t offset = 0;  // In the data buffer (SafetensorsHeader sets it).
};

// What one Tensor writes: itself (one level), an mxfp4 .blocks/.scales pair,
// or a convention's members (NOTE [ Checkpoint conventions ]).
struct PlannedTensor {
  enum class Kind { kOneLevel, kPair, kConvention };
  TensorToWrite* source = nullptr;
  Kind kind = Kind::kOneLevel;
  const SimpleDType* dtype = nullptr;  // kOneLevel.
  std::vector<PlannedEntry> entries;
  int64_t bytes() const {
    int64_t total = 0;
    for (const PlannedEntry& e : entries) total += e.bytes;
    return total;
  }
};

// ValueError ("WriteSafetensors: tensor "NAME": ...") for a dtype with no
// safetensors form, an mxfp4 Tensor whose last dim is not a multiple of 32, a
// convention's Tensor whose name does not end in "weight" or whose last dim
// its blocks do not divide, a byte count that overflows.
absl::StatusOr<PlannedTensor> PlanSafetensorsTensor(TensorToWrite& tensor);

// NOTE [ Aligned safetensors data ]
// The header lists the entries in the order given; their data lies by
// element size, widest first (8-byte dtypes, then 4, 2, 1 and packed 4-bit),
// in the order given within each size, as the safetensors library lays out
// its files: every value is then aligned to its width (the data buffer
// begins at a multiple of 8), which the kernels need (a block-scaled
// Tensor's F32 scales beside an odd number of F8 codes would not be). The
// writers make each Tensor once, in the order given, and write each entry
// at its offset.
//
// The length prefix and header of a file of `tensors` and `metadata`; sets
// each entry's offset. ValueError for a name written twice or
// "__metadata__", text that is not UTF-8, a metadata key given twice.
absl::StatusOr<std::string> SafetensorsHeader(
    absl::Span<PlannedTensor> tensors,
    absl::Span<const std::pair<std::string, std::string>> metadata);

// Makes each Tensor in turn, writes its entries' bytes to `out` at
// `data_start` + their offsets, calls its `written`. Errors: what `make`
// returns; a Tensor whose dtype or shape is not the planned one, or whose
// carriers hold no host data; what the convention or pair writers refuse (a
// layout not blocked as stored); the file's write errors; a cancel.
absl::Status WriteSafetensorsTensors(absl::Span<PlannedTensor> tensors,
                                     OutputFile& out, int64_t data_start,
                                     WriteState& state);

}  // namespace checkpoint_internal
}  // namespace strata

#endif  // STRATA_CHECKPOINT_INTERNAL_SAFETENSORS_FILE_H_
