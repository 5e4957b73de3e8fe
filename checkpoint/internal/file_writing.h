// The writers' shared pieces (checkpoint/safetensors.h, gguf.h,
// checkpoint_writer.h): the row-major walk of a Tensor's modes, one level's
// row-major bytes in bounded chunks, and the progress of a write.
#ifndef STRATA_CHECKPOINT_INTERNAL_FILE_WRITING_H_
#define STRATA_CHECKPOINT_INTERNAL_FILE_WRITING_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "checkpoint/tensor_to_write.h"
#include "core/tensor.h"
#include "layout/layout.h"

namespace strata {
namespace checkpoint_internal {

// Walks the row-major coordinates of `modes` (the top-level modes of a
// placement and, optionally, of an adjacent layout of the same shape), calling
// f(row_major_index, index_a, index_b).
template <typename F>
void ForEachRowMajor(absl::Span<const Layout> a, absl::Span<const Layout> b,
                     F&& f) {
  const size_t rank = a.size();
  int64_t total = 1;
  for (const Layout& m : a) total *= m.size();  // Fits: a placement's size.
  if (total == 0) return;
  std::vector<int64_t> coord(rank, 0);
  for (int64_t r = 0; r < total; ++r) {
    int64_t ia = 0, ib = 0;
    for (size_t j = 0; j < rank; ++j) {
      ia += a[j](coord[j]);
      if (!b.empty()) ib += b[j](coord[j]);
    }
    f(r, ia, ib);
    for (size_t j = rank; j-- > 0;) {
      if (++coord[j] < a[j].size()) break;
      coord[j] = 0;
    }
  }
}

// Where a write stands; the writer updates it and reports it through
// `control` after each chunk.
struct WriteState {
  const WriteControl* control = nullptr;
  WriteProgress progress;
  absl::Status Advance(int64_t bytes);  // Reports; CancelledError on cancel.
};

// `source.make()`, checked against what was planned: InternalError naming
// `who` when its dtype or shape differ; ValueError when a carrier holds no
// host data (the message opened by `who` and the tensor's name).
absl::StatusOr<Tensor> MakePlanned(TensorToWrite& source,
                                   absl::string_view who);

// The row-major bytes of a one-level Tensor written to `sink` in chunks of at
// most 8 MiB (straight from its carrier where it is compact row-major).
absl::Status WriteOneLevelRowMajor(
    const Tensor& t,
    const std::function<absl::Status(absl::string_view)>& sink);

}  // namespace checkpoint_internal
}  // namespace strata

#endif  // STRATA_CHECKPOINT_INTERNAL_FILE_WRITING_H_
