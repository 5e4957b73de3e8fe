// What the checkpoint readers and writers share: the safetensors dtype names,
// the text of names and shapes in messages, opening a file.
#ifndef STRATA_CHECKPOINT_INTERNAL_NAMES_H_
#define STRATA_CHECKPOINT_INTERNAL_NAMES_H_

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "dtype/dtype.h"
#include "util/errors.h"

namespace strata {
namespace checkpoint_internal {

// The key of a safetensors header's metadata object.
inline constexpr absl::string_view kMetadataKey = "__metadata__";

// The Strata dtype of a safetensors dtype name (the table of
// checkpoint/safetensors.h), or nullptr.
const SimpleDType* FromSafetensorsName(absl::string_view name);
// The safetensors name of a dtype, or empty.
absl::string_view ToSafetensorsName(const DType& dtype);

// "\"NAME\"", cut after 80 characters ("...").
std::string Quoted(absl::string_view s);
// A file's path in double quotes, whole (a path is at most PATH_MAX bytes):
// what a write error names.
std::string QuotedPath(absl::string_view path);
// "(2,3,64)".
std::string ShapeText(absl::Span<const int64_t> shape);

// The size of the regular file open as `fd`. Errors (ValueError beginning
// "READER: "): it cannot be stat'ed, or is not a regular file (a directory).
absl::StatusOr<int64_t> RegularFileSize(int fd, absl::string_view reader,
                                        const std::string& path);

// read_fd(fd) of `path` opened read-only, closed after. Errors (ValueError
// beginning "READER: "): the file cannot be opened; read_fd's.
template <typename ReadFd>
auto WithOpenFile(absl::string_view reader, const std::string& path,
                  ReadFd read_fd) -> decltype(read_fd(0)) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer forever;
  // this way it opens at once and is refused as not a regular file
  // (regular files ignore the flag).
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return ValueErrorCat(reader, ": cannot open ", Quoted(path), ": ",
                         std::strerror(errno));
  }
  auto result = read_fd(fd);
  close(fd);
  return result;
}

}  // namespace checkpoint_internal
}  // namespace strata

#endif  // STRATA_CHECKPOINT_INTERNAL_NAMES_H_
