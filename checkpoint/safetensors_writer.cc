// WriteSafetensors (checkpoint/safetensors.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/internal/conventions.h"
#include "checkpoint/internal/names.h"
#include "checkpoint/safetensors.h"
#include "core/errors.h"
#include "core/representation.h"
#include "core/status_macros.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/checked_math.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "nlohmann/json.hpp"

namespace strata {
namespace {

using checkpoint_internal::FromSafetensorsName;
using checkpoint_internal::kMetadataKey;
using checkpoint_internal::Quoted;
using checkpoint_internal::ShapeText;
using checkpoint_internal::ToSafetensorsName;
using Json = nlohmann::ordered_json;

}  // namespace

namespace {

// Whether `s` is valid UTF-8 (what a JSON string must be).
bool IsUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    int more;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      more = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      more = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      more = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + more >= s.size()) return false;
    for (int k = 1; k <= more; ++k) {
      const unsigned char d = s[i + k];
      if ((d & 0xC0) != 0x80) return false;
      cp = cp << 6 | (d & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[more] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += more + 1;
  }
  return true;
}

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

// What one tensor writes: its entries and their bytes, produced on demand.
struct WritePlan {
  std::string name;
  const Tensor* tensor;
  bool pair = false;
  const SimpleDType* dtype = nullptr;  // One-level.
  std::vector<int64_t> shape;          // One-level: the shape; pair: logical.
  int64_t bytes = 0;                   // One-level.
  int64_t block_bytes = 0, scale_bytes = 0;  // Pair.
  // A convention's members (NOTE [ Checkpoint conventions ]), bytes made.
  std::vector<checkpoint_internal::WrittenMember> members;
};

absl::Status WriteError(absl::string_view name, absl::string_view message) {
  return ValueErrorCat("WriteSafetensors: tensor ", Quoted(name), ": ",
                       message);
}

absl::StatusOr<WritePlan> PlanTensor(const std::string& name, const Tensor& t) {
  WritePlan p;
  p.name = name;
  p.tensor = &t;
  p.shape = t.shape();
  const Representation& rep = TensorAccess::representation(t);
  for (const Subtensor& s : rep.subtensors()) {
    if (s.carrier->data() == nullptr && s.placement.size() > 0) {
      return WriteError(name, absl::StrCat("the ", s.carrier->Describe(),
                                           " holds no host data"));
    }
  }
  if (rep.num_levels() == 1) {
    p.dtype = t.dtype().AsSimple();
    if (p.dtype == nullptr || ToSafetensorsName(*p.dtype).empty()) {
      return WriteError(name, absl::StrCat("dtype ", t.dtype().name(),
                                           " has no safetensors dtype"));
    }
    STRATA_ASSIGN_OR_RETURN(p.bytes, StorageBytes(*p.dtype, t.size()));
    return p;
  }
  if (auto members = checkpoint_internal::ConventionMembers(name, t)) {
    STRATA_ASSIGN_OR_RETURN(p.members, std::move(*members));
    return p;
  }
  if (&t.dtype() != dtypes::MXFP4()) {
    return WriteError(name, absl::StrCat("a ", rep.num_levels(),
                                         "-level Tensor of ", t.dtype().name(),
                                         " has no safetensors form (mxfp4 "
                                         "writes as a .blocks/.scales pair, "
                                         "the formats of a checkpoint "
                                         "convention as its members)"));
  }
  if (p.shape.empty() || p.shape.back() % 32 != 0) {
    return WriteError(
        name, absl::StrCat("an mxfp4 Tensor of shape ", ShapeText(p.shape),
                           " is not blocked along its last dim "
                           "(its extent is not a multiple of "
                           "32)"));
  }
  p.pair = true;
  const int64_t values = t.size();
  p.block_bytes = values / 2;
  p.scale_bytes = values / 32;
  return p;
}

bool WriteAll(int fd, absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(n);
  }
  return true;
}

// A temporary file beside `path`, created (O_EXCL) with a name no other
// writer of this process or another uses: two writers of one path each write
// their own, and the last rename wins whole.
int CreateTemporary(const std::string& path, std::string* temporary) {
  static std::atomic<uint64_t> next{0};
  for (int attempt = 0; attempt < 16; ++attempt) {
    *temporary =
        absl::StrCat(path, ".strata-tmp-", static_cast<int64_t>(getpid()), "-",
                     next.fetch_add(1, std::memory_order_relaxed));
    const int fd =
        open(temporary->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

// The values of a one-level Tensor, row-major, written to `fd` a chunk of at
// most kChunkValues at a time: a view (a broadcast) may reach far more values
// than its carrier holds, and the file's bytes never all sit in memory.
// Returns false when a write fails.
constexpr int64_t kChunkValues = int64_t{1} << 22;  // A multiple of 8.
bool WriteOneLevel(int fd, const WritePlan& p) {
  const Tensor& t = *p.tensor;
  const uint8_t* src = static_cast<const uint8_t*>(t.carrier()->data());
  const int bits = p.dtype->bits();
  const auto modes = TopLevelModes(t.layout());
  const int64_t offset = t.offset();
  const int64_t chunk_bytes = std::min(p.bytes, kChunkValues * bits / 8);
  std::string chunk(static_cast<size_t>(chunk_bytes), '\0');
  uint8_t* dst = reinterpret_cast<uint8_t*>(chunk.data());
  int64_t chunk_start = 0;  // The row-major index of the chunk's first value.
  bool ok = true;
  ForEachRowMajor(modes, {}, [&](int64_t r, int64_t index, int64_t) {
    if (!ok) return;
    if (r - chunk_start == kChunkValues) {
      ok = WriteAll(fd, chunk);
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
  // The last chunk: the bytes of the values it holds (p.bytes in all).
  const int64_t rest = p.bytes - chunk_start * bits / 8;
  return ok && WriteAll(fd, absl::string_view(chunk.data(),
                                              static_cast<size_t>(rest)));
}

// The .blocks and .scales bytes of an mxfp4 Tensor; ValueError when a block of
// 32 consecutive values of the last dim does not share one scale.
absl::Status PairBytes(const WritePlan& p, std::string* blocks,
                       std::string* scales) {
  const Representation& rep = TensorAccess::representation(*p.tensor);
  const Subtensor& v = rep.subtensor(0);
  const Subtensor& s = rep.subtensor(1);
  const Layout& s0 = rep.adjacent_layouts()[0];
  blocks->assign(p.block_bytes, '\0');
  scales->assign(p.scale_bytes, '\0');
  const uint8_t* vsrc = static_cast<const uint8_t*>(v.carrier->data());
  const uint8_t* ssrc = static_cast<const uint8_t*>(s.carrier->data());
  uint8_t* bdst = reinterpret_cast<uint8_t*>(blocks->data());
  uint8_t* sdst = reinterpret_cast<uint8_t*>(scales->data());
  const auto l0_modes = TopLevelModes(v.placement);
  const auto s0_modes = TopLevelModes(s0);
  int64_t block_scale = 0;
  absl::Status status;
  ForEachRowMajor(l0_modes, s0_modes, [&](int64_t r, int64_t iv, int64_t is) {
    if (!status.ok()) return;
    WritePacked(bdst, 4, r, ReadPacked(vsrc, 4, v.offset + iv));
    if (r % 32 == 0) {
      block_scale = is;
      sdst[r / 32] = ssrc[s.offset + s.placement(is)];
    } else if (is != block_scale) {
      status = WriteError(
          p.name, absl::StrCat("an mxfp4 Tensor of shape ", ShapeText(p.shape),
                               " is not blocked along its last dim (values ",
                               r - r % 32, " and ", r,
                               " in row-major order have different scales); "
                               "the safetensors pair stores 32 consecutive "
                               "values of the last dim per scale"));
    }
  });
  return status;
}

Json ShapeJson(absl::Span<const int64_t> shape) {
  Json out = Json::array();
  for (int64_t x : shape) out.push_back(x);
  return out;
}

// The file WriteSafetensors writes for `path`: the path itself, or where a
// symbolic link at it leads (the link stays, its target gets the file). A path
// that names something other than a regular file (a directory, a device, a
// FIFO) is refused rather than replaced.
absl::StatusOr<std::string> WriteTarget(const std::string& path) {
  std::string target = path;
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    char* resolved = realpath(path.c_str(), nullptr);
    if (resolved == nullptr) {
      return ValueErrorCat(
          "WriteSafetensors: ", Quoted(path),
          " is a symbolic link that leads to no file: ", std::strerror(errno));
    }
    target = resolved;
    std::free(resolved);
  }
  if (stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return ValueErrorCat(
        "WriteSafetensors: ", Quoted(path), " is not a regular file",
        S_ISDIR(st.st_mode) ? " (a directory)" : "", "; it is not replaced");
  }
  return target;
}

absl::Status WriteSafetensorsTo(
    const std::string& path,
    absl::Span<const std::pair<std::string, Tensor>> tensors,
    absl::Span<const std::pair<std::string, std::string>> metadata) {
  absl::flat_hash_set<std::string> names;
  auto claim = [&](const std::string& name) -> absl::Status {
    if (name == kMetadataKey) {
      return WriteError(name, "the name is reserved for the metadata");
    }
    if (!IsUtf8(name)) return WriteError(name, "the name is not UTF-8");
    if (!names.insert(name).second) {
      return WriteError(name, "the name is written twice");
    }
    return absl::OkStatus();
  };
  absl::flat_hash_set<std::string> keys;
  for (const auto& [key, value] : metadata) {
    if (!IsUtf8(key) || !IsUtf8(value)) {
      return ValueErrorCat("WriteSafetensors: __metadata__ ", Quoted(key),
                           " is not UTF-8");
    }
    if (!keys.insert(key).second) {
      return ValueErrorCat("WriteSafetensors: __metadata__ ", Quoted(key),
                           " is written twice");
    }
  }
  std::vector<WritePlan> planned;
  for (const auto& [name, tensor] : tensors) {
    STRATA_ASSIGN_OR_RETURN(WritePlan p, PlanTensor(name, tensor));
    if (!p.members.empty()) {
      for (const auto& m : p.members) STRATA_RETURN_IF_ERROR(claim(m.name));
    } else if (p.pair) {
      STRATA_RETURN_IF_ERROR(claim(name + ".blocks"));
      STRATA_RETURN_IF_ERROR(claim(name + ".scales"));
    } else {
      STRATA_RETURN_IF_ERROR(claim(name));
    }
    planned.push_back(std::move(p));
  }
  // The header, written member by member: an ordered_json object finds each
  // key by a linear scan, so building one of n tensors cost O(n^2). The names
  // are unique (claimed above), the order is the Tensors'.
  const auto dump = [](const Json& value) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
  };
  std::string header = "{";
  const auto member = [&](const std::string& key, const Json& value) {
    if (header.size() > 1) header.push_back(',');
    absl::StrAppend(&header, dump(Json(key)), ":", dump(value));
  };
  if (!metadata.empty()) {
    std::string text = "{";
    for (const auto& [key, value] : metadata) {
      if (text.size() > 1) text.push_back(',');
      absl::StrAppend(&text, dump(Json(key)), ":", dump(Json(value)));
    }
    absl::StrAppend(&header, dump(Json(std::string(kMetadataKey))), ":", text,
                    "}");
  }
  int64_t at = 0;
  auto add = [&](const std::string& name, absl::string_view dtype,
                 absl::Span<const int64_t> shape, int64_t bytes) {
    Json info = Json::object();
    info["dtype"] = std::string(dtype);
    info["shape"] = ShapeJson(shape);
    info["data_offsets"] = Json::array({at, at + bytes});
    member(name, info);
    at += bytes;
  };
  for (const WritePlan& p : planned) {
    if (!p.members.empty()) {
      for (const auto& m : p.members) {
        add(m.name, m.dtype, m.shape, static_cast<int64_t>(m.bytes.size()));
      }
      continue;
    }
    if (!p.pair) {
      add(p.name, ToSafetensorsName(*p.dtype), p.shape, p.bytes);
      continue;
    }
    std::vector<int64_t> scale_shape = p.shape;
    scale_shape.back() /= 32;
    std::vector<int64_t> block_shape = scale_shape;
    block_shape.push_back(16);
    add(p.name + ".blocks", "U8", block_shape, p.block_bytes);
    add(p.name + ".scales", "U8", scale_shape, p.scale_bytes);
  }
  header.push_back('}');
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string prefix = SafetensorsLengthPrefix(header.size());

  // Written to a temporary file beside `path`, renamed over it at the end.
  std::string temporary;
  const int fd = CreateTemporary(path, &temporary);
  if (fd < 0) {
    return ValueErrorCat("WriteSafetensors: cannot create ", Quoted(temporary),
                         ": ", std::strerror(errno));
  }
  auto write_error = [&]() {
    return ValueErrorCat("WriteSafetensors: cannot write ", Quoted(temporary),
                         ": ", std::strerror(errno));
  };
  auto write_all = [&]() -> absl::Status {
    if (!WriteAll(fd, prefix) || !WriteAll(fd, header)) return write_error();
    for (const WritePlan& p : planned) {
      if (!p.members.empty()) {
        for (const auto& m : p.members) {
          if (!WriteAll(fd, m.bytes)) return write_error();
        }
        continue;
      }
      if (!p.pair) {
        if (!WriteOneLevel(fd, p)) return write_error();
        continue;
      }
      std::string blocks, scales;
      STRATA_RETURN_IF_ERROR(PairBytes(p, &blocks, &scales));
      if (!WriteAll(fd, blocks) || !WriteAll(fd, scales)) {
        return write_error();
      }
    }
    return absl::OkStatus();
  };
  absl::Status written;
  try {
    written = write_all();
  } catch (const std::bad_alloc&) {  // A pair's bytes: WriteSafetensors.
    written = ResourceExhaustedErrorCat(
        "WriteSafetensors: ", Quoted(path),
        ": the tensors' bytes cannot be held in memory to be written");
  }
  if (!written.ok()) {
    close(fd);
    unlink(temporary.c_str());
    return written;
  }
  if (close(fd) != 0) {
    unlink(temporary.c_str());
    return write_error();
  }
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    const absl::Status status =
        ValueErrorCat("WriteSafetensors: cannot rename ", Quoted(temporary),
                      " to ", Quoted(path), ": ", std::strerror(errno));
    unlink(temporary.c_str());
    return status;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteSafetensors(
    const std::string& path,
    absl::Span<const std::pair<std::string, Tensor>> tensors,
    absl::Span<const std::pair<std::string, std::string>> metadata) {
  STRATA_ASSIGN_OR_RETURN(const std::string target, WriteTarget(path));
  // A convention's members and an mxfp4 pair are built in memory before they
  // are written; a view may ask for more than there is. The standard library
  // says so by throwing, which stops as the error it is: here while planning
  // (no file yet), in WriteSafetensorsTo while writing (which closes and
  // removes its temporary file).
  try {
    return WriteSafetensorsTo(target, tensors, metadata);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedErrorCat(
        "WriteSafetensors: ", Quoted(path),
        ": the tensors' bytes cannot be held in memory to be written");
  }
}

std::string SafetensorsLengthPrefix(uint64_t header_bytes) {
  std::string prefix(8, '\0');
  for (int k = 0; k < 8; ++k) {
    prefix[k] = static_cast<char>(header_bytes >> (8 * k));
  }
  return prefix;
}

}  // namespace strata
