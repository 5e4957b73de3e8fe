#include "carrier/mapped_carrier.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dtype/packing.h"
#include "util/errors.h"

namespace strata {
namespace {

// What a zero-length region points at.
const uint8_t kEmptyRegion = 0;

}  // namespace

MappedRegion::~MappedRegion() {
  if (mapping_ != nullptr) munmap(mapping_, mapping_bytes_);
}

namespace {
#ifndef MADV_POPULATE_READ
constexpr int MADV_POPULATE_READ = 22;  // Linux 5.14; older headers lack it.
#endif
}  // namespace

void MappedRegion::Advise(int64_t begin, int64_t length, int advice) const {
  if (anonymous() || mapping_ == nullptr || begin < 0 || length <= 0 ||
      begin > length_ || length > length_ - begin) {
    return;
  }
  // The whole pages the bytes touch, within the mapping.
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first =
      reinterpret_cast<uintptr_t>(data_ + begin) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data_ + begin + length);
  const uintptr_t mapping_end =
      reinterpret_cast<uintptr_t>(mapping_) + mapping_bytes_;
  const uintptr_t last =
      std::min(((end + page - 1) & ~(page - 1)), mapping_end);
  if (last > first) {
    madvise(reinterpret_cast<void*>(first), last - first, advice);
  }
}

void MappedRegion::Populate(int64_t begin, int64_t length) const {
  Advise(begin, length, MADV_POPULATE_READ);
}

void MappedRegion::DropPages(int64_t begin, int64_t length) const {
  Advise(begin, length, MADV_DONTNEED);
}

absl::StatusOr<std::shared_ptr<const MappedRegion>> MappedRegion::Map(
    const std::string& path, int64_t offset, int64_t length) {
  // O_NONBLOCK: a FIFO opens at once (and MapFd refuses it as not a regular
  // file) rather than waiting for a writer; regular files ignore the flag.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return ValueErrorCat("MappedRegion: cannot open \"", path,
                         "\": ", std::strerror(errno));
  }
  auto region = MapFd(fd, path, offset, length);
  close(fd);
  return region;
}

absl::StatusOr<std::shared_ptr<const MappedRegion>> MappedRegion::MapFd(
    int fd, const std::string& path, int64_t offset, int64_t length) {
  int64_t end;
  if (offset < 0 || length < 0 ||
      __builtin_add_overflow(offset, length, &end)) {
    return ValueErrorCat("MappedRegion: \"", path, "\": bytes [", offset, ", ",
                         offset, " + ", length, ") are not a region of a file");
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return ValueErrorCat("MappedRegion: cannot stat \"", path,
                         "\": ", std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return ValueErrorCat("MappedRegion: \"", path, "\" is not a regular file",
                         S_ISDIR(st.st_mode) ? " (a directory)" : "");
  }
  if (static_cast<int64_t>(st.st_size) < end) {
    return ValueErrorCat("MappedRegion: \"", path, "\" holds ", st.st_size,
                         " bytes, shorter than the ", end, " that bytes [",
                         offset, ", ", end, ") need");
  }
  if (length == 0) {
    return std::shared_ptr<const MappedRegion>(
        new MappedRegion(path, offset, 0, &kEmptyRegion, nullptr, 0));
  }
  const int64_t page = sysconf(_SC_PAGESIZE);
  const int64_t start = offset / page * page;
  const size_t bytes = static_cast<size_t>(end - start);
  // NOTE [ Private writable mappings ]: Strata never writes through these
  // pages (the carriers are read-only); a DLPack consumer that cannot be told
  // so (PyTorch has no read-only tensors) may, and its writes land in this
  // process's copy-on-write pages, never in the file, rather than faulting.
  // MAP_NORESERVE: no swap is reserved for pages that are only ever read.
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_NORESERVE, fd, start);
  if (mapping == MAP_FAILED) {
    return ResourceExhaustedErrorCat("MappedRegion: cannot map ", bytes,
                                     " bytes of \"", path,
                                     "\": ", std::strerror(errno));
  }
  const uint8_t* data = static_cast<const uint8_t*>(mapping) + (offset - start);
  return std::shared_ptr<const MappedRegion>(
      new MappedRegion(path, offset, length, data, mapping, bytes));
}

absl::StatusOr<std::shared_ptr<const MappedRegion>> MappedRegion::Anonymous(
    int64_t length, absl::FunctionRef<void(uint8_t*)> fill) {
  if (length < 0) {
    return ValueErrorCat("MappedRegion: an anonymous mapping of ", length,
                         " bytes");
  }
  if (length == 0) {
    return std::shared_ptr<const MappedRegion>(
        new MappedRegion("", 0, 0, &kEmptyRegion, nullptr, 0));
  }
  const size_t bytes = static_cast<size_t>(length);
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) {
    return ResourceExhaustedErrorCat(
        "MappedRegion: cannot map ", length,
        " anonymous bytes: ", std::strerror(errno));
  }
  auto* data = static_cast<uint8_t*>(mapping);
  fill(data);
  return std::shared_ptr<const MappedRegion>(
      new MappedRegion("", 0, length, data, mapping, bytes));
}

absl::StatusOr<std::shared_ptr<MappedCarrier>> MappedCarrier::FromBytes(
    const DType& dtype, int64_t size, absl::string_view bytes,
    uint64_t version) {
  const SimpleDType* simple = dtype.AsSimple();
  if (simple == nullptr || size < 0) {
    return ValueErrorCat(
        "MappedCarrier: an anonymous mapped carrier needs a simple dtype and a "
        "non-negative size; got ",
        size, " values of ", dtype.name());
  }
  const absl::StatusOr<int64_t> needed = StorageBytes(*simple, size);
  if (!needed.ok()) {
    return WithContext(needed.status(), "MappedCarrier: an anonymous mapping");
  }
  if (!bytes.empty() && static_cast<int64_t>(bytes.size()) != *needed) {
    return ValueErrorCat("MappedCarrier: ", bytes.size(), " bytes for ", size,
                         " values of ", dtype.name(), ", which need ", *needed);
  }
  absl::StatusOr<std::shared_ptr<const MappedRegion>> region =
      MappedRegion::Anonymous(*needed, [&](uint8_t* data) {
        if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
      });
  if (!region.ok()) return region.status();
  return Create(dtype, size, *std::move(region), 0, version);
}

absl::StatusOr<std::shared_ptr<MappedCarrier>> MappedCarrier::Create(
    const DType& dtype, int64_t size,
    std::shared_ptr<const MappedRegion> region, int64_t byte_offset,
    uint64_t version) {
  if (region == nullptr) {
    return ValueError("MappedCarrier: a mapped carrier needs a region");
  }
  const SimpleDType* simple = dtype.AsSimple();
  if (simple == nullptr) {
    return ValueErrorCat("MappedCarrier: a mapped carrier of \"",
                         region->path(), "\" stores simple dtypes; ",
                         dtype.name(), " is a ", dtype.kind_name(), " dtype");
  }
  if (size < 0) {
    return ValueErrorCat("MappedCarrier: a mapped carrier of \"",
                         region->path(), "\" cannot have negative size ", size);
  }
  const absl::StatusOr<int64_t> bytes = StorageBytes(*simple, size);
  if (!bytes.ok()) {
    return WithContext(bytes.status(),
                       absl::StrCat("MappedCarrier: \"", region->path(), "\""));
  }
  int64_t end;
  if (byte_offset < 0 || __builtin_add_overflow(byte_offset, *bytes, &end) ||
      end > region->length()) {
    return ValueErrorCat("MappedCarrier: ", size, " ", dtype.name(),
                         " values (", *bytes, " bytes) at byte ", byte_offset,
                         " of a region of ", region->length(), " bytes of \"",
                         region->path(), "\" do not fit it");
  }
  const int64_t file_offset = region->offset() + byte_offset;
  const uint8_t* data = region->data() + (*bytes == 0 ? 0 : byte_offset);
  return std::shared_ptr<MappedCarrier>(new MappedCarrier(
      &dtype, size, version, std::move(region), data, *bytes, file_offset));
}

absl::StatusOr<std::shared_ptr<MappedCarrier>> MappedCarrier::Open(
    const DType& dtype, int64_t size, const std::string& path,
    int64_t file_offset, uint64_t version) {
  const SimpleDType* simple = dtype.AsSimple();
  if (simple == nullptr || size < 0) {
    return ValueErrorCat(
        "MappedCarrier: a mapped carrier of \"", path,
        "\" needs a simple dtype and a non-negative size; got ", size,
        " values of ", dtype.name());
  }
  const absl::StatusOr<int64_t> bytes = StorageBytes(*simple, size);
  if (!bytes.ok()) {
    return ValueErrorCat("MappedCarrier: ", size, " ", dtype.name(),
                         " values need more bytes than any file of \"", path,
                         "\" can hold");
  }
  absl::StatusOr<std::shared_ptr<const MappedRegion>> region =
      MappedRegion::Map(path, file_offset, *bytes);
  if (!region.ok()) return region.status();
  return Create(dtype, size, *std::move(region), 0, version);
}

std::string MappedCarrier::Describe() const {
  if (anonymous()) {
    return absl::StrCat("mapped carrier of ", size(), " ", dtype().name(),
                        " values in an anonymous mapping");
  }
  return absl::StrCat("mapped carrier of ", size(), " ", dtype().name(),
                      " values at bytes [", file_offset_, ", ",
                      file_offset_ + bytes_, ") of \"", file_, "\"");
}

}  // namespace strata
