// Carriers: typed storage with a mutation version.
//
// NOTE [ Carrier ownership and aliasing ]
// Carriers are shared: representations and views hold std::shared_ptr<Carrier>,
// and many Tensors may alias one carrier. A Tensor never releases a carrier;
// only an explicit Release() (or the last owner going away) frees its storage.
// Mutation detection relies on version(): every mutation made through Strata
// bumps it exactly once per call, so a snapshot of (identity, version) pairs
// tells whether data changed since.
#ifndef STRATA_CARRIER_CARRIER_H_
#define STRATA_CARRIER_CARRIER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <typeindex>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dtype/dtype.h"

namespace strata {

class Carrier {
 public:
  Carrier(const Carrier&) = delete;
  Carrier& operator=(const Carrier&) = delete;
  virtual ~Carrier() = default;

  // The dtype of the stored values (any descriptor for a RecordedCarrier).
  const DType& dtype() const { return *dtype_; }
  // Number of stored values (never bytes); may be negative only for a
  // RecordedCarrier.
  int64_t size() const { return size_; }

  // Mutation version: starts at the creation version (0 unless replayed) and is
  // bumped by every mutation through Strata. Atomic: readable from any thread.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // Records one mutation. Returns the new version. A read-only carrier is
  // never mutated: its version stays, and the call returns it unchanged.
  uint64_t BumpVersion() {
    if (read_only_) return version();
    return version_.fetch_add(1, std::memory_order_acq_rel) + 1;
  }

  // NOTE [ Read-only carriers ]
  // A read-only carrier (a MappedCarrier: a file mapped PROT_READ) can be read
  // and viewed like any other, but never written: mutable_data() is nullptr,
  // its version never changes, and every operation that would write through
  // it fails with a ValueError naming the carrier before any effect (the one
  // check is ops_internal::RequireMutableCarrier in ops/internal/checks.h).
  bool read_only() const { return read_only_; }

  // Frees the storage now (idempotent; the first call frees), or, while the
  // storage is pinned, when the last pin is dropped. Data access through the
  // carrier returns nullptr from the call on. Never called by a Tensor, view
  // or failed operation.
  void Release();
  bool released() const { return released_.load(std::memory_order_acquire); }

  // NOTE [ Pinned storage ]
  // A consumer that holds a raw pointer into the storage (a DLPack export
  // until its deleter runs) pins it, so that a Release() meanwhile cannot free
  // memory the consumer still reads or writes: the carrier reads as released
  // at once, and the storage is freed when the last pin is dropped. Each
  // PinStorage() is matched by one UnpinStorage().
  void PinStorage() { pins_.fetch_add(1, std::memory_order_acq_rel); }
  void UnpinStorage();

  // The registered carrier class name ("host", "external", "recorded", ...).
  virtual absl::string_view class_name() const = 0;
  // The exact dynamic class, for the one-carrier-class rule.
  std::type_index type() const { return typeid(*this); }
  // The exact class where the C++ type does not tell it: a carrier class
  // defined in another language (a Python subclass of strata.Carrier,
  // python/carrier_binding.h) returns an identity of that class, and
  // class_name() names it; C++ classes return nullptr. The one-carrier-class
  // rule compares both type() and this.
  virtual const void* foreign_class() const { return nullptr; }
  // The carrier in words, for error messages: "host carrier of 32 float32
  // values"; a class may add where its values live.
  virtual std::string Describe() const;

  // Host-addressable bytes of the values (NOTE [ Sub-byte storage ] in
  // dtype/packing.h), or nullptr when the class holds no data or the carrier
  // was released; mutable_data() is also nullptr for a read-only carrier.
  const void* data() const { return released() ? nullptr : raw_data(); }
  void* mutable_data() {
    return released() || read_only_ ? nullptr : raw_data();
  }

 protected:
  Carrier(const DType* dtype, int64_t size, uint64_t version,
          bool read_only = false)
      : dtype_(dtype), size_(size), version_(version), read_only_(read_only) {}
  // Frees the class's storage; called exactly once, by the first Release().
  virtual void ReleaseStorage() {}
  virtual void* raw_data() const { return nullptr; }

 private:
  const DType* dtype_;
  int64_t size_;
  std::atomic<uint64_t> version_;
  const bool read_only_;
  std::atomic<bool> released_{false};
  std::atomic<int64_t> pins_{0};
  std::atomic<bool> storage_freed_{false};
  void FreeStorageOnce();
};

// Owned, 64-byte aligned, zero-filled host memory.
class HostCarrier final : public Carrier {
 public:
  // Errors (ValueError): a non-simple dtype, negative size, a byte count
  // that overflows or exceeds kMaxHostBytes. ResourceExhaustedError (status
  // code kResourceExhausted) naming the bytes if the memory cannot be mapped
  // or allocated. Nothing is allocated on failure.
  static constexpr int64_t kMaxHostBytes = int64_t{1} << 46;
  static absl::StatusOr<std::shared_ptr<HostCarrier>> Create(
      const DType& dtype, int64_t size, uint64_t version = 0);
  // Create without zeroing: the values are unspecified until written, for an
  // output that its producer writes in full (NOTE [ Spare mappings ] in
  // carrier.cc). Same errors as Create.
  static absl::StatusOr<std::shared_ptr<HostCarrier>> CreateForOverwrite(
      const DType& dtype, int64_t size, uint64_t version = 0);
  // Returns the spare mappings that released large carriers left for reuse
  // to the kernel; returns how many bytes that unmapped.
  static int64_t TrimSpareMappings();

  ~HostCarrier() override;
  absl::string_view class_name() const override { return "host"; }
  // How many HostCarriers this process has created: lets tests prove that a
  // failed operation allocated nothing.
  static int64_t created();
  int64_t size_in_bytes() const { return bytes_; }

 private:
  static constexpr int64_t kHugePage = int64_t{1} << 21;
  static absl::StatusOr<std::shared_ptr<HostCarrier>> CreateImpl(
      const DType& dtype, int64_t size, uint64_t version, bool zeroed);
  HostCarrier(const DType* dtype, int64_t size, uint64_t version, void* data,
              int64_t bytes, int64_t mapped_bytes)
      : Carrier(dtype, size, version),
        data_(data),
        bytes_(bytes),
        mapped_bytes_(mapped_bytes) {}
  void ReleaseStorage() override;
  void* raw_data() const override { return data_; }

  void* data_;
  int64_t bytes_;
  // > 0 when data_ was mmap'ed (NOTE [ Large host carriers ] in carrier.cc).
  int64_t mapped_bytes_;
};

// Borrowed host memory plus a deleter that runs exactly once: at Release() or
// when the carrier is destroyed, whichever comes first.
class ExternalCarrier final : public Carrier {
 public:
  using Deleter = std::function<void()>;
  // Errors (ValueError): a non-simple dtype, negative size, null data
  // with a positive size. On failure the deleter does not run: the caller still
  // owns the memory. A read_only carrier refuses every write through Strata
  // (NOTE [ Read-only carriers ]), e.g. memory a DLPack producer exported
  // read-only.
  static absl::StatusOr<std::shared_ptr<ExternalCarrier>> Create(
      const DType& dtype, int64_t size, void* data, Deleter deleter,
      uint64_t version = 0, bool read_only = false);

  ~ExternalCarrier() override;
  absl::string_view class_name() const override { return "external"; }

 private:
  ExternalCarrier(const DType* dtype, int64_t size, uint64_t version,
                  void* data, Deleter deleter, bool read_only)
      : Carrier(dtype, size, version, read_only),
        data_(data),
        deleter_(std::move(deleter)) {}
  void ReleaseStorage() override;
  void* raw_data() const override { return data_; }

  void* data_;
  Deleter deleter_;
};

// What a dump recorded of a carrier: dtype, size, version; no data. It may
// report a negative size or a non-simple dtype, so that replay can show
// validation failing.
class RecordedCarrier final : public Carrier {
 public:
  static std::shared_ptr<RecordedCarrier> Create(const DType& dtype,
                                                 int64_t size,
                                                 uint64_t version = 0);
  absl::string_view class_name() const override { return "recorded"; }

 private:
  using Carrier::Carrier;
};

}  // namespace strata

#endif  // STRATA_CARRIER_CARRIER_H_
