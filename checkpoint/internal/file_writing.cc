#include "checkpoint/internal/file_writing.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "checkpoint/internal/atomic_files.h"
#include "checkpoint/internal/names.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/packing.h"
#include "layout/layout.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace checkpoint_internal {

absl::StatusOr<Tensor> MakePlanned(TensorToWrite& source,
                                   absl::string_view who) {
  STRATA_ASSIGN_OR_RETURN(Tensor t, source.make());
  if (&t.dtype() != source.dtype || t.shape() != source.shape) {
    return absl::InternalError(absl::StrCat(
        who, ": tensor ", Quoted(source.name), " was planned as ",
        source.dtype->name(), " ", ShapeText(source.shape), " but made as ",
        t.dtype().name(), " ", ShapeText(t.shape())));
  }
  for (const Subtensor& s : TensorAccess::representation(t).subtensors()) {
    if (s.carrier->data() == nullptr && s.placement.size() > 0) {
      return ValueErrorCat(who, ": tensor ", Quoted(source.name), ": the ",
                           s.carrier->Describe(), " holds no host data");
    }
  }
  return t;
}

absl::Status WriteState::Advance(int64_t bytes) {
  progress.bytes_done += bytes;
  if (control != nullptr) {
    if (control->progress) control->progress(progress);
    STRATA_RETURN_IF_ERROR(CheckCancel(control->cancel, "write"));
  }
  return absl::OkStatus();
}

constexpr int64_t kChunkBytes = int64_t{8} << 20;

absl::Status WriteOneLevelRowMajor(
    const Tensor& t,
    const std::function<absl::Status(absl::string_view)>& sink) {
  const SimpleDType& dtype = *t.dtype().AsSimple();
  const int bits = dtype.bits();
  STRATA_ASSIGN_OR_RETURN(const int64_t bytes, StorageBytes(dtype, t.size()));
  const uint8_t* src = static_cast<const uint8_t*>(t.carrier()->data());
  absl::StatusOr<Layout> row_major = Layout::RowMajor(t.layout().shape());
  if (row_major.ok() && *row_major == t.layout() &&
      (t.offset() * bits) % 8 == 0) {
    // Compact row-major: the carrier's bytes as they are.
    const char* from =
        reinterpret_cast<const char*>(src) + t.offset() * bits / 8;
    for (int64_t at = 0; at < bytes; at += kChunkBytes) {
      STRATA_RETURN_IF_ERROR(sink(absl::string_view(
          from + at, static_cast<size_t>(std::min(kChunkBytes, bytes - at)))));
    }
    return absl::OkStatus();
  }
  // Any other layout (a view, a broadcast, which may reach far more values
  // than its carrier holds): gathered a chunk at a time.
  const int64_t chunk_values = kChunkBytes * 8 / bits;  // A multiple of 8.
  const int64_t chunk_bytes = std::min(bytes, kChunkBytes);
  std::string chunk(static_cast<size_t>(chunk_bytes), '\0');
  uint8_t* dst = reinterpret_cast<uint8_t*>(chunk.data());
  const auto modes = TopLevelModes(t.layout());
  const int64_t offset = t.offset();
  int64_t chunk_start = 0;  // The row-major index of the chunk's first value.
  absl::Status status;
  ForEachRowMajor(modes, {}, [&](int64_t r, int64_t index, int64_t) {
    if (!status.ok()) return;
    if (r - chunk_start == chunk_values) {
      status = sink(chunk);
      std::fill(chunk.begin(), chunk.end(), '\0');
      chunk_start = r;
    }
    const int64_t at = r - chunk_start;
    const int64_t from = offset + index;
    if (bits % 8 == 0) {
      std::memcpy(dst + at * (bits / 8), src + from * (bits / 8), bits / 8);
    } else {
      WritePacked(dst, bits, at, ReadPacked(src, bits, from));
    }
  });
  STRATA_RETURN_IF_ERROR(status);
  // The last chunk: the bytes of the values it holds.
  const int64_t rest = bytes - chunk_start * bits / 8;
  return sink(absl::string_view(chunk.data(), static_cast<size_t>(rest)));
}

}  // namespace checkpoint_internal
}  // namespace strata
