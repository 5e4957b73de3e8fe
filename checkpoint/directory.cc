#include "checkpoint/directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/gguf.h"
#include "checkpoint/internal/checked_json.h"
#include "checkpoint/internal/conventions.h"
#include "checkpoint/internal/json_text.h"
#include "checkpoint/internal/names.h"
#include "checkpoint/safetensors.h"
#include "core/tensor_access.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

using checkpoint_internal::JsonChecker;
using checkpoint_internal::JsonText;
using checkpoint_internal::Quoted;
using Json = nlohmann::json;

constexpr char kOp[] = "ReadCheckpoint";
constexpr char kIndexSuffix[] = ".safetensors.index.json";

bool IsDirectoryPath(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Basename(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string Join(const std::string& dir, const std::string& name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}

// The names in `dir` (no "." or ".."), sorted.
absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return ValueErrorCat(kOp, ": cannot list ", Quoted(dir), ": ",
                         std::strerror(errno));
  }
  std::vector<std::string> names;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// NAME-0000i-of-0000N.gguf (five digits each, as gguf-split names them).
struct SplitName {
  std::string prefix;
  int64_t no = 0;
  int64_t count = 0;
};

std::optional<SplitName> ParseSplitName(absl::string_view base) {
  constexpr absl::string_view kSuffix = ".gguf";
  // "-00001-of-00003.gguf" is 20 characters.
  if (base.size() < 20 || !absl::EndsWith(base, kSuffix)) return std::nullopt;
  const absl::string_view tail = base.substr(base.size() - 20, 15);
  if (tail[0] != '-' || tail.substr(6, 4) != "-of-") return std::nullopt;
  SplitName name;
  const absl::string_view no = tail.substr(1, 5), count = tail.substr(10, 5);
  for (char c : absl::StrCat(no, count)) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  if (!absl::SimpleAtoi(no, &name.no) ||
      !absl::SimpleAtoi(count, &name.count) || name.no < 1 || name.count < 1 ||
      name.no > name.count) {
    return std::nullopt;
  }
  name.prefix = std::string(base.substr(0, base.size() - 20));
  return name;
}

std::string SplitFileName(const std::string& prefix, int64_t no,
                          int64_t count) {
  return absl::StrFormat("%s-%05d-of-%05d.gguf", prefix, no, count);
}

// A file the index or split set names: a plain name of the directory, present.
// A symbolic link is followed, out of the directory too (NOTE [ Sharded
// directories ]: the Hugging Face cache links a snapshot's files to blobs/);
// what it reaches must be a regular file of the format, as the reader checks.
absl::StatusOr<std::string> FileInDirectory(const std::string& dir,
                                            const std::string& name,
                                            absl::string_view named_by) {
  if (name.empty() || name == "." || name == ".." ||
      name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return ValueErrorCat(kOp, ": ", named_by, " names the file ", Quoted(name),
                         ", which is not a file name in the directory ",
                         Quoted(dir));
  }
  const std::string path = Join(dir, name);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return ValueErrorCat(kOp, ": ", named_by, " names the file ", Quoted(name),
                         ", which is missing from ", Quoted(dir), ": ",
                         std::strerror(errno));
  }
  return path;
}

// One shard's tensors by name, and the regions of its members that it
// imported alone (lone members, plain Tensors over mapped carriers).
struct Shard {
  std::string file;
  Safetensors read;
  absl::flat_hash_map<std::string, size_t> by_name;
};

// A lone member of a convention group, as a plain Tensor of a shard.
std::optional<checkpoint_internal::Member> LoneMember(const std::string& name,
                                                      const Tensor& tensor) {
  const auto* carrier =
      dynamic_cast<const MappedCarrier*>(tensor.carrier().get());
  const SimpleDType* dtype = tensor.dtype().AsSimple();
  if (carrier == nullptr || dtype == nullptr || tensor.num_subtensors() != 1 ||
      carrier->region() == nullptr || tensor.offset() != 0) {
    return std::nullopt;
  }
  checkpoint_internal::Member m;
  m.name = name;
  m.dtype = dtype;
  m.shape = tensor.shape();
  m.count = carrier->size();
  m.region = carrier->region();
  m.begin = carrier->file_offset() - m.region->offset();
  return m;
}

absl::StatusOr<Checkpoint> ReadIndexed(const std::string& dir,
                                       const std::string& index_path) {
  const std::string index_name = Basename(index_path);
  // The index, read whole within kMaxIndexBytes and parsed as a header is.
  std::string text;
  STRATA_RETURN_IF_ERROR(checkpoint_internal::WithOpenFile(
      kOp, index_path, [&](int fd) -> absl::Status {
        STRATA_ASSIGN_OR_RETURN(
            const int64_t size,
            checkpoint_internal::RegularFileSize(fd, kOp, index_path));
        if (size > kMaxIndexBytes) {
          return ValueErrorCat(kOp, ": the index ", Quoted(index_name),
                               " holds ", size, " bytes, above the limit of ",
                               kMaxIndexBytes);
        }
        text.resize(size);
        int64_t done = 0;
        while (done < size) {
          const ssize_t got = pread(fd, text.data() + done, size - done, done);
          if (got <= 0) {
            return ValueErrorCat(kOp, ": cannot read the index ",
                                 Quoted(index_name), ": ",
                                 got == 0 ? "it shrank" : std::strerror(errno));
          }
          done += got;
        }
        return absl::OkStatus();
      }));
  const std::string not_index = absl::StrCat(kOp, ": ", Quoted(index_name),
                                             " is not a safetensors index: ");
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    return ValueErrorCat(not_index, "byte ", nul, " is NUL");
  }
  JsonChecker checker("the index", "weight_map");
  Json root;
  if (!checker.Parse(text, &root)) {
    return ValueErrorCat(not_index, checker.error());
  }
  text.clear();
  text.shrink_to_fit();
  if (!root.is_object()) {
    return ValueErrorCat(not_index, "it is not a JSON object");
  }
  const auto weight_map = root.find("weight_map");
  if (weight_map == root.end() || !weight_map->is_object()) {
    return ValueErrorCat(not_index, "it has no \"weight_map\" object");
  }
  Checkpoint out;
  out.format = "safetensors";
  if (const auto metadata = root.find("metadata");
      metadata != root.end() && metadata->is_object()) {
    for (auto it = metadata->begin(); it != metadata->end(); ++it) {
      const std::string* s = it->get_ptr<const std::string*>();
      out.metadata.emplace_back(
          it.key(), s != nullptr ? *s
                                 : it->dump(-1, ' ', false,
                                            Json::error_handler_t::replace));
    }
  }
  // The listed names in the index's order, each with its file.
  std::vector<std::pair<std::string, std::string>> listed;
  std::vector<std::string> files;
  absl::flat_hash_map<std::string, size_t> file_index;
  for (const std::string& name : checker.ordered_keys()) {
    const Json& value = *weight_map->find(name);
    const std::string* file = value.get_ptr<const std::string*>();
    if (file == nullptr) {
      return ValueErrorCat(not_index, "weight_map maps ", Quoted(name), " to ",
                           JsonText(value), ", not a file name");
    }
    if (file_index.emplace(*file, files.size()).second) files.push_back(*file);
    listed.emplace_back(name, *file);
  }
  // Every shard, headers only.
  std::vector<Shard> shards(files.size());
  for (size_t f = 0; f < files.size(); ++f) {
    STRATA_ASSIGN_OR_RETURN(
        const std::string path,
        FileInDirectory(dir, files[f],
                        absl::StrCat("the index ", Quoted(index_name))));
    absl::StatusOr<Safetensors> read = ReadSafetensors(
        path, SafetensorsReadOptions{/*convention_groups=*/false});
    if (!read.ok()) {
      return WithContext(read.status(),
                         absl::StrCat(kOp, ": shard ", Quoted(files[f])));
    }
    shards[f].file = files[f];
    shards[f].read = *std::move(read);
    for (size_t k = 0; k < shards[f].read.tensors.size(); ++k) {
      shards[f].by_name.emplace(shards[f].read.tensors[k].name, k);
    }
  }
  // Convention groups (NOTE [ Sharded directories ]): the members the index
  // lists, wherever they are, each imported alone by its shard.
  struct Across {
    std::array<std::optional<checkpoint_internal::Member>,
               checkpoint_internal::kNumRoles>
        members;
  };
  std::map<std::string, Across> across;
  for (const auto& [name, file] : listed) {
    const auto parsed = checkpoint_internal::ParseMemberName(name);
    if (!parsed.has_value()) continue;
    const Shard& shard = shards[file_index[file]];
    const auto at = shard.by_name.find(name);
    if (at == shard.by_name.end()) continue;
    const absl::StatusOr<Tensor>& t = shard.read.tensors[at->second].tensor;
    if (!t.ok()) continue;
    std::optional<checkpoint_internal::Member> m = LoneMember(name, *t);
    if (!m.has_value()) continue;
    Across& a = across[parsed->first];
    a.members[static_cast<int>(parsed->second)] = std::move(m);
  }
  absl::flat_hash_set<std::string> emitted;
  // Member name -> its group, emitted where the index lists its first member.
  absl::flat_hash_map<std::string, std::string> consumed;
  absl::flat_hash_map<std::string, CheckpointTensor> groups;
  for (auto& [group_name, a] : across) {
    checkpoint_internal::Members members{};
    for (int r = 0; r < checkpoint_internal::kNumRoles; ++r) {
      members[r] = a.members[r].has_value() ? &*a.members[r] : nullptr;
    }
    if (!checkpoint_internal::FormsGroup(members)) continue;
    std::string file;
    for (const auto& m : a.members) {
      if (m.has_value()) consumed.emplace(m->name, group_name);
    }
    const auto& weight =
        a.members[static_cast<int>(checkpoint_internal::Role::kWeight)];
    const auto& packed =
        a.members[static_cast<int>(checkpoint_internal::Role::kWeightPacked)];
    for (const auto& [name, f] : listed) {
      if ((weight.has_value() && name == weight->name) ||
          (!weight.has_value() && packed.has_value() && name == packed->name)) {
        file = f;
      }
    }
    absl::StatusOr<checkpoint_internal::GroupPlan> plan =
        checkpoint_internal::PlanGroup(group_name, members);
    absl::StatusOr<Tensor> tensor =
        plan.ok() ? checkpoint_internal::BuildGroup(*plan, nullptr)
                  : absl::StatusOr<Tensor>(plan.status());
    groups.emplace(group_name,
                   CheckpointTensor{group_name, std::move(tensor), file});
  }
  // MXFP4 pairs split across shards (NOTE [ MXFP4 pairs ]): P.blocks listed
  // in one file, P.scales in another, each read alone as U8 by its shard.
  absl::flat_hash_map<std::string, std::string> file_of;
  for (const auto& [name, file] : listed) file_of.emplace(name, file);
  absl::flat_hash_map<std::string, std::string> half_of;  // Half -> P.
  absl::flat_hash_map<std::string, CheckpointTensor> split_pairs;
  const auto lone = [&](const std::string& name)
      -> std::optional<checkpoint_internal::Member> {
    const Shard& shard = shards[file_index[file_of.at(name)]];
    const auto at = shard.by_name.find(name);
    if (at == shard.by_name.end() ||
        !shard.read.tensors[at->second].tensor.ok()) {
      return std::nullopt;
    }
    return LoneMember(name, *shard.read.tensors[at->second].tensor);
  };
  for (const auto& [name, file] : listed) {
    for (absl::string_view separator : {".", "_"}) {
      const std::string suffix = absl::StrCat(separator, "blocks");
      if (!absl::EndsWith(name, suffix)) continue;
      const std::string whole = name.substr(0, name.size() - suffix.size());
      const std::string scales = absl::StrCat(whole, separator, "scales");
      const auto other = file_of.find(scales);
      if (other == file_of.end() || other->second == file ||
          file_of.contains(whole) || consumed.contains(name) ||
          consumed.contains(scales)) {
        continue;
      }
      std::optional<checkpoint_internal::Member> blocks = lone(name);
      std::optional<checkpoint_internal::Member> scale = lone(scales);
      if (!blocks.has_value() || !scale.has_value()) continue;
      half_of[name] = whole;
      half_of[scales] = whole;
      split_pairs.emplace(whole,
                          CheckpointTensor{whole,
                                           checkpoint_internal::BuildPair(
                                               whole, *blocks, *scale, nullptr),
                                           file});
    }
  }
  // The listed tensors, in the index's order.
  for (const auto& [name, file] : listed) {
    if (const auto pair = half_of.find(name); pair != half_of.end()) {
      if (emitted.insert(pair->second).second) {
        out.tensors.push_back(std::move(split_pairs.at(pair->second)));
      }
      continue;
    }
    if (const auto group = consumed.find(name); group != consumed.end()) {
      if (emitted.insert(group->second).second) {
        out.tensors.push_back(std::move(groups.at(group->second)));
      }
      continue;
    }
    Shard& shard = shards[file_index[file]];
    const auto at = shard.by_name.find(name);
    if (at != shard.by_name.end()) {
      if (!emitted.insert(name).second) continue;
      SafetensorsTensor& t = shard.read.tensors[at->second];
      out.tensors.push_back({t.name, std::move(t.tensor), file});
      continue;
    }
    // A half of a pair (P.blocks within P): listed, and imported as the
    // whole by its shard.
    std::string whole;
    for (absl::string_view suffix :
         {".blocks", ".scales", "_blocks", "_scales"}) {
      if (absl::EndsWith(name, suffix)) {
        whole = name.substr(0, name.size() - suffix.size());
      }
    }
    if (!whole.empty() && shard.by_name.contains(whole)) {
      if (!emitted.insert(whole).second) continue;
      SafetensorsTensor& t = shard.read.tensors[shard.by_name.at(whole)];
      out.tensors.push_back({t.name, std::move(t.tensor), file});
      continue;
    }
    emitted.insert(name);
    out.tensors.push_back(
        {name,
         ValueErrorCat(kOp, ": the index ", Quoted(index_name), " lists ",
                       Quoted(name), " in ", Quoted(file),
                       ", which does not hold it"),
         file});
  }
  return out;
}

absl::StatusOr<Checkpoint> ReadSplitSet(const std::string& dir,
                                        const SplitName& any) {
  Checkpoint out;
  out.format = "gguf";
  int64_t expected = -1;
  int64_t found = 0;
  const std::string first = SplitFileName(any.prefix, 1, any.count);
  for (int64_t no = 1; no <= any.count; ++no) {
    const std::string name = SplitFileName(any.prefix, no, any.count);
    STRATA_ASSIGN_OR_RETURN(
        const std::string path,
        FileInDirectory(dir, name,
                        absl::StrCat("the split set ", Quoted(first))));
    absl::StatusOr<Gguf> read = ReadGguf(path);
    if (!read.ok()) {
      return WithContext(read.status(),
                         absl::StrCat(kOp, ": split ", Quoted(name)));
    }
    // split.no (from 0), split.count and, in the first, split.tensors.count.
    const auto value = [&](absl::string_view key) -> const GgufValue* {
      for (const auto& [k, v] : read->metadata) {
        if (k == key) return &v;
      }
      return nullptr;
    };
    const GgufValue* split_no = value("split.no");
    const GgufValue* split_count = value("split.count");
    if (split_no == nullptr || !split_no->is_scalar() ||
        split_no->AsInt64() != no - 1 || split_count == nullptr ||
        !split_count->is_scalar() || split_count->AsInt64() != any.count) {
      return ValueErrorCat(kOp, ": split ", Quoted(name), " says split.no ",
                           split_no != nullptr && split_no->is_scalar()
                               ? absl::StrCat(split_no->AsInt64())
                               : std::string("(missing)"),
                           " of split.count ",
                           split_count != nullptr && split_count->is_scalar()
                               ? absl::StrCat(split_count->AsInt64())
                               : std::string("(missing)"),
                           "; its name says ", no - 1, " of ", any.count);
    }
    if (no == 1) {
      const GgufValue* total = value("split.tensors.count");
      if (total == nullptr || !total->is_scalar()) {
        return ValueErrorCat(kOp, ": split ", Quoted(name),
                             " has no split.tensors.count");
      }
      expected = total->AsInt64();
    }
    found += static_cast<int64_t>(read->tensors.size());
    for (GgufTensor& t : read->tensors) {
      out.tensors.push_back({std::move(t.name), std::move(t.tensor), name});
    }
  }
  if (found != expected) {
    return ValueErrorCat(kOp, ": the split set ", Quoted(first), " holds ",
                         found, " tensors; ", expected,
                         " tensors expected but ", found, " found");
  }
  return out;
}

}  // namespace

bool IsCheckpointCollection(const std::string& path) {
  return IsDirectoryPath(path) || absl::EndsWith(path, kIndexSuffix) ||
         ParseSplitName(Basename(path)).has_value();
}

absl::StatusOr<Checkpoint> ReadCheckpointDirectory(const std::string& path) {
  if (!IsDirectoryPath(path)) {
    if (absl::EndsWith(path, kIndexSuffix)) {
      return ReadIndexed(Dirname(path), path);
    }
    if (const auto split = ParseSplitName(Basename(path))) {
      return ReadSplitSet(Dirname(path), *split);
    }
    return ValueErrorCat(kOp, ": ", Quoted(path),
                         " is neither a directory, an index nor a split file");
  }
  STRATA_ASSIGN_OR_RETURN(const std::vector<std::string> names,
                          ListDirectory(path));
  std::vector<std::string> indexes;
  std::optional<SplitName> split;
  bool several_splits = false;
  bool single = false;
  for (const std::string& name : names) {
    if (absl::EndsWith(name, kIndexSuffix)) indexes.push_back(name);
    if (name == "model.safetensors") single = true;
    if (const auto s = ParseSplitName(name)) {
      if (split.has_value() &&
          (split->prefix != s->prefix || split->count != s->count)) {
        several_splits = true;
      }
      split = s;
    }
  }
  if (!indexes.empty()) {
    const auto model = std::find(indexes.begin(), indexes.end(),
                                 "model.safetensors.index.json");
    if (model == indexes.end() && indexes.size() > 1) {
      return ValueErrorCat(kOp, ": ", Quoted(path), " holds ", indexes.size(),
                           " indexes and none is model.safetensors.index.json");
    }
    return ReadIndexed(
        path, Join(path, model != indexes.end() ? *model : indexes[0]));
  }
  if (single) {
    STRATA_ASSIGN_OR_RETURN(
        const std::string file,
        FileInDirectory(path, "model.safetensors", "the directory"));
    STRATA_ASSIGN_OR_RETURN(Checkpoint out, ReadCheckpoint(file));
    for (CheckpointTensor& t : out.tensors) t.file = "model.safetensors";
    return out;
  }
  if (split.has_value() && !several_splits) {
    return ReadSplitSet(path, *split);
  }
  return ValueErrorCat(kOp, ": ", Quoted(path),
                       several_splits ? " holds several GGUF split sets"
                                      : " holds no *.safetensors.index.json, "
                                        "model.safetensors or GGUF split set");
}

}  // namespace strata
