#include "carrier/carrier.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "dtype/packing.h"
#include "util/errors.h"

namespace strata {
namespace {

absl::StatusOr<const SimpleDType*> RequireSimple(
    const DType* dtype, int64_t size, absl::string_view carrier_class) {
  if (dtype == nullptr) {
    return ValueErrorCat("a ", carrier_class, " carrier needs a dtype");
  }
  const SimpleDType* simple = dtype->AsSimple();
  if (simple == nullptr) {
    return ValueErrorCat("a ", carrier_class, " carrier stores simple dtypes; ",
                         dtype->name(), " is a ", dtype->kind_name(), " dtype");
  }
  if (size < 0) {
    return ValueErrorCat("a ", carrier_class, " carrier of ", dtype->name(),
                         " cannot have negative size ", size);
  }
  return simple;
}

std::atomic<int64_t> host_carriers_created{0};

// NOTE [ Spare mappings ]
// A fresh mapping costs its first touch: the kernel zeroes each huge page it
// faults in, about 8 ms per 64 MiB here -- as long as the transposing copy
// that fills it. So the storage of a released large carrier is kept as a
// spare (at most kMaxSpares of them, kMaxSpareBytes in all; the oldest goes
// back to the kernel first) for the next large carrier of the same mapped
// size: Create zeroes a reused mapping with memset (no faults), and
// CreateForOverwrite, for outputs their producer writes in full, does not
// zero it at all. HostCarrier::TrimSpareMappings() unmaps the spares.
class SpareMappings {
 public:
  static constexpr size_t kMaxSpares = 4;
  static constexpr int64_t kMaxSpareBytes = int64_t{512} << 20;

  static SpareMappings& Get() {
    static SpareMappings* spares = new SpareMappings();  // Never destroyed.
    return *spares;
  }
  // A spare of exactly `bytes`, or nullptr.
  void* Take(int64_t bytes) {
    absl::MutexLock lock(&mutex_);
    for (size_t i = spares_.size(); i-- > 0;) {
      if (spares_[i].second == bytes) {
        void* data = spares_[i].first;
        spares_.erase(spares_.begin() + i);
        held_ -= bytes;
        return data;
      }
    }
    return nullptr;
  }
  // Keeps `data` as a spare, or unmaps it where it does not fit.
  void Give(void* data, int64_t bytes) {
    std::vector<std::pair<void*, int64_t>> evicted;
    {
      absl::MutexLock lock(&mutex_);
      if (bytes > kMaxSpareBytes) {
        evicted.push_back({data, bytes});
      } else {
        while (!spares_.empty() && (spares_.size() == kMaxSpares ||
                                    held_ + bytes > kMaxSpareBytes)) {
          evicted.push_back(spares_.front());
          held_ -= spares_.front().second;
          spares_.erase(spares_.begin());
        }
        spares_.push_back({data, bytes});
        held_ += bytes;
      }
    }
    for (const auto& [p, n] : evicted) munmap(p, n);
  }
  int64_t Trim() {
    std::vector<std::pair<void*, int64_t>> all;
    {
      absl::MutexLock lock(&mutex_);
      all.swap(spares_);
      held_ = 0;
    }
    int64_t bytes = 0;
    for (const auto& [p, n] : all) {
      munmap(p, n);
      bytes += n;
    }
    return bytes;
  }

 private:
  absl::Mutex mutex_;
  std::vector<std::pair<void*, int64_t>> spares_ ABSL_GUARDED_BY(mutex_);
  int64_t held_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace

int64_t HostCarrier::TrimSpareMappings() { return SpareMappings::Get().Trim(); }

int64_t HostCarrier::created() {
  return host_carriers_created.load(std::memory_order_relaxed);
}

std::string Carrier::Describe() const {
  return absl::StrCat(class_name(), " carrier of ", size_, " ", dtype_->name(),
                      " values");
}

void Carrier::FreeStorageOnce() {
  if (!storage_freed_.exchange(true, std::memory_order_acq_rel)) {
    ReleaseStorage();
  }
}

// Whichever of the first Release() and the last UnpinStorage() comes second
// frees the storage (NOTE [ Pinned storage ] in carrier.h); storage_freed_
// makes the two racing callers free it once.
void Carrier::Release() {
  if (released_.exchange(true, std::memory_order_acq_rel)) return;
  if (pins_.load(std::memory_order_acquire) == 0) FreeStorageOnce();
}

void Carrier::UnpinStorage() {
  if (pins_.fetch_sub(1, std::memory_order_acq_rel) == 1 && released()) {
    FreeStorageOnce();
  }
}

absl::StatusOr<std::shared_ptr<HostCarrier>> HostCarrier::Create(
    const DType& dtype, int64_t size, uint64_t version) {
  return CreateImpl(dtype, size, version, /*zeroed=*/true);
}

absl::StatusOr<std::shared_ptr<HostCarrier>> HostCarrier::CreateForOverwrite(
    const DType& dtype, int64_t size, uint64_t version) {
  return CreateImpl(dtype, size, version, /*zeroed=*/false);
}

absl::StatusOr<std::shared_ptr<HostCarrier>> HostCarrier::CreateImpl(
    const DType& descriptor, int64_t size, uint64_t version, bool zeroed) {
  const DType* dtype = &descriptor;
  auto simple = RequireSimple(dtype, size, "host");
  if (!simple.ok()) return simple.status();
  auto bytes = StorageBytes(**simple, size);
  if (!bytes.ok()) return bytes.status();
  if (*bytes > kMaxHostBytes) {
    return ValueErrorCat("a host carrier of ", size, " ", dtype->name(),
                         " values needs ", *bytes,
                         " bytes, above the limit of ", kMaxHostBytes);
  }
  // Round up to the alignment so that vector loops may read whole lines.
  int64_t allocated = (*bytes + 63) / 64 * 64;
  void* data = nullptr;
  bool mapped = false;
  bool fresh_mapping = false;  // Zeroed by the kernel.
  if (allocated >= kHugePage) {
    // NOTE [ Large host carriers ]
    // Large buffers are mapped directly, 2 MiB aligned, with transparent huge
    // pages asked for: the kernel hands out zeroed memory (no memset), and a
    // first touch faults once per 2 MiB instead of once per 4 KiB (measured
    // here: 64 MiB first touch 230 ms with 4 KiB pages, 35 ms with huge
    // pages).
    allocated = (allocated + kHugePage - 1) / kHugePage * kHugePage;
    data = SpareMappings::Get().Take(allocated);
    if (data != nullptr) {
      if (zeroed) std::memset(data, 0, allocated);
      mapped = true;
    }
  }
  if (allocated >= kHugePage && data == nullptr) {
    void* raw = mmap(nullptr, allocated + kHugePage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw != MAP_FAILED) {
      const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
      const uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
      if (aligned > start) munmap(raw, aligned - start);
      const uintptr_t tail =
          start + allocated + kHugePage - (aligned + allocated);
      if (tail > 0) munmap(reinterpret_cast<void*>(aligned + allocated), tail);
      data = reinterpret_cast<void*>(aligned);
      madvise(data, allocated, MADV_HUGEPAGE);
      mapped = true;
      fresh_mapping = true;
    } else {
      // No fallback to the heap: a size the kernel refuses to map (say 34 GB
      // asked by a replayed text) is an error, never an abort.
      return ResourceExhaustedErrorCat(
          "HostCarrier::Create: cannot map ", allocated,
          " bytes for a host carrier of ", size, " ", dtype->name(),
          " values (", *bytes, " bytes of data)");
    }
  }
  if (allocated > 0 && data == nullptr) {
    data = ::operator new(allocated, std::align_val_t(64), std::nothrow);
    if (data == nullptr) {
      return ResourceExhaustedErrorCat(
          "HostCarrier::Create: cannot allocate ", allocated,
          " bytes for a host carrier of ", size, " ", dtype->name(),
          " values (", *bytes, " bytes of data)");
    }
    if (zeroed) std::memset(data, 0, allocated);
  }
  if (!zeroed && !fresh_mapping && *bytes > 0) {
    // For overwrite, the data is the producer's to write (this memset was 3%
    // of quantizing 512 KiB in cache); only the last data byte and the
    // padding to the next line start zeroed, so that a sub-byte tail (the
    // free high nibble of an odd count of fp4 codes, which producers keep)
    // and the line vector loops read are the same bytes on every run.
    const int64_t line_end = (*bytes + 63) / 64 * 64;
    std::memset(static_cast<uint8_t*>(data) + *bytes - 1, 0,
                line_end - (*bytes - 1));
  }
  host_carriers_created.fetch_add(1, std::memory_order_relaxed);
  return std::shared_ptr<HostCarrier>(new HostCarrier(
      dtype, size, version, data, *bytes, mapped ? allocated : 0));
}

HostCarrier::~HostCarrier() { Release(); }

void HostCarrier::ReleaseStorage() {
  if (data_ == nullptr) return;
  if (mapped_bytes_ > 0) {
    SpareMappings::Get().Give(data_, mapped_bytes_);
  } else {
    ::operator delete(data_, std::align_val_t(64));
  }
}

absl::StatusOr<std::shared_ptr<ExternalCarrier>> ExternalCarrier::Create(
    const DType& descriptor, int64_t size, void* data, Deleter deleter,
    uint64_t version, bool read_only) {
  const DType* dtype = &descriptor;
  auto simple = RequireSimple(dtype, size, "external");
  if (!simple.ok()) return simple.status();
  if (data == nullptr && size > 0) {
    return ValueErrorCat("an external carrier of ", size, " ", dtype->name(),
                         " values needs a data pointer");
  }
  return std::shared_ptr<ExternalCarrier>(new ExternalCarrier(
      dtype, size, version, data, std::move(deleter), read_only));
}

ExternalCarrier::~ExternalCarrier() { Release(); }

void ExternalCarrier::ReleaseStorage() {
  if (deleter_) {
    Deleter deleter = std::move(deleter_);
    deleter_ = nullptr;
    deleter();
  }
}

std::shared_ptr<RecordedCarrier> RecordedCarrier::Create(const DType& dtype,
                                                         int64_t size,
                                                         uint64_t version) {
  return std::shared_ptr<RecordedCarrier>(
      new RecordedCarrier(&dtype, size, version));
}

}  // namespace strata
