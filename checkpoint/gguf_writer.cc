// WriteGguf (checkpoint/gguf.h, NOTE [ GGUF out ]).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "carrier/carrier.h"
#include "checkpoint/gguf.h"
#include "checkpoint/internal/atomic_files.h"
#include "checkpoint/internal/file_writing.h"
#include "checkpoint/internal/names.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/layout.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

using checkpoint_internal::OutputFile;
using checkpoint_internal::Quoted;
using checkpoint_internal::ShapeText;

constexpr char kWho[] = "WriteGguf";
constexpr int kMaxDims = 4;
constexpr int64_t kBlock = 32;

struct GgmlOut {
  const DType* dtype;
  uint32_t id;
  int64_t block_bytes;  // Per 32 values for block types; per value otherwise.
  int scale_bytes;      // Block types: 2 (float16) or 1 (e8m0); 0 plain.
};

const GgmlOut* FindOut(const DType& dtype) {
  static const GgmlOut kTypes[] = {
      {dtypes::Float32(), 0, 4, 0},   {dtypes::Float16(), 1, 2, 0},
      {dtypes::BFloat16(), 30, 2, 0}, {dtypes::Float64(), 28, 8, 0},
      {dtypes::Int8(), 24, 1, 0},     {dtypes::Int16(), 25, 2, 0},
      {dtypes::Int32(), 26, 4, 0},    {dtypes::Int64(), 27, 8, 0},
      {dtypes::Q8_0(), 8, 34, 2},     {dtypes::Q4_0(), 2, 18, 2},
      {dtypes::MXFP4(), 39, 17, 1},
  };
  for (const GgmlOut& t : kTypes) {
    if (t.dtype == &dtype) return &t;
  }
  return nullptr;
}

absl::Status TensorError(const std::string& name, absl::string_view message) {
  return ValueErrorCat(kWho, ": tensor ", Quoted(name), ": ", message);
}

void PutU32(std::string* out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out->push_back(static_cast<char>(v >> (8 * k)));
}
void PutU64(std::string* out, uint64_t v) {
  for (int k = 0; k < 8; ++k) out->push_back(static_cast<char>(v >> (8 * k)));
}
void PutString(std::string* out, absl::string_view s) {
  PutU64(out, s.size());
  out->append(s.data(), s.size());
}

// A value's bytes after its type (a key's value, or an array's element).
absl::Status PutValue(std::string* out, const GgufValue& v,
                      const std::string& key) {
  if (v.is_scalar()) {
    const int n = GgufScalarBytes(v.type);
    if (n == 0) {
      return ValueErrorCat(kWho, ": metadata ", Quoted(key), ": type ",
                           static_cast<uint32_t>(v.type), " is no GGUF type");
    }
    for (int k = 0; k < n; ++k)
      out->push_back(static_cast<char>(v.bits >> (8 * k)));
    return absl::OkStatus();
  }
  if (v.type == GgufType::kString) {
    PutString(out, v.text);
    return absl::OkStatus();
  }
  PutU32(out, static_cast<uint32_t>(v.element_type));
  PutU64(out, v.count);
  const int n = GgufScalarBytes(v.element_type);
  if (n > 0) {
    if (v.raw.size() != v.count * static_cast<uint64_t>(n)) {
      return ValueErrorCat(kWho, ": metadata ", Quoted(key), ": an array of ",
                           v.count, " ", GgufTypeName(v.element_type),
                           " holds ", v.raw.size(), " bytes");
    }
    out->append(v.raw);
    return absl::OkStatus();
  }
  if (v.items.size() != v.count) {
    return ValueErrorCat(kWho, ": metadata ", Quoted(key), ": an array of ",
                         v.count, " items holds ", v.items.size());
  }
  for (const GgufValue& item : v.items) {
    if (item.type != v.element_type) {
      return ValueErrorCat(kWho, ": metadata ", Quoted(key), ": an array of ",
                           GgufTypeName(v.element_type), " holds a ",
                           GgufTypeName(item.type));
    }
    STRATA_RETURN_IF_ERROR(PutValue(out, item, key));
  }
  return absl::OkStatus();
}

struct Planned {
  TensorToWrite* source;
  const GgmlOut* type;
  int64_t bytes = 0;
  uint64_t offset = 0;
};

absl::StatusOr<Planned> Plan(TensorToWrite& t) {
  const GgmlOut* type = t.dtype != nullptr ? FindOut(*t.dtype) : nullptr;
  if (type == nullptr) {
    return TensorError(
        t.name,
        absl::StrCat("dtype ",
                     t.dtype != nullptr ? t.dtype->name() : std::string("?"),
                     " has no GGUF type (GGUF holds float32, "
                     "float16, bfloat16, float64, int8..int64, "
                     "q8_0, q4_0, mxfp4)"));
  }
  const int64_t rank = static_cast<int64_t>(t.shape.size());
  if (rank > kMaxDims) {
    return TensorError(
        t.name,
        absl::StrCat("rank ", rank, " (shape ", ShapeText(t.shape),
                     "); GGUF tensors have at most ", kMaxDims, " dims"));
  }
  int64_t values = 1;
  for (int64_t e : t.shape) {
    if (e < 0 || !CheckedMul(values, e, &values)) {
      return TensorError(
          t.name, absl::StrCat("shape ", ShapeText(t.shape), " has no size"));
    }
  }
  Planned p{&t, type};
  if (type->scale_bytes > 0) {
    if (rank == 0 || t.shape.back() % kBlock != 0) {
      return TensorError(
          t.name,
          absl::StrCat(t.dtype->name(), " of shape ", ShapeText(t.shape),
                       ": ggml blocks 32 values of the last dim, "
                       "which must be a multiple of 32"));
    }
    p.bytes = values / kBlock * type->block_bytes;
  } else if (!CheckedMul(values, type->block_bytes, &p.bytes)) {
    return TensorError(t.name, "its byte count overflows int64");
  }
  return p;
}

// The codes (row-major, packed as in memory) and the per-block scale bytes
// of a block Tensor; ValueError where 32 consecutive values of the last dim
// do not share one scale.
absl::Status BlockParts(const std::string& name, const Tensor& t,
                        const GgmlOut& type, std::string* codes,
                        std::string* scales) {
  const Representation& rep = TensorAccess::representation(t);
  const Subtensor& v = rep.subtensor(0);
  const Subtensor& s = rep.subtensor(1);
  const Layout& s0 = rep.adjacent_layouts()[0];
  const int bits = v.storage_dtype->bits();
  const int scale_bytes = type.scale_bytes;
  const int64_t values = t.size();
  const int64_t blocks = values / kBlock;
  const auto* vsrc = static_cast<const uint8_t*>(v.carrier->data());
  const auto* ssrc = static_cast<const uint8_t*>(s.carrier->data());
  codes->assign(static_cast<size_t>(values * bits / 8), '\0');
  scales->assign(static_cast<size_t>(blocks * scale_bytes), '\0');
  // Compact row-major codes and scales (a quantizer's output): as they are.
  const std::vector<int64_t> shape = t.shape();
  std::vector<int64_t> block_of_mode(shape.size(), 1);
  block_of_mode.back() = kBlock;
  absl::StatusOr<RowMajorBlockScaledLayouts> row_major =
      MakeRowMajorBlockScaledLayouts(shape, block_of_mode);
  if (row_major.ok() && v.placement == row_major->values &&
      s.placement == row_major->scales && s0 == row_major->adjacent &&
      (v.offset * bits) % 8 == 0) {
    if (!codes->empty()) {
      std::memcpy(codes->data(), vsrc + v.offset * bits / 8, codes->size());
    }
    if (!scales->empty()) {
      std::memcpy(scales->data(), ssrc + s.offset * scale_bytes,
                  scales->size());
    }
    return absl::OkStatus();
  }
  auto* cdst = reinterpret_cast<uint8_t*>(codes->data());
  int64_t block_scale = 0;
  absl::Status status;
  checkpoint_internal::ForEachRowMajor(
      TopLevelModes(v.placement), TopLevelModes(s0),
      [&](int64_t r, int64_t iv, int64_t is) {
        if (!status.ok()) return;
        if (bits == 8) {
          cdst[r] = vsrc[v.offset + iv];
        } else {
          WritePacked(cdst, bits, r, ReadPacked(vsrc, bits, v.offset + iv));
        }
        if (r % kBlock == 0) {
          block_scale = is;
          std::memcpy(scales->data() + r / kBlock * scale_bytes,
                      ssrc + (s.offset + s.placement(is)) * scale_bytes,
                      scale_bytes);
        } else if (is != block_scale) {
          status = TensorError(
              name,
              absl::StrCat(t.dtype().name(), " of shape ", ShapeText(shape),
                           " is not blocked by 32 along its last dim "
                           "(values ",
                           r - r % kBlock, " and ", r,
                           " in row-major order have different "
                           "scales), as ggml's blocks are"));
        }
      });
  return status;
}

// ggml's block structs from the codes and scales, written a chunk at a time.
absl::Status WriteBlocks(
    const GgmlOut& type, const std::string& codes, const std::string& scales,
    const std::function<absl::Status(absl::string_view)>& sink) {
  const int64_t blocks = static_cast<int64_t>(scales.size()) / type.scale_bytes;
  const int64_t per_chunk = (int64_t{4} << 20) / type.block_bytes;
  std::string chunk;
  const auto* c = reinterpret_cast<const uint8_t*>(codes.data());
  for (int64_t first = 0; first < blocks; first += per_chunk) {
    const int64_t n = std::min(per_chunk, blocks - first);
    chunk.resize(static_cast<size_t>(n * type.block_bytes));
    char* out = chunk.data();
    for (int64_t b = first; b < first + n; ++b) {
      std::memcpy(out, scales.data() + b * type.scale_bytes, type.scale_bytes);
      out += type.scale_bytes;
      if (type.dtype == dtypes::Q8_0()) {
        std::memcpy(out, codes.data() + b * kBlock, kBlock);
        out += kBlock;
        continue;
      }
      // 4-bit: element j in the low nibble of qs[j], element j + 16 in its
      // high nibble; in memory element 2i is the low nibble of byte i.
      const uint8_t* block = c + b * (kBlock / 2);
      for (int j = 0; j < 16; ++j) {
        const uint8_t lo = (block[j / 2] >> (4 * (j % 2))) & 0xF;
        const uint8_t hi = (block[(j + 16) / 2] >> (4 * (j % 2))) & 0xF;
        *out++ = static_cast<char>(lo | (hi << 4));
      }
    }
    STRATA_RETURN_IF_ERROR(sink(chunk));
  }
  return absl::OkStatus();
}

bool IsPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace

absl::Status CheckGgufForm(const std::string& name, const DType& dtype,
                           const std::vector<int64_t>& shape) {
  TensorToWrite t;
  t.name = name;
  t.dtype = &dtype;
  t.shape = shape;
  return Plan(t).status();
}

absl::Status WriteGguf(
    const std::string& path, std::vector<TensorToWrite> tensors,
    absl::Span<const std::pair<std::string, GgufValue>> metadata,
    const WriteControl& control) {
  uint64_t alignment = 32;
  absl::flat_hash_set<std::string> keys;
  std::string header("GGUF", 4);
  PutU32(&header, 3);
  PutU64(&header, tensors.size());
  PutU64(&header, metadata.size());
  for (const auto& [key, value] : metadata) {
    if (!keys.insert(key).second) {
      return ValueErrorCat(kWho, ": metadata ", Quoted(key), " is given twice");
    }
    if (key == "general.alignment") {
      if (value.type != GgufType::kUInt32 || !IsPowerOfTwo(value.bits)) {
        return ValueErrorCat(kWho,
                             ": general.alignment must be a UINT32 "
                             "power of two; it is ",
                             value.ToString(), " (", GgufTypeName(value.type),
                             ")");
      }
      alignment = value.bits;
    }
    PutString(&header, key);
    PutU32(&header, static_cast<uint32_t>(value.type));
    STRATA_RETURN_IF_ERROR(PutValue(&header, value, key));
  }
  std::vector<Planned> planned;
  absl::flat_hash_set<std::string> names;
  uint64_t at = 0;
  for (TensorToWrite& t : tensors) {
    if (!names.insert(t.name).second) {
      return TensorError(t.name, "the name is written twice");
    }
    STRATA_ASSIGN_OR_RETURN(Planned p, Plan(t));
    p.offset = at;
    at += (static_cast<uint64_t>(p.bytes) + alignment - 1) / alignment *
          alignment;
    PutString(&header, t.name);
    PutU32(&header, static_cast<uint32_t>(t.shape.size()));
    for (size_t j = t.shape.size(); j-- > 0;) PutU64(&header, t.shape[j]);
    PutU32(&header, p.type->id);
    PutU64(&header, p.offset);
    planned.push_back(p);
  }
  header.append((alignment - header.size() % alignment) % alignment, '\0');

  STRATA_ASSIGN_OR_RETURN(OutputFile out, OutputFile::Create(path, kWho));
  STRATA_RETURN_IF_ERROR(out.Write(header));
  checkpoint_internal::WriteState state{&control, {}};
  state.progress.tensors_total = static_cast<int64_t>(planned.size());
  for (const Planned& p : planned) state.progress.bytes_total += p.bytes;
  state.progress.file = path;
  const auto sink = [&](absl::string_view bytes) -> absl::Status {
    STRATA_RETURN_IF_ERROR(out.Write(bytes));
    return state.Advance(static_cast<int64_t>(bytes.size()));
  };
  const std::string zeros(alignment, '\0');
  for (const Planned& p : planned) {
    TensorToWrite& source = *p.source;
    STRATA_RETURN_IF_ERROR(
        checkpoint_internal::CheckCancel(control.cancel, kWho));
    const uint64_t pad = (alignment - p.bytes % alignment) % alignment;
    if (source.stream && p.type->scale_bytes == 0) {
      const int64_t begin = state.progress.bytes_done;
      STRATA_RETURN_IF_ERROR(source.stream(sink));
      if (state.progress.bytes_done - begin != p.bytes) {
        return absl::InternalError(
            absl::StrCat(kWho, ": tensor ", Quoted(source.name), " streamed ",
                         state.progress.bytes_done - begin, " bytes of the ",
                         p.bytes, " planned"));
      }
      STRATA_RETURN_IF_ERROR(out.Write(absl::string_view(zeros.data(), pad)));
      ++state.progress.tensors_done;
      if (source.written) source.written();
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(const Tensor t,
                            checkpoint_internal::MakePlanned(source, kWho));
    if (p.type->scale_bytes == 0) {
      STRATA_RETURN_IF_ERROR(
          checkpoint_internal::WriteOneLevelRowMajor(t, sink));
    } else {
      std::string codes, scales;
      STRATA_RETURN_IF_ERROR(
          BlockParts(source.name, t, *p.type, &codes, &scales));
      STRATA_RETURN_IF_ERROR(WriteBlocks(*p.type, codes, scales, sink));
    }
    STRATA_RETURN_IF_ERROR(out.Write(absl::string_view(zeros.data(), pad)));
    ++state.progress.tensors_done;
    if (source.written) source.written();
  }
  STRATA_RETURN_IF_ERROR(out.Commit());
  if (control.file_written) control.file_written(path);
  return absl::OkStatus();
}

}  // namespace strata
