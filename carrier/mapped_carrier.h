// MappedCarrier: a read-only region of a file (a private mapping), typed like
// any carrier. Checkpoints (checkpoint/safetensors.h) import over it without
// copying; a text dump of it names the file (proto/codec.h).
//
// NOTE [ Mapped regions ]
// A MappedRegion maps bytes [offset, offset + length) of one file once; the
// MappedCarriers over it (the tensors of one safetensors file) share it through
// std::shared_ptr, so the mapping lives while any carrier (hence any Tensor or
// view) refers to it, and is unmapped when the last one goes away or is
// released. The file's size is checked with fstat before mapping: no page of
// the region lies beyond the end of the file as it was when mapped, so reading
// it cannot raise SIGBUS unless another process truncates the file afterwards
// (which no mapping reader can prevent; such a file must not be truncated
// while it is imported). The region's offset need not be page-aligned (the
// mapping starts at the page below it), and a zero-length region maps nothing
// yet has a non-null data pointer.
//
// NOTE [ Anonymous mapped carriers ]
// A MappedRegion may also be a private anonymous mapping (an empty path): the
// new scales a Relayout writes beside a mapped weight (ops/relayout.h), so
// that the result keeps the spec's one carrier class, "mapped", and level 0
// stays the file's pages. Its bytes are written once, before the region is
// shared, and are read-only from then on, like a file's. Such a carrier has
// no file to name, so a text dump carries its bytes as `data` with no `file`
// (proto/codec.h), and Replay maps them anew.
//
// NOTE [ Private writable mappings ]
// The region is mapped MAP_PRIVATE with PROT_READ | PROT_WRITE (and
// MAP_NORESERVE). Strata never writes to it: its carriers are read-only and
// every write through them is refused. But a DLPack export cannot say
// read-only (DLPack 0.6), and PyTorch has no read-only tensors, so a
// consumer may write anyway: its writes go to copy-on-write pages of this
// process -- never to the file, never a fault -- and Tensors over the same
// carrier then read them (the carrier's version does not change: Strata did
// not write). Pages that are only read stay shared with the page cache.
#ifndef STRATA_CARRIER_MAPPED_CARRIER_H_
#define STRATA_CARRIER_MAPPED_CARRIER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "carrier/carrier.h"
#include "dtype/dtype.h"

namespace strata {

class MappedRegion {
 public:
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;
  ~MappedRegion();

  // Maps bytes [offset, offset + length) of the file at `path` read-only.
  // Errors (ValueError naming the file): a negative offset or length, an end
  // that overflows int64, a file that cannot be opened or is not a regular
  // file, a file shorter than offset + length (the message names both sizes).
  // ResourceExhaustedError naming the bytes when the kernel refuses the
  // mapping. Nothing stays mapped or open on failure.
  static absl::StatusOr<std::shared_ptr<const MappedRegion>> Map(
      const std::string& path, int64_t offset, int64_t length);
  // The same for an open file descriptor (not closed, not kept open): `path`
  // is only the name the region reports (e.g. "-" for standard input copied
  // to a memory file).
  static absl::StatusOr<std::shared_ptr<const MappedRegion>> MapFd(
      int fd, const std::string& path, int64_t offset, int64_t length);

  // A private anonymous mapping of `length` bytes, zero-filled and then
  // written by `fill` (given the first byte) before anyone else sees it.
  // Errors: ValueError for a negative length; ResourceExhaustedError naming
  // the bytes when the kernel refuses the mapping.
  static absl::StatusOr<std::shared_ptr<const MappedRegion>> Anonymous(
      int64_t length, absl::FunctionRef<void(uint8_t*)> fill);

  // The file as given; empty for an anonymous mapping.
  const std::string& path() const { return path_; }
  bool anonymous() const { return path_.empty(); }
  int64_t offset() const { return offset_; }
  int64_t length() const { return length_; }
  // Byte `offset` of the file; never null (a zero-length region points at a
  // static byte that must not be read).
  const uint8_t* data() const { return data_; }

  // Gives back this process's pages of bytes [begin, begin + length) of a
  // file's region (the pages they touch; MADV_DONTNEED), so a reader that
  // streams a large file keeps only what it is reading resident (strata
  // convert). The bytes read the same afterwards: the pages come back from
  // the file when touched. Only the region's owner may call it, and only
  // where no consumer wrote (NOTE [ Private writable mappings ]: such a
  // private copy would be dropped). Nothing for an anonymous region (its
  // bytes exist nowhere else) or a range outside the region.
  void DropPages(int64_t begin, int64_t length) const;
  // Maps this process's pages of bytes [begin, begin + length) of the region
  // in one step (MADV_POPULATE_READ, Linux 5.14), where a streaming reader
  // is about to read them all: one call instead of a page fault every few
  // pages. A hint: nothing on an older kernel, an anonymous region or a
  // range outside the region.
  void Populate(int64_t begin, int64_t length) const;

 private:
  // madvise(advice) over the whole pages of bytes [begin, begin + length) of
  // a file's region; nothing for an anonymous one or a range outside.
  void Advise(int64_t begin, int64_t length, int advice) const;
  MappedRegion(std::string path, int64_t offset, int64_t length,
               const uint8_t* data, void* mapping, size_t mapping_bytes)
      : path_(std::move(path)),
        offset_(offset),
        length_(length),
        data_(data),
        mapping_(mapping),
        mapping_bytes_(mapping_bytes) {}
  std::string path_;
  int64_t offset_;
  int64_t length_;
  const uint8_t* data_;
  void* mapping_;  // Page-aligned start of the mmap, or nullptr.
  size_t mapping_bytes_;
};

// A read-only carrier over bytes of a MappedRegion (NOTE [ Read-only carriers ]
// in carrier.h): `size` values of a simple dtype, packed as in memory
// (NOTE [ Sub-byte storage ] in dtype/packing.h), value 0 at a byte of the
// region. data() is the mapped bytes; mutable_data() is nullptr, the version
// never changes, and every write through it is refused before any effect. A
// DLPack export (ops/dlpack.h) hands out the mapped address like any other:
// the consumer must not write through it (a write that does changes this
// process's copy only: NOTE [ Private writable mappings ]). Values at a file
// offset that is not a multiple of their width are not aligned to it.
class MappedCarrier final : public Carrier {
 public:
  // Values from byte `byte_offset` of `region` on. Errors (ValueError naming
  // the file): a null region, a non-simple dtype, a negative size or offset,
  // a byte count that overflows, bytes beyond the region's end.
  static absl::StatusOr<std::shared_ptr<MappedCarrier>> Create(
      const DType& dtype, int64_t size,
      std::shared_ptr<const MappedRegion> region, int64_t byte_offset,
      uint64_t version = 0);
  // Maps the bytes of `size` values at byte `file_offset` of `path` anew (what
  // Replay does for a "mapped" carrier of a text). Errors: as
  // MappedRegion::Map and Create.
  static absl::StatusOr<std::shared_ptr<MappedCarrier>> Open(
      const DType& dtype, int64_t size, const std::string& path,
      int64_t file_offset, uint64_t version = 0);

  // `size` values of `dtype` in a new anonymous mapping holding `bytes` (what
  // Replay does for a "mapped" carrier of a text with data and no file);
  // empty `bytes` means zero-filled. Errors (ValueError): a non-simple dtype,
  // a negative size, bytes of another length than the values need;
  // ResourceExhaustedError as MappedRegion::Anonymous.
  static absl::StatusOr<std::shared_ptr<MappedCarrier>> FromBytes(
      const DType& dtype, int64_t size, absl::string_view bytes,
      uint64_t version = 0);

  absl::string_view class_name() const override { return "mapped"; }
  // Whether the carrier is over an anonymous mapping (no file).
  bool anonymous() const { return file_.empty(); }
  // "mapped carrier of 16 uint8 values at bytes [136, 152) of FILE", or
  // "... in an anonymous mapping".
  std::string Describe() const override;
  // The file as it was given, and the byte of it holding value 0.
  const std::string& file() const { return file_; }
  int64_t file_offset() const { return file_offset_; }
  int64_t size_in_bytes() const { return bytes_; }
  // The region the carrier's bytes lie in (null once released): a directory
  // reader builds a group of members from several files' regions.
  const std::shared_ptr<const MappedRegion>& region() const { return region_; }

 private:
  MappedCarrier(const DType* dtype, int64_t size, uint64_t version,
                std::shared_ptr<const MappedRegion> region, const uint8_t* data,
                int64_t bytes, int64_t file_offset)
      : Carrier(dtype, size, version, /*read_only=*/true),
        region_(std::move(region)),
        data_(data),
        bytes_(bytes),
        file_(region_->path()),
        file_offset_(file_offset) {}
  void ReleaseStorage() override { region_.reset(); }
  void* raw_data() const override { return const_cast<uint8_t*>(data_); }

  std::shared_ptr<const MappedRegion> region_;
  const uint8_t* data_;
  int64_t bytes_;
  std::string file_;
  int64_t file_offset_;
};

}  // namespace strata

#endif  // STRATA_CARRIER_MAPPED_CARRIER_H_
