#include "checkpoint/gguf.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/internal/names.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

using checkpoint_internal::Quoted;
using checkpoint_internal::ShapeText;

constexpr char kNotGguf[] = "ReadGguf: not a GGUF file: ";
constexpr int kMaxDims = 4;

}  // namespace

int GgufScalarBytes(GgufType t) {
  switch (t) {
    case GgufType::kUInt8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUInt16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUInt32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUInt64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

namespace {

bool KnownType(uint32_t t) { return t <= 12; }

// One bounds-checked cursor over the mapped bytes (style.md 18): every read
// checks what remains first; the first violation is the file's error, with
// its byte offset.
class Cursor {
 public:
  Cursor(const uint8_t* bytes, int64_t size) : bytes_(bytes), size_(size) {}
  int64_t at() const { return at_; }
  int64_t remaining() const { return size_ - at_; }

  absl::Status Error(absl::string_view what) const {
    return ValueErrorCat(kNotGguf, what, " (at byte ", at_, " of ", size_, ")");
  }
  template <typename T>
  absl::Status Read(T* out, absl::string_view what) {
    if (remaining() < static_cast<int64_t>(sizeof(T))) {
      return Error(absl::StrCat(what, " runs past the end of the file"));
    }
    std::memcpy(out, bytes_ + at_, sizeof(T));  // Little-endian hosts.
    at_ += sizeof(T);
    return absl::OkStatus();
  }
  absl::Status ReadString(std::string* out, absl::string_view what) {
    uint64_t length;
    STRATA_RETURN_IF_ERROR(Read(&length, what));
    if (length > static_cast<uint64_t>(remaining())) {
      return Error(absl::StrCat(what, " of ", length,
                                " bytes runs past the end of the file (",
                                remaining(), " remain)"));
    }
    out->assign(reinterpret_cast<const char*>(bytes_ + at_), length);
    at_ += static_cast<int64_t>(length);
    return absl::OkStatus();
  }
  // n bytes as they stand.
  absl::Status ReadBytes(int64_t n, std::string* out, absl::string_view what) {
    if (n > remaining()) {
      return Error(absl::StrCat(what, " of ", n,
                                " bytes runs past the end of the file"));
    }
    out->assign(reinterpret_cast<const char*>(bytes_ + at_), n);
    at_ += n;
    return absl::OkStatus();
  }
  void Skip(int64_t n) { at_ += n; }
  // Strings and arrays held in metadata arrays, each a GgufValue of about 120
  // bytes for as few as 8 bytes of file: a budget for the whole file keeps an
  // array of 10^7 empty strings (80 MB) from taking 2 GB.
  absl::Status ClaimItems(uint64_t count, const std::string& key) {
    if (count > static_cast<uint64_t>(items_left_)) {
      return Error(absl::StrCat(
          "an array of ", Quoted(key), " holds ", count,
          " strings or arrays, past the file's budget of ",
          kMaxGgufMetadataItems, " (kMaxGgufMetadataItems) in all"));
    }
    items_left_ -= static_cast<int64_t>(count);
    return absl::OkStatus();
  }

 private:
  int64_t items_left_ = kMaxGgufMetadataItems;
  const uint8_t* bytes_;
  int64_t size_;
  int64_t at_ = 0;
};

absl::Status ReadValue(Cursor& c, GgufType type, int depth,
                       const std::string& key, GgufValue* out) {
  out->type = type;
  if (type == GgufType::kString) return c.ReadString(&out->text, "a string");
  if (type != GgufType::kArray) {
    const int n = GgufScalarBytes(type);
    if (c.remaining() < n) {
      return c.Error(absl::StrCat("the value of ", Quoted(key),
                                  " runs past the end of the file"));
    }
    uint64_t bits = 0;
    std::string raw;
    STRATA_RETURN_IF_ERROR(c.ReadBytes(n, &raw, "a value"));
    std::memcpy(&bits, raw.data(), n);
    out->bits = bits;
    return absl::OkStatus();
  }
  if (depth >= kMaxGgufDepth) {
    return c.Error(absl::StrCat("the value of ", Quoted(key),
                                " nests arrays deeper than ", kMaxGgufDepth));
  }
  uint32_t element;
  STRATA_RETURN_IF_ERROR(c.Read(&element, "an array's element type"));
  if (!KnownType(element)) {
    return c.Error(absl::StrCat("an array of ", Quoted(key),
                                " has the unknown element type ", element));
  }
  out->element_type = static_cast<GgufType>(element);
  STRATA_RETURN_IF_ERROR(c.Read(&out->count, "an array's count"));
  const int scalar = GgufScalarBytes(out->element_type);
  // The least bytes one element takes: what bounds the count.
  const int64_t least = scalar > 0                               ? scalar
                        : out->element_type == GgufType::kString ? 8
                                                                 : 12;
  if (out->count > static_cast<uint64_t>(c.remaining() / least)) {
    return c.Error(absl::StrCat("an array of ", Quoted(key), " counts ",
                                out->count, " elements of at least ", least,
                                " bytes; ", c.remaining(), " bytes remain"));
  }
  if (scalar > 0) {
    return c.ReadBytes(static_cast<int64_t>(out->count) * scalar, &out->raw,
                       "an array");
  }
  STRATA_RETURN_IF_ERROR(c.ClaimItems(out->count, key));
  out->items.reserve(out->count);
  for (uint64_t i = 0; i < out->count; ++i) {
    out->items.emplace_back();
    STRATA_RETURN_IF_ERROR(
        ReadValue(c, out->element_type, depth + 1, key, &out->items.back()));
  }
  return absl::OkStatus();
}

// A ggml tensor type Strata reads: how many values a block holds and its
// bytes; the Tensor's dtype.
struct GgmlType {
  uint32_t id;
  const char* name;
  int64_t block_values;  // 1 for plain types.
  int64_t block_bytes;
};

constexpr GgmlType kReadTypes[] = {
    {0, "F32", 1, 4},    {1, "F16", 1, 2},      {2, "Q4_0", 32, 18},
    {8, "Q8_0", 32, 34}, {24, "I8", 1, 1},      {25, "I16", 1, 2},
    {26, "I32", 1, 4},   {27, "I64", 1, 8},     {28, "F64", 1, 8},
    {30, "BF16", 1, 2},  {39, "MXFP4", 32, 17},
};

// Names of the ggml types Strata does not read, for messages.
const char* OtherTypeName(uint32_t id) {
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {3, "Q4_1"},     {6, "Q5_0"},    {7, "Q5_1"},     {9, "Q8_1"},
      {10, "Q2_K"},    {11, "Q3_K"},   {12, "Q4_K"},    {13, "Q5_K"},
      {14, "Q6_K"},    {15, "Q8_K"},   {16, "IQ2_XXS"}, {17, "IQ2_XS"},
      {18, "IQ3_XXS"}, {19, "IQ1_S"},  {20, "IQ4_NL"},  {21, "IQ3_S"},
      {22, "IQ2_S"},   {23, "IQ4_XS"}, {29, "IQ1_M"},   {34, "TQ1_0"},
      {35, "TQ2_0"}};
  for (const auto& [n, name] : kNames) {
    if (n == id) return name;
  }
  return nullptr;
}

const GgmlType* FindType(uint32_t id) {
  for (const GgmlType& t : kReadTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

const SimpleDType* PlainDType(uint32_t id) {
  switch (id) {
    case 0:
      return dtypes::Float32();
    case 1:
      return dtypes::Float16();
    case 24:
      return dtypes::Int8();
    case 25:
      return dtypes::Int16();
    case 26:
      return dtypes::Int32();
    case 27:
      return dtypes::Int64();
    case 28:
      return dtypes::Float64();
    case 30:
      return dtypes::BFloat16();
  }
  return nullptr;
}

// One tensor info, checked on its own.
struct Info {
  std::string name;
  std::vector<uint64_t> dims;  // Innermost first.
  uint32_t type = 0;
  uint64_t offset = 0;
  const GgmlType* ggml = nullptr;
  absl::Status status;         // A per-tensor error.
  std::vector<int64_t> shape;  // Logical: dims reversed.
  int64_t bytes = -1;          // -1 where unknown (a per-tensor error).
};

absl::Status TensorError(const Info& t, absl::string_view message) {
  return ValueErrorCat("ReadGguf: tensor ", Quoted(t.name), ": ", message);
}

// The per-tensor checks: dims, type, byte count.
absl::Status CheckInfo(Info& t) {
  if (t.dims.size() > kMaxDims) {
    return TensorError(t,
                       absl::StrCat("n_dims is ", t.dims.size(),
                                    "; GGUF tensors have at most ", kMaxDims));
  }
  t.ggml = FindType(t.type);
  if (t.ggml == nullptr) {
    const char* name = OtherTypeName(t.type);
    return TensorError(
        t, absl::StrCat("ggml type ", name ? name : "", name ? " (" : "",
                        t.type, name ? ")" : "",
                        " is not one Strata reads (F32, F16, Q4_0, Q8_0, I8, "
                        "I16, I32, I64, F64, BF16, MXFP4)"));
  }
  int64_t count = 1;
  for (auto it = t.dims.rbegin(); it != t.dims.rend(); ++it) {
    if (*it > static_cast<uint64_t>(INT64_MAX)) {
      return TensorError(t, absl::StrCat("dim ", *it, " overflows int64"));
    }
    t.shape.push_back(static_cast<int64_t>(*it));
  }
  for (int64_t e : t.shape) {
    if (!CheckedMul(count, e, &count)) {
      return TensorError(t, absl::StrCat("dims ", ShapeText(t.shape),
                                         " hold more values than int64"));
    }
  }
  const int64_t block = t.ggml->block_values;
  if (block > 1) {
    if (t.shape.empty()) {
      return TensorError(
          t, absl::StrCat(t.ggml->name, " blocks need at least one dim"));
    }
    if (t.shape.back() % block != 0) {
      return TensorError(
          t, absl::StrCat(t.ggml->name, " blocks hold ", block,
                          " values of the innermost dim; it is ",
                          t.shape.back(), " (dims ", ShapeText(t.shape), ")"));
    }
  }
  if (!CheckedMul(count / block, t.ggml->block_bytes, &t.bytes)) {
    t.bytes = -1;
    return TensorError(
        t, absl::StrCat("dims ", ShapeText(t.shape), " of ", t.ggml->name,
                        " need more bytes than int64 holds"));
  }
  if (block > 1) {
    // The blocks' layouts must fit too, an empty Tensor's included: each
    // leading mode's stride, a row of blocks in nibbles (twice its bytes)
    // times the modes inside it, as BuildBlocks forms them.
    int64_t row_units, rows = 1, stride;
    bool fits =
        CheckedMul(t.shape.back() / block, t.ggml->block_bytes * 2, &row_units);
    for (size_t j = t.shape.size() - 1; fits && j-- > 0;) {
      fits = CheckedMul(rows, row_units, &stride) &&
             CheckedMul(rows, t.shape[j], &rows);
    }
    if (!fits) {
      t.bytes = -1;
      return TensorError(
          t, absl::StrCat("dims ", ShapeText(t.shape), " of ", t.ggml->name,
                          " give row strides past int64"));
    }
  }
  return absl::OkStatus();
}

// A plain type: a compact row-major Tensor.
absl::StatusOr<Tensor> BuildPlain(
    const Info& t, int64_t byte, const std::shared_ptr<const MappedRegion>& r) {
  const SimpleDType* dtype = PlainDType(t.type);
  STRATA_ASSIGN_OR_RETURN(Layout layout,
                          Layout::RowMajor(IntTuple::Flat(t.shape)));
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<MappedCarrier> carrier,
      MappedCarrier::Create(*dtype, layout.size(), r, byte));
  return Tensor::Create(std::move(carrier), 0, std::move(layout));
}

// A block type (NOTE [ GGUF blocks as strided placements ]).
absl::StatusOr<Tensor> BuildBlocks(
    const Info& t, int64_t byte, const std::shared_ptr<const MappedRegion>& r) {
  const bool q8 = t.type == 8, mx = t.type == 39;
  const CompoundDType* dtype =
      q8 ? dtypes::Q8_0() : (mx ? dtypes::MXFP4() : dtypes::Q4_0());
  const SimpleDType* value_dtype = dtype->simple_types()[0];
  const SimpleDType* scale_dtype = dtype->simple_types()[1];
  const int64_t block_bytes = t.ggml->block_bytes;
  const int64_t per_byte = q8 ? 1 : 2;     // Values per byte.
  const int64_t scale_width = mx ? 1 : 2;  // Bytes per scale.
  const int64_t qs = mx ? 1 : 2;           // Byte of qs[0].
  const int64_t rank = static_cast<int64_t>(t.shape.size());
  const int64_t nb = t.shape.back() / 32;
  // Row strides (in values and in scales) of each leading mode.
  std::vector<int64_t> value_row(rank), scale_row(rank), weight(rank);
  int64_t rows = 1;
  for (int64_t j = rank - 1; j-- > 0;) {
    // Fits: CheckInfo checked these products, an empty Tensor's too.
    value_row[j] = rows * nb * block_bytes * per_byte;
    scale_row[j] = rows * nb * (block_bytes / scale_width);
    rows *= t.shape[j];
  }
  // L_1's shape (leading..., nb) read colexicographically: S_0's weights.
  int64_t w = 1;
  for (int64_t j = 0; j < rank; ++j) {
    weight[j] = w;
    if (!CheckedMul(w, j + 1 < rank ? t.shape[j] : nb, &w)) w = 0;
  }
  std::vector<IntTuple> shape, l0_stride, s0_stride, l1_shape, l1_stride;
  for (int64_t j = 0; j + 1 < rank; ++j) {
    shape.push_back(t.shape[j]);
    l0_stride.push_back(value_row[j]);
    s0_stride.push_back(weight[j]);
    l1_shape.push_back(t.shape[j]);
    l1_stride.push_back(scale_row[j]);
  }
  const int64_t block_units = block_bytes * per_byte;
  if (q8) {
    shape.push_back(IntTuple::Tuple({32, nb}));
    l0_stride.push_back(IntTuple::Tuple({1, block_units}));
    s0_stride.push_back(IntTuple::Tuple({0, weight[rank - 1]}));
  } else {
    shape.push_back(IntTuple::Tuple({IntTuple::Tuple({16, 2}), nb}));
    l0_stride.push_back(
        IntTuple::Tuple({IntTuple::Tuple({2, 1}), block_units}));
    s0_stride.push_back(
        IntTuple::Tuple({IntTuple::Tuple({0, 0}), weight[rank - 1]}));
  }
  l1_shape.push_back(nb);
  l1_stride.push_back(block_bytes / scale_width);
  const IntTuple value_shape = IntTuple::Tuple(shape);
  STRATA_ASSIGN_OR_RETURN(
      Layout l0, Layout::Create(value_shape, IntTuple::Tuple(l0_stride)));
  STRATA_ASSIGN_OR_RETURN(
      Layout s0, Layout::Create(value_shape, IntTuple::Tuple(s0_stride)));
  STRATA_ASSIGN_OR_RETURN(
      Layout l1,
      Layout::Create(IntTuple::Tuple(l1_shape), IntTuple::Tuple(l1_stride)));
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<MappedCarrier> values,
      MappedCarrier::Create(*value_dtype, t.bytes * per_byte, r, byte));
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<MappedCarrier> scales,
      MappedCarrier::Create(*scale_dtype, t.bytes / scale_width, r, byte));
  std::vector<SubtensorCandidate> subtensors;
  // An empty Tensor's placement reaches nothing: it starts at the carrier's
  // start, as an empty plain Tensor's does (qs[0] would lie past its end).
  const int64_t value_offset = t.bytes == 0 ? 0 : qs * per_byte;
  subtensors.push_back({value_dtype, std::move(values), value_offset, l0});
  subtensors.push_back({scale_dtype, std::move(scales), 0, std::move(l1)});
  std::vector<absl::StatusOr<Layout>> adjacent;
  adjacent.push_back(std::move(s0));
  STRATA_ASSIGN_OR_RETURN(auto rep,
                          Representation::Create(dtype, std::move(subtensors),
                                                 std::move(adjacent)));
  return MakeTensor(std::move(rep));
}

}  // namespace

const char* GgufTypeName(GgufType type) {
  static constexpr const char* kNames[] = {
      "UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32",  "FLOAT32",
      "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64",  "FLOAT64"};
  const uint32_t t = static_cast<uint32_t>(type);
  return t <= 12 ? kNames[t] : "?";
}

int64_t GgufValue::AsInt64() const {
  switch (type) {
    case GgufType::kInt8:
      return static_cast<int8_t>(bits);
    case GgufType::kInt16:
      return static_cast<int16_t>(bits);
    case GgufType::kInt32:
      return static_cast<int32_t>(bits);
    case GgufType::kInt64:
      return static_cast<int64_t>(bits);
    case GgufType::kBool:
      return (bits & 0xFF) != 0;
    case GgufType::kFloat32:
    case GgufType::kFloat64:
      return static_cast<int64_t>(AsDouble());
    default:
      return static_cast<int64_t>(bits);
  }
}

uint64_t GgufValue::AsUInt64() const {
  return static_cast<uint64_t>(AsInt64());
}

double GgufValue::AsDouble() const {
  if (type == GgufType::kFloat32) {
    float f;
    const uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&f, &b, 4);
    return f;
  }
  if (type == GgufType::kFloat64) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  if (type == GgufType::kUInt64) return static_cast<double>(bits);
  return static_cast<double>(AsInt64());
}

GgufValue GgufValue::Element(uint64_t i) const {
  GgufValue v;
  v.type = element_type;
  const int n = GgufScalarBytes(element_type);
  if (type == GgufType::kArray && n > 0 && i < count) {
    std::memcpy(&v.bits, raw.data() + i * n, n);
  }
  return v;
}

std::string GgufValue::ToString() const {
  switch (type) {
    case GgufType::kString: {
      // \" and \\ escaped, control bytes as \xHH, the rest as it stands.
      std::string out = "\"";
      for (const char ch : text) {
        const unsigned char u = static_cast<unsigned char>(ch);
        if (ch == '"' || ch == '\\') {
          out += '\\';
          out += ch;
        } else if (u < 0x20 || u == 0x7F) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", u);
          out += hex;
        } else {
          out += ch;
        }
      }
      return out + "\"";
    }
    case GgufType::kArray: {
      std::vector<std::string> parts;
      if (!items.empty() || GgufScalarBytes(element_type) == 0) {
        for (const GgufValue& item : items) parts.push_back(item.ToString());
      } else {
        for (uint64_t i = 0; i < count; ++i) {
          parts.push_back(Element(i).ToString());
        }
      }
      return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
    }
    case GgufType::kBool:
      return (bits & 0xFF) != 0 ? "true" : "false";
    case GgufType::kFloat32:
    case GgufType::kFloat64: {
      // The shortest text that reads back as the same value.
      const double d = AsDouble();
      for (int digits = 1; digits <= 17; ++digits) {
        char buffer[40];
        std::snprintf(buffer, sizeof buffer, "%.*g", digits, d);
        const double back = std::strtod(buffer, nullptr);
        if (type == GgufType::kFloat32
                ? static_cast<float>(back) == static_cast<float>(d)
                : back == d) {
          return buffer;
        }
      }
      return absl::StrCat(d);
    }
    case GgufType::kUInt8:
    case GgufType::kUInt16:
    case GgufType::kUInt32:
    case GgufType::kUInt64:
      return absl::StrCat(bits);
    default:
      return absl::StrCat(AsInt64());
  }
}

bool IsGgufMagic(absl::string_view prefix) {
  return prefix.size() >= 4 && prefix.substr(0, 4) == "GGUF";
}

absl::StatusOr<Gguf> ReadGguf(const std::string& path) {
  return checkpoint_internal::WithOpenFile(
      "ReadGguf", path, [&](int fd) { return ReadGgufFd(fd, path); });
}

absl::StatusOr<Gguf> ReadGgufFd(int fd, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(
      const int64_t file_size,
      checkpoint_internal::RegularFileSize(fd, "ReadGguf", path));
  // The whole file, mapped once: the header is read through it, the data
  // section stays untouched until a value is read.
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const MappedRegion> region,
                          MappedRegion::MapFd(fd, path, 0, file_size));
  Cursor c(region->data(), file_size);
  Gguf out;
  if (file_size < 4 || !IsGgufMagic(absl::string_view(
                           reinterpret_cast<const char*>(region->data()), 4))) {
    return c.Error("the file does not begin with the magic \"GGUF\"");
  }
  c.Skip(4);
  STRATA_RETURN_IF_ERROR(c.Read(&out.version, "the version"));
  if (out.version != 2 && out.version != 3) {
    return c.Error(absl::StrCat("version ", out.version,
                                " is not one Strata reads (2 or 3)"));
  }
  uint64_t tensor_count, metadata_count;
  STRATA_RETURN_IF_ERROR(c.Read(&tensor_count, "the tensor count"));
  STRATA_RETURN_IF_ERROR(c.Read(&metadata_count, "the metadata count"));
  // A key/value takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 4 + 8.
  if (metadata_count > static_cast<uint64_t>(c.remaining() / 13)) {
    return c.Error(absl::StrCat("the metadata count ", metadata_count,
                                " needs at least 13 bytes each; ",
                                c.remaining(), " bytes remain"));
  }
  if (tensor_count > static_cast<uint64_t>(c.remaining() / 24)) {
    return c.Error(absl::StrCat("the tensor count ", tensor_count,
                                " needs at least 24 bytes each; ",
                                c.remaining(), " bytes remain"));
  }
  absl::flat_hash_set<std::string> keys;
  for (uint64_t k = 0; k < metadata_count; ++k) {
    std::string key;
    STRATA_RETURN_IF_ERROR(c.ReadString(&key, "a metadata key"));
    if (!keys.insert(key).second) {
      return c.Error(
          absl::StrCat("the metadata key ", Quoted(key), " appears twice"));
    }
    uint32_t type;
    STRATA_RETURN_IF_ERROR(c.Read(&type, "a metadata value type"));
    if (!KnownType(type)) {
      return c.Error(absl::StrCat("the metadata value ", Quoted(key),
                                  " has the unknown type ", type));
    }
    GgufValue value;
    STRATA_RETURN_IF_ERROR(
        ReadValue(c, static_cast<GgufType>(type), 0, key, &value));
    if (key == "general.alignment") {
      const uint64_t a = value.bits;
      if (value.type != GgufType::kUInt32 || a == 0 || (a & (a - 1)) != 0) {
        return c.Error(absl::StrCat(
            "general.alignment must be a UINT32 power of two; it is ",
            GgufTypeName(value.type), " ", value.ToString()));
      }
      out.alignment = static_cast<int64_t>(a);
    }
    out.metadata.emplace_back(std::move(key), std::move(value));
  }
  std::vector<Info> infos;
  absl::flat_hash_set<std::string> names;
  for (uint64_t k = 0; k < tensor_count; ++k) {
    Info t;
    STRATA_RETURN_IF_ERROR(c.ReadString(&t.name, "a tensor name"));
    if (!names.insert(t.name).second) {
      return c.Error(
          absl::StrCat("the tensor name ", Quoted(t.name), " appears twice"));
    }
    uint32_t n_dims;
    STRATA_RETURN_IF_ERROR(c.Read(&n_dims, "n_dims"));
    if (n_dims > static_cast<uint64_t>(c.remaining() / 8)) {
      return c.Error(absl::StrCat("tensor ", Quoted(t.name), " has n_dims ",
                                  n_dims, " of 8 bytes each; ", c.remaining(),
                                  " bytes remain"));
    }
    t.dims.resize(n_dims);
    for (uint64_t& d : t.dims) STRATA_RETURN_IF_ERROR(c.Read(&d, "a dim"));
    STRATA_RETURN_IF_ERROR(c.Read(&t.type, "a tensor type"));
    STRATA_RETURN_IF_ERROR(c.Read(&t.offset, "a tensor offset"));
    t.status = CheckInfo(t);
    infos.push_back(std::move(t));
  }
  // The data section: after the infos, aligned.
  const int64_t end_of_infos = c.at();
  out.data_offset = CeilDiv(end_of_infos, out.alignment) * out.alignment;
  const int64_t data_bytes = std::max<int64_t>(0, file_size - out.data_offset);
  if (!infos.empty() && out.data_offset > file_size) {
    return c.Error(absl::StrCat("the data section would begin at byte ",
                                out.data_offset, ", past the end of the file"));
  }
  // Offsets: aligned, inside the data section, no overlap.
  std::vector<std::pair<uint64_t, int64_t>> extents;  // (offset, info).
  for (size_t k = 0; k < infos.size(); ++k) {
    const Info& t = infos[k];
    if (t.offset % static_cast<uint64_t>(out.alignment) != 0) {
      return c.Error(
          absl::StrCat("tensor ", Quoted(t.name), " has offset ", t.offset,
                       ", not a multiple of the alignment ", out.alignment));
    }
    if (t.bytes < 0) continue;  // Its size is unknown: its own error.
    if (t.offset > static_cast<uint64_t>(data_bytes) ||
        t.bytes > data_bytes - static_cast<int64_t>(t.offset)) {
      return c.Error(absl::StrCat("tensor ", Quoted(t.name), "'s ", t.bytes,
                                  " bytes at offset ", t.offset,
                                  " lie outside the data section of ",
                                  data_bytes, " bytes (a truncated file?)"));
    }
    if (t.bytes > 0) extents.emplace_back(t.offset, static_cast<int64_t>(k));
  }
  std::sort(extents.begin(), extents.end());
  for (size_t k = 1; k < extents.size(); ++k) {
    const Info& a = infos[extents[k - 1].second];
    const Info& b = infos[extents[k].second];
    if (static_cast<int64_t>(a.offset) + a.bytes >
        static_cast<int64_t>(b.offset)) {
      return c.Error(absl::StrCat("tensors ", Quoted(a.name), " and ",
                                  Quoted(b.name), " overlap"));
    }
  }
  for (Info& t : infos) {
    GgufTensor entry;
    entry.name = t.name;
    const char* other = OtherTypeName(t.type);
    entry.ggml_type = t.ggml != nullptr  ? t.ggml->name
                      : other != nullptr ? other
                                         : absl::StrCat("type ", t.type);
    if (!t.status.ok()) {
      entry.tensor = t.status;
    } else {
      const int64_t byte = out.data_offset + static_cast<int64_t>(t.offset);
      entry.tensor = t.ggml->block_values > 1 ? BuildBlocks(t, byte, region)
                                              : BuildPlain(t, byte, region);
      if (!entry.tensor.ok()) {
        entry.tensor = TensorError(t, entry.tensor.status().message());
      }
    }
    out.tensors.push_back(std::move(entry));
  }
  return out;
}

}  // namespace strata
