#include "convert/convert.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/directory.h"
#include "checkpoint/gguf.h"
#include "checkpoint/safetensors.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dirent.h"
#include "dtype/block_scale_rule.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "nlohmann/json.hpp"
#include "ops/dequantize.h"
#include "ops/requantize.h"
#include "re2/re2.h"
#include "util/errors.h"
#include "util/status_macros.h"
#include "views/shard_plan.h"
#include "views/views.h"

namespace strata {
namespace {

constexpr char kWho[] = "strata convert";

// The bytes a conversion holds at once per step (NOTE [ Dequantizing in
// chunks ]).
constexpr int64_t kChunkBytes = int64_t{4} << 20;

std::string Quote(const std::string& s) { return absl::StrCat("\"", s, "\""); }

// The absolute, symlink-free form of `path`, also for a path that does not
// exist yet (its parent resolved, its name kept).
std::string Resolved(const std::string& path) {
  if (char* real = realpath(path.c_str(), nullptr)) {
    std::string out = real;
    std::free(real);
    return out;
  }
  const size_t slash = path.find_last_of('/');
  const std::string parent = slash == std::string::npos
                                 ? "."
                                 : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string name =
      slash == std::string::npos ? path : path.substr(slash + 1);
  if (char* real = realpath(parent.c_str(), nullptr)) {
    std::string out = absl::StrCat(real, "/", name);
    std::free(real);
    return out;
  }
  return path;
}

bool Inside(const std::string& path, const std::string& dir) {
  return path == dir || absl::StartsWith(path, absl::StrCat(dir, "/"));
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The source's directory (its other files, its shards) and whether it is a
// collection (a directory, an index or a split set) rather than one file.
std::string SourceDirectory(const std::string& src) {
  return IsDirectory(src) ? src : DirectoryOf(src);
}

// The byte of its file where a Tensor's level 0 begins (the reading order).
int64_t FirstByte(const Tensor& t) {
  const Subtensor& s = TensorAccess::representation(t).subtensor(0);
  const auto* mapped = dynamic_cast<const MappedCarrier*>(s.carrier.get());
  if (mapped == nullptr) return 0;
  return mapped->file_offset() + s.offset * s.storage_dtype->bits() / 8;
}

// Calls op(region, begin, length) for the mapped bytes each level of `t`
// reaches (of a view: from its first value to its last).
template <typename Op>
void ForEachMappedRange(const Tensor& t, const Op& op) {
  for (const Subtensor& s : TensorAccess::representation(t).subtensors()) {
    const auto* mapped = dynamic_cast<const MappedCarrier*>(s.carrier.get());
    if (mapped == nullptr || mapped->anonymous() ||
        mapped->region() == nullptr) {
      continue;
    }
    const MappedRegion& region = *mapped->region();
    const int bits = s.storage_dtype->bits();
    const int64_t carrier_begin =
        static_cast<const uint8_t*>(mapped->data()) - region.data();
    const int64_t first = carrier_begin + s.offset * bits / 8;
    const int64_t last =
        carrier_begin + ((s.offset + s.placement.cosize()) * bits + 7) / 8;
    op(region, first, std::max<int64_t>(last - first, 0));
  }
}

// Gives back the pages of what a conversion has read, so that it stops
// counting as resident (MappedRegion::DropPages).
void DropInputPages(const Tensor& t) {
  ForEachMappedRange(
      t, [](const MappedRegion& region, int64_t begin, int64_t length) {
        region.DropPages(begin, length);
      });
}

// Maps the pages it is about to read in one step (MappedRegion::Populate).
void PopulateInputPages(const Tensor& t) {
  ForEachMappedRange(t, [](const MappedRegion& region, int64_t begin,
                           int64_t length) { region.Populate(begin, length); });
}

// Whether `t` is one level of compact row-major values over a file's
// mapping, from a whole byte (what StreamCopy streams).
bool IsCompactMapped(const Tensor& t) {
  if (t.num_subtensors() != 1 || t.dtype().AsSimple() == nullptr) return false;
  const auto* mapped = dynamic_cast<const MappedCarrier*>(t.carrier().get());
  absl::StatusOr<Layout> row_major = Layout::RowMajor(t.layout().shape());
  return mapped != nullptr && !mapped->anonymous() &&
         mapped->region() != nullptr && row_major.ok() &&
         *row_major == t.layout() &&
         (t.offset() * t.dtype().AsSimple()->bits()) % 8 == 0;
}

// The bytes of such a Tensor handed to `sink` a chunk at a time, each
// chunk's pages given back once written (a copied tensor never holds more
// than a chunk resident).
absl::Status StreamCopy(const Tensor& t, const TensorToWrite::Sink& sink) {
  const SimpleDType& dtype = *t.dtype().AsSimple();
  STRATA_ASSIGN_OR_RETURN(const int64_t bytes, StorageBytes(dtype, t.size()));
  const auto* mapped = static_cast<const MappedCarrier*>(t.carrier().get());
  const MappedRegion& region = *mapped->region();
  const uint8_t* begin = static_cast<const uint8_t*>(mapped->data()) +
                         t.offset() * dtype.bits() / 8;
  for (int64_t at = 0; at < bytes; at += kChunkBytes) {
    const int64_t n = std::min(kChunkBytes, bytes - at);
    region.Populate(begin + at - region.data(), n);
    STRATA_RETURN_IF_ERROR(sink(absl::string_view(
        reinterpret_cast<const char*>(begin + at), static_cast<size_t>(n))));
    region.DropPages(begin + at - region.data(), n);
  }
  return absl::OkStatus();
}

int64_t TensorBytes(const Tensor& t) {
  int64_t total = 0;
  for (const Subtensor& s : TensorAccess::representation(t).subtensors()) {
    total += StorageBytes(*s.storage_dtype, s.placement.cosize()).value_or(0);
  }
  return total;
}

// NOTE [ Dequantizing in chunks ]
// A dequantized Tensor is never made whole: its rows are dequantized a chunk
// at a time (views along dim 0 at multiples of its shard granule, so that
// each is an exact view) into one reused host buffer of about kChunkBytes,
// and each chunk is written while it is still in the cache. The output
// costs no page fault after the first chunk and no more memory than the
// buffer; a Tensor whose chunks are not views (a 1-D one, whole-tensor
// blocks) is dequantized whole.
class ChunkBuffer {
 public:
  // A Tensor of `dtype` and `shape` over the buffer (grown when needed).
  absl::StatusOr<Tensor> View(const SimpleDType& dtype,
                              const std::vector<int64_t>& shape) {
    int64_t count = 1;
    for (int64_t e : shape) count *= e;  // Fits: a chunk of a Tensor.
    STRATA_ASSIGN_OR_RETURN(const int64_t bytes, StorageBytes(dtype, count));
    if (carrier_ == nullptr || &carrier_->dtype() != &dtype ||
        carrier_->size_in_bytes() < bytes) {
      carrier_.reset();
      STRATA_ASSIGN_OR_RETURN(carrier_,
                              HostCarrier::CreateForOverwrite(dtype, count));
    }
    STRATA_ASSIGN_OR_RETURN(Layout layout,
                            Layout::RowMajor(IntTuple::Flat(shape)));
    return Tensor::Create(carrier_, 0, std::move(layout));
  }

 private:
  std::shared_ptr<HostCarrier> carrier_;
};

absl::Status StreamDequantized(const Tensor& t, const SimpleDType& to,
                               ChunkBuffer& buffer,
                               const TensorToWrite::Sink& sink) {
  const std::vector<int64_t> shape = t.shape();
  const auto write = [&](const Tensor& out) {
    const int64_t bytes = out.size() * (to.bits() / 8);
    return sink(absl::string_view(
        static_cast<const char*>(out.carrier()->data()), bytes));
  };
  absl::StatusOr<int64_t> granule =
      shape.empty() ? absl::StatusOr<int64_t>(0) : ShardGranule(t, 0);
  if (shape.empty() || shape[0] <= 1 || !granule.ok() || *granule < 1) {
    STRATA_ASSIGN_OR_RETURN(const Tensor whole, Dequantize(t, to));
    return write(whole);
  }
  int64_t row_bytes = to.bits() / 8;
  for (size_t j = 1; j < shape.size(); ++j) row_bytes *= shape[j];
  const int64_t rows_per_chunk =
      std::max<int64_t>(
          1, kChunkBytes / std::max<int64_t>(row_bytes, 1) / *granule) *
      *granule;
  for (int64_t first = 0; first < shape[0]; first += rows_per_chunk) {
    const int64_t last = std::min(shape[0], first + rows_per_chunk);
    STRATA_ASSIGN_OR_RETURN(const Tensor rows, Slice(t, 0, first, last, 1));
    std::vector<int64_t> out_shape = shape;
    out_shape[0] = last - first;
    STRATA_ASSIGN_OR_RETURN(const Tensor out, buffer.View(to, out_shape));
    PopulateInputPages(rows);
    STRATA_RETURN_IF_ERROR(DequantizeInto(out, rows));
    STRATA_RETURN_IF_ERROR(write(out));
    DropInputPages(rows);
  }
  return absl::OkStatus();
}

// One source tensor and its fate.
struct Item {
  std::string name;
  std::string file;
  int64_t first_byte = 0;
  std::optional<Tensor> source;
  enum class Fate { kConvert, kCopy } fate = Fate::kCopy;
};

bool IsFloat(const DType& d) {
  return &d == dtypes::Float32() || &d == dtypes::Float16() ||
         &d == dtypes::BFloat16() || &d == dtypes::Float64();
}

// config.json with its quantization_config as the target wants it.
absl::StatusOr<std::string> RewrittenConfig(const std::string& path,
                                            const DType& to) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return ValueErrorCat(kWho, ": cannot read ", Quote(path));
  }
  nlohmann::ordered_json config =
      nlohmann::ordered_json::parse(text.str(), nullptr, false);
  if (config.is_discarded() || !config.is_object()) {
    return ValueErrorCat(kWho, ": ", Quote(path),
                         " is not a JSON object; its quantization_config "
                         "cannot be rewritten");
  }
  config.erase("quantization_config");
  if (&to == dtypes::FP8E4M3Block128x128() ||
      &to == dtypes::FP8E4M3Block128x128UE8M0()) {
    nlohmann::ordered_json q;
    q["quant_method"] = "fp8";
    q["fmt"] = "e4m3";
    q["activation_scheme"] = "dynamic";
    q["weight_block_size"] = {128, 128};
    if (&to == dtypes::FP8E4M3Block128x128UE8M0()) q["scale_fmt"] = "ue8m0";
    config["quantization_config"] = q;
  }
  return config.dump(2, ' ', false,
                     nlohmann::ordered_json::error_handler_t::replace) +
         "\n";
}

// The source directory's files other than the checkpoint's own.
std::vector<std::string> OtherFiles(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || name[0] == '.' ||
        absl::EndsWith(name, ".safetensors") ||
        absl::EndsWith(name, ".safetensors.index.json") ||
        absl::EndsWith(name, ".gguf") ||
        absl::StrContains(name, ".strata-tmp-")) {
      continue;
    }
    struct stat st;
    const std::string path = absl::StrCat(dir, "/", name);
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      out.push_back(name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

absl::StatusOr<int64_t> ParseShardSize(const std::string& text) {
  static constexpr std::pair<const char*, int64_t> kUnits[] = {
      {"", 1},
      {"B", 1},
      {"KB", 1'000},
      {"MB", 1'000'000},
      {"GB", 1'000'000'000},
      {"TB", 1'000'000'000'000},
      {"KiB", int64_t{1} << 10},
      {"MiB", int64_t{1} << 20},
      {"GiB", int64_t{1} << 30},
      {"TiB", int64_t{1} << 40},
  };
  const auto refuse = [&]() {
    return ValueErrorCat(kWho, ": --max-shard-size ", Quote(text),
                         " is not a size (bytes, or a number with KB MB GB "
                         "TB, KiB MiB GiB TiB)");
  };
  size_t i = 0;
  while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
  const std::string whole = text.substr(0, i);
  std::string fraction;
  if (i < text.size() && text[i] == '.') {
    const size_t start = ++i;
    while (i < text.size() && absl::ascii_isdigit(text[i])) ++i;
    fraction = text.substr(start, i - start);
    if (fraction.empty()) return refuse();
  }
  if (whole.empty()) return refuse();
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string unit = text.substr(i);
  for (const auto& [name, multiplier] : kUnits) {
    if (unit != name) continue;
    // whole.fraction x multiplier, exactly, in 128 bits.
    __int128 value = 0;
    for (char c : whole) {
      value = value * 10 + (c - '0');
      if (value > INT64_MAX) return refuse();
    }
    value *= multiplier;
    __int128 scale = 1, part = 0;
    for (char c : fraction) {
      if (scale > INT64_MAX) return refuse();
      scale *= 10;
      part = part * 10 + (c - '0');
    }
    if (part * multiplier % scale != 0) {
      return ValueErrorCat(kWho, ": --max-shard-size ", Quote(text),
                           " is not a whole number of bytes");
    }
    value += part * multiplier / scale;
    if (value < 1 || value > INT64_MAX) return refuse();
    return static_cast<int64_t>(value);
  }
  return refuse();
}

absl::StatusOr<ConvertReport> ConvertCheckpoint(const std::string& src,
                                                const std::string& dst,
                                                const ConvertOptions& options) {
  // The target.
  const DType* to = nullptr;
  if (auto named = DTypeRegistry::Global().Lookup(options.to); named.ok()) {
    to = *named;
  }
  const bool plain = to != nullptr && to->AsSimple() != nullptr;
  const CompoundDType* format = to != nullptr ? to->AsCompound() : nullptr;
  if (to == nullptr ||
      (plain && !(to == dtypes::Float32() || to == dtypes::Float16() ||
                  to == dtypes::BFloat16())) ||
      (!plain &&
       (format == nullptr || FindBlockScaleRule(*format) == nullptr))) {
    return ValueErrorCat(kWho, ": --to ", Quote(options.to),
                         " is neither bfloat16, float16, float32 nor a "
                         "block-scaled format");
  }
  if (options.scale_layout.has_value()) {
    if (plain) {
      return ValueErrorCat(kWho,
                           ": --scale-layout is for a block-scaled "
                           "--to; ",
                           options.to, " has no scales");
    }
    if (*options.scale_layout != ScaleLayout::kRowMajor) {
      return ValueErrorCat(
          kWho, ": --scale-layout ", ScaleLayoutName(*options.scale_layout),
          ": safetensors conventions and GGUF blocks store scales row-major "
          "only; a ",
          ScaleLayoutName(*options.scale_layout),
          " layout is made when a checkpoint is read (strata quantize, "
          "Relayout)");
    }
  }
  RE2::Options re_options;
  re_options.set_log_errors(false);
  const RE2 only(options.only, re_options);
  const RE2 skip(options.skip, re_options);
  for (const RE2* re : {&only, &skip}) {
    if (!re->ok()) {
      return ValueErrorCat(kWho, ": --", re == &only ? "only" : "skip", " ",
                           Quote(re->pattern()),
                           " is not a regular "
                           "expression: ",
                           re->error());
    }
  }
  if (options.max_shard_size < 1) {
    return ValueErrorCat(kWho, ": max_shard_size ", options.max_shard_size,
                         " is not a positive number of bytes");
  }
  const bool gguf_out = absl::EndsWith(dst, ".gguf");
  // Never the source: not itself, not inside it, not around it.
  const std::string real_src = Resolved(src);
  const std::string real_dst = Resolved(dst);
  const std::string src_dir =
      IsCheckpointCollection(src) ? Resolved(SourceDirectory(src)) : real_src;
  if (Inside(real_dst, src_dir) || Inside(real_src, real_dst)) {
    return ValueErrorCat(kWho, ": the destination ", Quote(dst),
                         " is, holds or lies inside the source ", Quote(src),
                         "; the source is never written");
  }
  STRATA_RETURN_IF_ERROR(
      CheckCheckpointDestination(dst, !gguf_out, options.overwrite));

  STRATA_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpoint(src));
  ConvertReport report;
  std::vector<Item> items;
  for (CheckpointTensor& t : checkpoint.tensors) {
    if (!t.tensor.ok()) {
      report.refused.emplace_back(t.name, t.tensor.status());
      continue;
    }
    Item item;
    item.name = t.name;
    item.file = t.file;
    item.first_byte = FirstByte(*t.tensor);
    item.source = *std::move(t.tensor);
    items.push_back(std::move(item));
  }
  checkpoint.tensors.clear();
  // The first file of a collection, whose metadata the output keeps.
  std::string first_file;
  for (const Item& item : items) {
    if (!item.file.empty() && (first_file.empty() || item.file < first_file)) {
      first_file = item.file;
    }
  }
  std::stable_sort(
      items.begin(), items.end(), [](const Item& a, const Item& b) {
        return std::tie(a.file, a.first_byte) < std::tie(b.file, b.first_byte);
      });
  // Each tensor's fate and its result's dtype, judged before writing.
  std::vector<TensorToWrite> writes;
  const auto buffer = std::make_shared<ChunkBuffer>();
  for (Item& item : items) {
    const Tensor& t = *item.source;
    const std::vector<int64_t> shape = t.shape();
    const DType& dtype = t.dtype();
    const bool block_scaled = dtype.AsCompound() != nullptr;
    if (plain) {
      item.fate = block_scaled ? Item::Fate::kConvert : Item::Fate::kCopy;
    } else {
      const bool eligible =
          (IsFloat(dtype) ||
           (block_scaled && FindBlockScaleRule(*dtype.AsCompound()))) &&
          shape.size() >= 2 && absl::EndsWith(item.name, ".weight") &&
          (options.only.empty() || RE2::PartialMatch(item.name, only)) &&
          !(!options.skip.empty() && RE2::PartialMatch(item.name, skip));
      item.fate = eligible ? Item::Fate::kConvert : Item::Fate::kCopy;
    }
    const DType* out_dtype = item.fate == Item::Fate::kConvert ? to : &dtype;
    const absl::Status form =
        gguf_out ? CheckGgufForm(item.name, *out_dtype, shape)
                 : CheckSafetensorsForm(item.name, *out_dtype, shape);
    if (!form.ok()) {
      report.refused.emplace_back(item.name, form);
      continue;
    }
    (item.fate == Item::Fate::kConvert ? report.converted : report.copied)
        .push_back(item.name);
    report.input_bytes += TensorBytes(t);
    TensorToWrite w;
    w.name = item.name;
    w.dtype = out_dtype;
    w.shape = shape;
    const Tensor source = t;
    if (item.fate == Item::Fate::kCopy) {
      w.make = [source]() -> absl::StatusOr<Tensor> { return source; };
      if (IsCompactMapped(source)) {
        w.stream = [source](const TensorToWrite::Sink& sink) {
          return StreamCopy(source, sink);
        };
      }
    } else if (plain) {
      const SimpleDType* out = to->AsSimple();
      w.make = [source, out]() { return Dequantize(source, *out); };
      w.stream = [source, out, buffer](const TensorToWrite::Sink& sink) {
        return StreamDequantized(source, *out, *buffer, sink);
      };
    } else {
      QuantizeOptions q;
      if (FindBlockScaleRule(*format)->scaling().blocks.size() == 1) {
        q.blocked_dim = static_cast<int64_t>(shape.size()) - 1;
      }
      q.scale_layout = options.scale_layout.value_or(ScaleLayout::kRowMajor);
      w.make = [source, format, q]() { return Requantize(source, *format, q); };
    }
    w.written = [source]() { DropInputPages(source); };
    writes.push_back(std::move(w));
  }
  items.clear();

  // The files beside the tensors, and their metadata.
  if (gguf_out) {
    std::vector<std::pair<std::string, GgufValue>> metadata;
    if (checkpoint.format == "gguf") {
      // The metadata of the (first) file; a split set's split.* keys dropped.
      const std::string first =
          first_file.empty()
              ? src
              : absl::StrCat(SourceDirectory(src), "/", first_file);
      if (absl::StatusOr<Gguf> header = ReadGguf(first); header.ok()) {
        for (auto& [key, value] : header->metadata) {
          if (!absl::StartsWith(key, "split.")) {
            metadata.emplace_back(key, std::move(value));
          }
        }
      }
    }
    STRATA_RETURN_IF_ERROR(
        WriteGguf(dst, std::move(writes), metadata, options.control));
    report.files.push_back(dst);
    struct stat st;
    if (stat(dst.c_str(), &st) == 0) report.output_bytes = st.st_size;
    return report;
  }
  WriteCheckpointOptions w;
  w.max_shard_size = options.max_shard_size;
  w.overwrite = options.overwrite;
  w.control = options.control;
  if (checkpoint.format == "safetensors") {
    // Each file gets the source's first file's __metadata__ ("format": "pt"
    // where it has none: transformers refuses a file without it).
    const std::string first =
        first_file.empty()
            ? src
            : absl::StrCat(SourceDirectory(src), "/", first_file);
    if (absl::StatusOr<Safetensors> header = ReadSafetensors(first);
        header.ok() && !header->metadata.empty()) {
      w.metadata = header->metadata;
    }
    w.index_metadata.clear();
  }
  if (IsCheckpointCollection(src)) {
    const std::string dir = SourceDirectory(src);
    for (const std::string& name : OtherFiles(dir)) {
      const std::string path = absl::StrCat(dir, "/", name);
      if (name == "config.json") {
        absl::StatusOr<std::string> config = RewrittenConfig(path, *to);
        if (config.ok()) {
          w.files.emplace_back(name, *std::move(config));
          report.other_files.push_back(name);
          continue;
        }
      }
      w.copied_files.emplace_back(name, path);
      report.other_files.push_back(name);
    }
  }
  STRATA_ASSIGN_OR_RETURN(WrittenCheckpoint written,
                          WriteCheckpoint(dst, std::move(writes), w));
  for (const std::string& f : written.files) {
    report.files.push_back(absl::StrCat(dst, "/", f));
  }
  report.output_bytes = written.total_size;
  return report;
}

}  // namespace strata
