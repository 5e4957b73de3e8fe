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
#include "checkpoint/internal/atomic_files.h"
#include "checkpoint/internal/conventions.h"
#include "checkpoint/internal/file_writing.h"
#include "checkpoint/internal/names.h"
#include "checkpoint/internal/safetensors_file.h"
#include "checkpoint/safetensors.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "nlohmann/json.hpp"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace checkpoint_internal {
namespace {

using Json = nlohmann::ordered_json;

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

absl::Status WriteError(absl::string_view name, absl::string_view message) {
  return ValueErrorCat("WriteSafetensors: tensor ", Quoted(name), ": ",
                       message);
}

absl::Status CheckHostData(const std::string& name, const Tensor& t) {
  const Representation& rep = TensorAccess::representation(t);
  for (const Subtensor& s : rep.subtensors()) {
    if (s.carrier->data() == nullptr && s.placement.size() > 0) {
      return WriteError(name, absl::StrCat("the ", s.carrier->Describe(),
                                           " holds no host data"));
    }
  }
  return absl::OkStatus();
}

// The .blocks and .scales bytes of an mxfp4 Tensor; ValueError when a block of
// 32 consecutive values of the last dim does not share one scale.
absl::Status PairBytes(const std::string& name, const Tensor& t,
                       int64_t block_bytes, int64_t scale_bytes,
                       std::string* blocks, std::string* scales) {
  const Representation& rep = TensorAccess::representation(t);
  const Subtensor& v = rep.subtensor(0);
  const Subtensor& s = rep.subtensor(1);
  const Layout& s0 = rep.adjacent_layouts()[0];
  blocks->assign(block_bytes, '\0');
  scales->assign(scale_bytes, '\0');
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
          name, absl::StrCat("an mxfp4 Tensor of shape ", ShapeText(t.shape()),
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
  std::vector<TensorToWrite> sources;
  sources.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    STRATA_RETURN_IF_ERROR(CheckHostData(name, tensor));
    sources.push_back(ToWrite(name, tensor));
  }
  std::vector<PlannedTensor> planned;
  planned.reserve(sources.size());
  for (TensorToWrite& t : sources) {
    STRATA_ASSIGN_OR_RETURN(PlannedTensor p, PlanSafetensorsTensor(t));
    planned.push_back(std::move(p));
  }
  STRATA_ASSIGN_OR_RETURN(const std::string header,
                          SafetensorsHeader(absl::MakeSpan(planned), metadata));
  // Written to a temporary file beside `path`, renamed over it at the end.
  STRATA_ASSIGN_OR_RETURN(OutputFile out,
                          OutputFile::Create(path, "WriteSafetensors"));
  STRATA_RETURN_IF_ERROR(out.Write(header));
  WriteControl control;
  WriteState state{&control, {}};
  STRATA_RETURN_IF_ERROR(
      WriteSafetensorsTensors(absl::MakeSpan(planned), out,
                              static_cast<int64_t>(header.size()), state));
  return out.Commit();
}

}  // namespace

absl::StatusOr<PlannedTensor> PlanSafetensorsTensor(TensorToWrite& tensor) {
  const std::string& name = tensor.name;
  PlannedTensor p;
  p.source = &tensor;
  if (tensor.dtype == nullptr) return WriteError(name, "no dtype");
  const DType& dtype = *tensor.dtype;
  const std::vector<int64_t>& shape = tensor.shape;
  int64_t values = 1;
  for (int64_t e : shape) {
    if (e < 0 || !CheckedMul(values, e, &values)) {
      return WriteError(
          name, absl::StrCat("shape ", ShapeText(shape), " has no size"));
    }
  }
  if (const SimpleDType* simple = dtype.AsSimple()) {
    p.dtype = simple;
    if (ToSafetensorsName(*simple).empty()) {
      return WriteError(name, absl::StrCat("dtype ", dtype.name(),
                                           " has no safetensors dtype"));
    }
    STRATA_ASSIGN_OR_RETURN(const int64_t bytes, StorageBytes(*simple, values));
    p.entries.push_back(
        {name, std::string(ToSafetensorsName(*simple)), shape, bytes});
    return p;
  }
  if (auto specs = checkpoint_internal::ConventionSpecs(name, dtype, shape)) {
    if (!specs->ok()) return specs->status();
    p.kind = PlannedTensor::Kind::kConvention;
    for (auto& m : **specs) {
      p.entries.push_back({std::move(m.name), std::string(m.dtype),
                           std::move(m.shape), m.bytes});
    }
    return p;
  }
  if (&dtype != dtypes::MXFP4()) {
    const CompoundDType* compound = dtype.AsCompound();
    const size_t levels =
        compound != nullptr ? compound->simple_types().size() : 0;
    return WriteError(
        name, absl::StrCat("a ", levels, "-level Tensor of ", dtype.name(),
                           " has no safetensors form (mxfp4 "
                           "writes as a .blocks/.scales pair, "
                           "the formats of a checkpoint "
                           "convention as its members)"));
  }
  if (shape.empty() || shape.back() % 32 != 0) {
    return WriteError(
        name, absl::StrCat("an mxfp4 Tensor of shape ", ShapeText(shape),
                           " is not blocked along its last dim "
                           "(its extent is not a multiple of "
                           "32)"));
  }
  p.kind = PlannedTensor::Kind::kPair;
  std::vector<int64_t> scale_shape = shape;
  scale_shape.back() /= 32;
  std::vector<int64_t> block_shape = scale_shape;
  block_shape.push_back(16);
  p.entries.push_back({name + ".blocks", "U8", block_shape, values / 2});
  p.entries.push_back({name + ".scales", "U8", scale_shape, values / 32});
  return p;
}

absl::StatusOr<std::string> SafetensorsHeader(
    absl::Span<PlannedTensor> tensors,
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
  for (const PlannedTensor& p : tensors) {
    for (const PlannedEntry& e : p.entries) {
      STRATA_RETURN_IF_ERROR(claim(e.name));
    }
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
  // NOTE [ Aligned safetensors data ]: offsets by element size, widest
  // first, stable.
  const auto width = [](const std::string& dtype) {
    if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
    if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
    if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") {
      return 2;
    }
    return 1;
  };
  int64_t at = 0;
  for (int w : {8, 4, 2, 1}) {
    for (PlannedTensor& p : tensors) {
      for (PlannedEntry& e : p.entries) {
        if (width(e.dtype) != w) continue;
        e.offset = at;
        if (!CheckedAdd(at, e.bytes, &at)) {
          return WriteError(e.name, "the file's bytes overflow int64");
        }
      }
    }
  }
  for (const PlannedTensor& p : tensors) {
    for (const PlannedEntry& e : p.entries) {
      Json info = Json::object();
      info["dtype"] = e.dtype;
      info["shape"] = ShapeJson(e.shape);
      info["data_offsets"] = Json::array({e.offset, e.offset + e.bytes});
      member(e.name, info);
    }
  }
  header.push_back('}');
  header.append((8 - header.size() % 8) % 8, ' ');
  return SafetensorsLengthPrefix(header.size()) + header;
}

absl::Status WriteSafetensorsTensors(absl::Span<PlannedTensor> tensors,
                                     OutputFile& out, int64_t data_start,
                                     WriteState& state) {
  // Each entry's bytes at its offset, in pieces as they come.
  int64_t at = 0;
  const std::function<absl::Status(absl::string_view)> sink =
      [&](absl::string_view bytes) -> absl::Status {
    STRATA_RETURN_IF_ERROR(out.WriteAt(at, bytes));
    at += static_cast<int64_t>(bytes.size());
    return state.Advance(static_cast<int64_t>(bytes.size()));
  };
  const auto entry_at = [&](const PlannedEntry& e) {
    at = data_start + e.offset;
  };
  for (PlannedTensor& p : tensors) {
    TensorToWrite& source = *p.source;
    STRATA_RETURN_IF_ERROR(CheckCancel(
        state.control != nullptr ? state.control->cancel : nullptr, "write"));
    if (source.stream && p.kind == PlannedTensor::Kind::kOneLevel) {
      entry_at(p.entries[0]);
      const int64_t begin = at;
      STRATA_RETURN_IF_ERROR(source.stream(sink));
      if (at - begin != p.entries[0].bytes) {
        return absl::InternalError(absl::StrCat(
            "WriteSafetensors: tensor ", Quoted(source.name), " streamed ",
            at - begin, " bytes of the ", p.entries[0].bytes, " planned"));
      }
      ++state.progress.tensors_done;
      if (source.written) source.written();
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(const Tensor t,
                            MakePlanned(source, "WriteSafetensors"));
    switch (p.kind) {
      case PlannedTensor::Kind::kOneLevel:
        entry_at(p.entries[0]);
        STRATA_RETURN_IF_ERROR(WriteOneLevelRowMajor(t, sink));
        break;
      case PlannedTensor::Kind::kPair: {
        std::string blocks, scales;
        STRATA_RETURN_IF_ERROR(PairBytes(source.name, t, p.entries[0].bytes,
                                         p.entries[1].bytes, &blocks, &scales));
        entry_at(p.entries[0]);
        STRATA_RETURN_IF_ERROR(sink(blocks));
        entry_at(p.entries[1]);
        STRATA_RETURN_IF_ERROR(sink(scales));
        break;
      }
      case PlannedTensor::Kind::kConvention: {
        auto members = checkpoint_internal::ConventionMembers(source.name, t);
        STRATA_RETURN_IF_ERROR(members->status());
        for (size_t i = 0; i < (*members)->size(); ++i) {
          const auto& m = (**members)[i];
          if (i >= p.entries.size() ||
              static_cast<int64_t>(m.bytes.size()) != p.entries[i].bytes) {
            return absl::InternalError(absl::StrCat(
                "WriteSafetensors: tensor ", Quoted(source.name), ": member ",
                Quoted(m.name), " differs from its plan"));
          }
          entry_at(p.entries[i]);
          STRATA_RETURN_IF_ERROR(sink(m.bytes));
        }
        break;
      }
    }
    ++state.progress.tensors_done;
    if (source.written) source.written();
  }
  return absl::OkStatus();
}

}  // namespace checkpoint_internal

absl::Status WriteSafetensors(
    const std::string& path,
    absl::Span<const std::pair<std::string, Tensor>> tensors,
    absl::Span<const std::pair<std::string, std::string>> metadata) {
  STRATA_ASSIGN_OR_RETURN(const std::string target,
                          checkpoint_internal::WriteTarget(path));
  // A convention's members and an mxfp4 pair are built in memory before they
  // are written; a view may ask for more than there is. The standard library
  // says so by throwing, which stops as the error it is: here while planning
  // (no file yet), in WriteSafetensorsTo while writing (which closes and
  // removes its temporary file).
  try {
    return checkpoint_internal::WriteSafetensorsTo(target, tensors, metadata);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedErrorCat(
        "WriteSafetensors: ", checkpoint_internal::Quoted(path),
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
