// NOTE [ Files complete or absent ]
// The checkpoint writers never leave an incomplete file under a final name:
// each file is written to a temporary name beside it and renamed when
// complete, and a checkpoint directory is written whole into a staging
// directory beside its destination and renamed into place at the end (one
// rename: readers see the old directory or the new one). Temporary names are
// FINAL.strata-tmp-PID-N, so that a later writer of the same destination
// removes what a killed one left behind (RemoveLeftovers: those whose process
// is gone). On an error -- a full disk, a write error, a cancel from a
// signal -- the temporary files are removed and the message names the final
// file and the OS error.
#ifndef STRATA_CHECKPOINT_INTERNAL_ATOMIC_FILES_H_
#define STRATA_CHECKPOINT_INTERNAL_ATOMIC_FILES_H_

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace strata {
namespace checkpoint_internal {

// A file being written under a temporary name beside `path` (created with
// O_EXCL), renamed to `path` by Commit; removed when dropped uncommitted.
class OutputFile {
 public:
  // `who` opens each message ("WriteCheckpoint"), which names the file as
  // `shown` (`path` where empty: a staged file is shown by its final name).
  // ValueError naming it and the OS error when the temporary file cannot be
  // created.
  static absl::StatusOr<OutputFile> Create(const std::string& path,
                                           absl::string_view who,
                                           const std::string& shown = "");
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();

  // Writes all of `bytes` (retrying short writes and EINTR). ValueError
  // naming the final path and the OS error (ENOSPC: "No space left on
  // device").
  absl::Status Write(absl::string_view bytes);
  // Writes all of `bytes` at byte `offset` of the file (pwrite), for a
  // layout whose parts are made in another order than they lie.
  absl::Status WriteAt(int64_t offset, absl::string_view bytes);
  // Closes and renames over `path`; on error the temporary file is removed.
  absl::Status Commit();

  const std::string& path() const { return path_; }
  const std::string& temporary() const { return temporary_; }
  int64_t written() const { return written_; }

 private:
  OutputFile(std::string path, std::string temporary, std::string who,
             std::string shown, int fd)
      : path_(std::move(path)),
        temporary_(std::move(temporary)),
        who_(std::move(who)),
        shown_(std::move(shown)),
        fd_(fd) {}
  absl::Status Error(absl::string_view what, int error) const;
  std::string path_, temporary_, who_, shown_;
  int fd_ = -1;
  int64_t written_ = 0;
};

// `path` without trailing slashes ("out/" -> "out"; "/" stays).
std::string WithoutTrailingSlashes(const std::string& path);

// A new empty directory beside `path` named as a temporary of it.
absl::StatusOr<std::string> CreateStagingDirectory(const std::string& path,
                                                   absl::string_view who);

// Removes the temporaries of `path` (files or directories) whose process is
// no longer running; returns how many.
int RemoveLeftovers(const std::string& path);

// Removes a directory and everything in it (symbolic links, not what they
// lead to); OK when it does not exist.
absl::Status RemoveTree(const std::string& path);

// Whether `path` may become the destination: absent, an empty directory
// (for a directory), or anything of the same kind when `overwrite`.
// ValueError naming it otherwise ("exists; --overwrite replaces it").
absl::Status CheckDestination(const std::string& path, bool directory,
                              bool overwrite, absl::string_view who);

// Moves the complete `staging` directory to `path`: one rename where `path`
// is absent or an empty directory; where it holds a checkpoint (and
// `overwrite`), the old one is renamed aside, the new one renamed in, and the
// old one removed.
absl::Status PublishDirectory(const std::string& staging,
                              const std::string& path, bool overwrite,
                              absl::string_view who);

// CancelledError ("WHO: interrupted") when `cancel` is set.
absl::Status CheckCancel(const std::atomic<bool>* cancel,
                         absl::string_view who);

}  // namespace checkpoint_internal
}  // namespace strata

#endif  // STRATA_CHECKPOINT_INTERNAL_ATOMIC_FILES_H_
