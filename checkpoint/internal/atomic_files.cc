#include "checkpoint/internal/atomic_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "checkpoint/internal/names.h"
#include "util/errors.h"

namespace strata {
namespace checkpoint_internal {
namespace {

constexpr absl::string_view kTemporaryMark = ".strata-tmp-";

std::string NextTemporaryName(const std::string& path) {
  static std::atomic<uint64_t> next{0};
  return absl::StrCat(path, kTemporaryMark, static_cast<int64_t>(getpid()), "-",
                      next.fetch_add(1, std::memory_order_relaxed));
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsEmptyDirectory(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return false;
  bool empty = true;
  while (const dirent* entry = readdir(dir)) {
    const absl::string_view name = entry->d_name;
    if (name != "." && name != "..") {
      empty = false;
      break;
    }
  }
  closedir(dir);
  return empty;
}

}  // namespace

absl::StatusOr<OutputFile> OutputFile::Create(const std::string& path,
                                              absl::string_view who,
                                              const std::string& shown) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string temporary = NextTemporaryName(path);
    const int fd =
        open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      return OutputFile(path, std::move(temporary), std::string(who),
                        shown.empty() ? path : shown, fd);
    }
    if (errno != EEXIST) {
      return ValueErrorCat(who, ": cannot create ",
                           QuotedPath(shown.empty() ? path : shown), ": ",
                           std::strerror(errno));
    }
  }
  return ValueErrorCat(who, ": cannot create ",
                       QuotedPath(shown.empty() ? path : shown),
                       ": no free temporary name beside it");
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_(std::move(other.temporary_)),
      who_(std::move(other.who_)),
      shown_(std::move(other.shown_)),
      fd_(other.fd_),
      written_(other.written_) {
  other.fd_ = -1;
  other.temporary_.clear();
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) close(fd_);
  if (!temporary_.empty()) unlink(temporary_.c_str());
}

absl::Status OutputFile::Error(absl::string_view what, int error) const {
  return ValueErrorCat(who_, ": cannot ", what, " ", QuotedPath(shown_), ": ",
                       std::strerror(error));
}

absl::Status OutputFile::Write(absl::string_view bytes) {
  if (fd_ < 0) return Error("write", EBADF);
  while (!bytes.empty()) {
    // At most 1 GiB per call: Linux writes at most 0x7ffff000 bytes anyway.
    const size_t n = std::min<size_t>(bytes.size(), size_t{1} << 30);
    const ssize_t wrote = write(fd_, bytes.data(), n);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) return Error("write", errno);
    if (wrote == 0) return Error("write", EIO);
    bytes.remove_prefix(static_cast<size_t>(wrote));
    written_ += wrote;
  }
  return absl::OkStatus();
}

absl::Status OutputFile::WriteAt(int64_t offset, absl::string_view bytes) {
  if (fd_ < 0) return Error("write", EBADF);
  while (!bytes.empty()) {
    const size_t n = std::min<size_t>(bytes.size(), size_t{1} << 30);
    const ssize_t wrote = pwrite(fd_, bytes.data(), n, offset);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0) return Error("write", errno);
    if (wrote == 0) return Error("write", EIO);
    bytes.remove_prefix(static_cast<size_t>(wrote));
    offset += wrote;
    written_ += wrote;
  }
  return absl::OkStatus();
}

absl::Status OutputFile::Commit() {
  if (fd_ < 0) return Error("write", EBADF);
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) {
    const int error = errno;
    unlink(temporary_.c_str());
    temporary_.clear();
    return Error("write", error);
  }
  if (rename(temporary_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    unlink(temporary_.c_str());
    temporary_.clear();
    return Error("rename a temporary file to", error);
  }
  temporary_.clear();
  return absl::OkStatus();
}

std::string WithoutTrailingSlashes(const std::string& path) {
  size_t end = path.size();
  while (end > 1 && path[end - 1] == '/') --end;
  return path.substr(0, end);
}

absl::StatusOr<std::string> CreateStagingDirectory(const std::string& path,
                                                   absl::string_view who) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string staging = NextTemporaryName(path);
    if (mkdir(staging.c_str(), 0755) == 0) return staging;
    if (errno != EEXIST) {
      return ValueErrorCat(who, ": cannot create a directory beside ",
                           QuotedPath(path), ": ", std::strerror(errno));
    }
  }
  return ValueErrorCat(who, ": cannot create a directory beside ",
                       QuotedPath(path), ": no free temporary name");
}

absl::Status RemoveTree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? absl::OkStatus()
                           : ValueErrorCat("cannot remove ", QuotedPath(path),
                                           ": ", std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    DIR* dir = opendir(path.c_str());
    if (dir == nullptr) {
      return ValueErrorCat("cannot remove ", QuotedPath(path), ": ",
                           std::strerror(errno));
    }
    std::vector<std::string> names;
    while (const dirent* entry = readdir(dir)) {
      const absl::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    closedir(dir);
    for (const std::string& name : names) {
      absl::Status removed = RemoveTree(absl::StrCat(path, "/", name));
      if (!removed.ok()) return removed;
    }
    if (rmdir(path.c_str()) != 0) {
      return ValueErrorCat("cannot remove ", QuotedPath(path), ": ",
                           std::strerror(errno));
    }
    return absl::OkStatus();
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ValueErrorCat("cannot remove ", QuotedPath(path), ": ",
                         std::strerror(errno));
  }
  return absl::OkStatus();
}

int RemoveLeftovers(const std::string& path) {
  const std::string directory = DirectoryOf(path);
  const std::string prefix = absl::StrCat(BaseOf(path), kTemporaryMark);
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return 0;
  std::vector<std::string> gone;
  while (const dirent* entry = readdir(dir)) {
    absl::string_view name = entry->d_name;
    if (!absl::ConsumePrefix(&name, prefix)) continue;
    const size_t dash = name.find('-');
    int64_t pid = 0;
    if (dash == absl::string_view::npos ||
        !absl::SimpleAtoi(name.substr(0, dash), &pid) || pid <= 0 ||
        pid > INT32_MAX) {
      continue;
    }
    if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      gone.push_back(absl::StrCat(directory, "/", entry->d_name));
    }
  }
  closedir(dir);
  int removed = 0;
  for (const std::string& leftover : gone) {
    if (RemoveTree(leftover).ok()) ++removed;
  }
  return removed;
}

absl::Status CheckDestination(const std::string& path, bool directory,
                              bool overwrite, absl::string_view who) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ValueErrorCat(who, ": cannot write ", QuotedPath(path), ": ",
                         std::strerror(errno));
  }
  if (directory != S_ISDIR(st.st_mode) ||
      (!directory && !S_ISREG(st.st_mode))) {
    return ValueErrorCat(
        who, ": cannot write ", QuotedPath(path), ": it exists ",
        S_ISDIR(st.st_mode) ? "as a directory" : "and is not a directory",
        "; it is not replaced");
  }
  if (directory && IsEmptyDirectory(path)) return absl::OkStatus();
  if (!overwrite) {
    return ValueErrorCat(who, ": ", QuotedPath(path),
                         " exists; --overwrite replaces it");
  }
  return absl::OkStatus();
}

absl::Status PublishDirectory(const std::string& staging,
                              const std::string& path, bool overwrite,
                              absl::string_view who) {
  if (rename(staging.c_str(), path.c_str()) == 0) return absl::OkStatus();
  if ((errno != ENOTEMPTY && errno != EEXIST) || !overwrite) {
    return ValueErrorCat(who, ": cannot rename ", QuotedPath(staging), " to ",
                         QuotedPath(path), ": ", std::strerror(errno));
  }
  // Swap the two in one step where the file system can (the old checkpoint
  // then sits under the staging name and is removed), else move the old one
  // aside first.
  if (renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, path.c_str(),
                RENAME_EXCHANGE) == 0) {
    return RemoveTree(staging);
  }
  const std::string aside = NextTemporaryName(path);
  if (rename(path.c_str(), aside.c_str()) != 0) {
    return ValueErrorCat(who, ": cannot replace ", QuotedPath(path), ": ",
                         std::strerror(errno));
  }
  if (rename(staging.c_str(), path.c_str()) != 0) {
    const int error = errno;
    rename(aside.c_str(), path.c_str());  // The old one back in place.
    return ValueErrorCat(who, ": cannot replace ", QuotedPath(path), ": ",
                         std::strerror(error));
  }
  return RemoveTree(aside);
}

absl::Status CheckCancel(const std::atomic<bool>* cancel,
                         absl::string_view who) {
  if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
    return absl::CancelledError(absl::StrCat(who, ": interrupted"));
  }
  return absl::OkStatus();
}

}  // namespace checkpoint_internal
}  // namespace strata
