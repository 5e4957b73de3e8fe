#include "checkpoint/checkpoint_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "checkpoint/internal/atomic_files.h"
#include "checkpoint/internal/names.h"
#include "checkpoint/internal/safetensors_file.h"
#include "nlohmann/json.hpp"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

using checkpoint_internal::OutputFile;
using checkpoint_internal::PlannedTensor;
using checkpoint_internal::Quoted;

constexpr char kWho[] = "WriteCheckpoint";
constexpr char kSingleFile[] = "model.safetensors";
constexpr char kIndexFile[] = "model.safetensors.index.json";

// huggingface_hub's greedy split, in order: the indexes of each shard.
std::vector<std::vector<size_t>> PlanShards(
    const std::vector<PlannedTensor>& planned, int64_t max_shard_size) {
  std::vector<std::vector<size_t>> shards;
  std::vector<size_t> current;
  int64_t current_size = 0;
  for (size_t i = 0; i < planned.size(); ++i) {
    const int64_t bytes = planned[i].bytes();
    if (bytes > max_shard_size) {
      shards.push_back({i});
      continue;
    }
    if (!current.empty() && bytes > max_shard_size - current_size) {
      shards.push_back(std::move(current));
      current.clear();
      current_size = 0;
    }
    current.push_back(i);
    current_size += bytes;
  }
  if (!current.empty() || shards.empty()) shards.push_back(std::move(current));
  return shards;
}

bool IsPlainName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

absl::Status CopyFile(const std::string& from, OutputFile& out) {
  const int fd = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return ValueErrorCat(kWho, ": cannot read ", Quoted(from), ": ",
                         std::strerror(errno));
  }
  std::string buffer(size_t{1} << 20, '\0');
  absl::Status status;
  while (status.ok()) {
    const ssize_t got = read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      status = ValueErrorCat(kWho, ": cannot read ", Quoted(from), ": ",
                             std::strerror(errno));
      break;
    }
    if (got == 0) break;
    status = out.Write(absl::string_view(buffer.data(), got));
  }
  close(fd);
  return status;
}

// Everything after the destination was checked: the files into `staging`.
absl::StatusOr<WrittenCheckpoint> WriteInto(
    const std::string& dir, const std::string& staging,
    std::vector<PlannedTensor>& planned,
    const WriteCheckpointOptions& options) {
  const std::vector<std::vector<size_t>> shards =
      PlanShards(planned, options.max_shard_size);
  WrittenCheckpoint written;
  for (const PlannedTensor& p : planned) written.total_size += p.bytes();
  checkpoint_internal::WriteState state{&options.control, {}};
  state.progress.tensors_total = static_cast<int64_t>(planned.size());
  state.progress.bytes_total = written.total_size;
  std::map<std::string, std::string> weight_map;  // Sorted by name.
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string name =
        shards.size() == 1 ? std::string(kSingleFile)
                           : absl::StrFormat("model-%05d-of-%05d.safetensors",
                                             s + 1, shards.size());
    std::vector<PlannedTensor> shard;
    for (size_t i : shards[s]) {
      shard.push_back(planned[i]);
      for (const auto& e : planned[i].entries) weight_map[e.name] = name;
    }
    STRATA_ASSIGN_OR_RETURN(const std::string header,
                            checkpoint_internal::SafetensorsHeader(
                                absl::MakeSpan(shard), options.metadata));
    const std::string shown = absl::StrCat(dir, "/", name);
    state.progress.file = shown;
    STRATA_ASSIGN_OR_RETURN(
        OutputFile out,
        OutputFile::Create(absl::StrCat(staging, "/", name), kWho, shown));
    STRATA_RETURN_IF_ERROR(out.Write(header));
    STRATA_RETURN_IF_ERROR(checkpoint_internal::WriteSafetensorsTensors(
        absl::MakeSpan(shard), out, static_cast<int64_t>(header.size()),
        state));
    STRATA_RETURN_IF_ERROR(out.Commit());
    written.files.push_back(name);
  }
  if (shards.size() > 1) {
    nlohmann::json index;
    index["metadata"] = nlohmann::json::object();
    for (const auto& [key, text] : options.index_metadata) {
      nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
      index["metadata"][key] =
          value.is_discarded() ? nlohmann::json(text) : value;
    }
    index["metadata"]["total_size"] = written.total_size;
    index["weight_map"] = nlohmann::json::object();
    for (const auto& [entry, file] : weight_map) {
      index["weight_map"][entry] = file;
    }
    const std::string shown = absl::StrCat(dir, "/", kIndexFile);
    STRATA_ASSIGN_OR_RETURN(
        OutputFile out,
        OutputFile::Create(absl::StrCat(staging, "/", kIndexFile), kWho,
                           shown));
    STRATA_RETURN_IF_ERROR(out.Write(
        index.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
        "\n"));
    STRATA_RETURN_IF_ERROR(out.Commit());
    written.files.push_back(kIndexFile);
  }
  for (const auto& [name, bytes] : options.files) {
    const std::string shown = absl::StrCat(dir, "/", name);
    STRATA_ASSIGN_OR_RETURN(
        OutputFile out,
        OutputFile::Create(absl::StrCat(staging, "/", name), kWho, shown));
    STRATA_RETURN_IF_ERROR(out.Write(bytes));
    STRATA_RETURN_IF_ERROR(out.Commit());
  }
  for (const auto& [name, from] : options.copied_files) {
    const std::string shown = absl::StrCat(dir, "/", name);
    STRATA_ASSIGN_OR_RETURN(
        OutputFile out,
        OutputFile::Create(absl::StrCat(staging, "/", name), kWho, shown));
    STRATA_RETURN_IF_ERROR(CopyFile(from, out));
    STRATA_RETURN_IF_ERROR(out.Commit());
  }
  STRATA_RETURN_IF_ERROR(
      checkpoint_internal::CheckCancel(options.control.cancel, kWho));
  return written;
}

}  // namespace

absl::Status CheckCheckpointDestination(const std::string& path, bool directory,
                                        bool overwrite) {
  STRATA_RETURN_IF_ERROR(checkpoint_internal::CheckDestination(
      path, directory, overwrite, "strata convert"));
  checkpoint_internal::RemoveLeftovers(path);
  return absl::OkStatus();
}

absl::Status CheckSafetensorsForm(const std::string& name, const DType& dtype,
                                  const std::vector<int64_t>& shape) {
  TensorToWrite t;
  t.name = name;
  t.dtype = &dtype;
  t.shape = shape;
  return checkpoint_internal::PlanSafetensorsTensor(t).status();
}

absl::StatusOr<WrittenCheckpoint> WriteCheckpoint(
    const std::string& given_dir, std::vector<TensorToWrite> tensors,
    const WriteCheckpointOptions& options) {
  // "out/" names "out": the staging directory goes beside it, not in it.
  const std::string dir =
      checkpoint_internal::WithoutTrailingSlashes(given_dir);
  if (options.max_shard_size < 1) {
    return ValueErrorCat(kWho, ": max_shard_size ", options.max_shard_size,
                         " is not a positive number of bytes");
  }
  for (const auto* list : {&options.files, &options.copied_files}) {
    for (const auto& [name, unused] : *list) {
      if (!IsPlainName(name) || name == kSingleFile || name == kIndexFile ||
          name.find(".safetensors") != std::string::npos) {
        return ValueErrorCat(kWho, ": file ", Quoted(name),
                             " is not a plain name beside the tensors");
      }
    }
  }
  std::vector<PlannedTensor> planned;
  planned.reserve(tensors.size());
  for (TensorToWrite& t : tensors) {
    STRATA_ASSIGN_OR_RETURN(PlannedTensor p,
                            checkpoint_internal::PlanSafetensorsTensor(t));
    planned.push_back(std::move(p));
  }
  // Every entry name once, across the shards too.
  STRATA_RETURN_IF_ERROR(checkpoint_internal::SafetensorsHeader(
                             absl::MakeSpan(planned), options.metadata)
                             .status());
  STRATA_RETURN_IF_ERROR(checkpoint_internal::CheckDestination(
      dir, /*directory=*/true, options.overwrite, kWho));
  checkpoint_internal::RemoveLeftovers(dir);
  STRATA_ASSIGN_OR_RETURN(
      const std::string staging,
      checkpoint_internal::CreateStagingDirectory(dir, kWho));
  absl::StatusOr<WrittenCheckpoint> written =
      WriteInto(dir, staging, planned, options);
  if (written.ok()) {
    absl::Status published = checkpoint_internal::PublishDirectory(
        staging, dir, options.overwrite, kWho);
    if (!published.ok()) written = published;
  }
  if (!written.ok()) {
    checkpoint_internal::RemoveTree(staging).IgnoreError();
    return written;
  }
  // Each file is announced once it is under its final name.
  if (options.control.file_written) {
    for (const std::string& f : written->files) {
      options.control.file_written(absl::StrCat(dir, "/", f));
    }
  }
  return written;
}

}  // namespace strata
