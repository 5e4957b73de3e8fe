#include "tools/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/mutation_snapshot.h"
#include "proto/codec.h"
#include "util/errors.h"

namespace strata {

// Reads FILE ('-' = standard input), at most kMaxTextBytes bytes. A directory,
// a file that cannot be opened or read, and a text over the limit are refused
// before anything is parsed.
ReadText ReadTextFile(const std::string& path) {
  ReadText result;
  const int fd =
      path == "-" ? STDIN_FILENO : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    result.outcome = ReadText::kUnreadable;
    result.reason = std::strerror(errno);
    return result;
  }
  struct stat st;
  if (fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      result.outcome = ReadText::kUnreadable;
      result.reason = "is a directory";
    } else if (S_ISREG(st.st_mode) && st.st_size > kMaxTextBytes) {
      result.outcome = ReadText::kTooLarge;
      result.size = st.st_size;
    }
  }
  char buffer[1 << 16];
  while (result.outcome == ReadText::kRead) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      result.outcome = ReadText::kUnreadable;
      result.reason = std::strerror(errno);
    } else if (n == 0) {
      break;
    } else if (static_cast<int64_t>(result.text.size()) + n > kMaxTextBytes) {
      result.outcome = ReadText::kTooLarge;
    } else {
      result.text.append(buffer, n);
    }
  }
  if (fd != STDIN_FILENO) close(fd);
  if (result.outcome != ReadText::kRead) result.text.clear();
  return result;
}

// The error line of a text over the limit, e.g. "ResourceExhaustedError:
// strata validate: big.textproto holds 92000174 bytes, above ...".
std::string TooLargeLine(const std::string& command, const std::string& path,
                         int64_t size) {
  return FormatError(ResourceExhaustedErrorCat(
      "strata ", command, ": ", path, " holds ",
      size >= 0 ? absl::StrCat(size)
                : absl::StrCat("more than ", kMaxTextBytes),
      " bytes, above the limit kMaxTextBytes = ", kMaxTextBytes,
      " bytes (64 MiB) of a representation text"));
}

// Reads and parses FILE for `command`. On failure prints the answer line
// (stdout) and the diagnostic (stderr) and returns false; the exit status is 2.
bool ReadProto(const std::string& command, const std::string& path,
               proto::RepresentationProto* proto) {
  ReadText read = ReadTextFile(path);
  if (read.outcome == ReadText::kUnreadable) {
    std::cout << path << ": unreadable file\n";
    std::cerr << "strata " << command << ": cannot read " << path << ": "
              << read.reason << "\n";
    return false;
  }
  if (read.outcome == ReadText::kTooLarge) {
    std::cout << path << ": " << TooLargeLine(command, path, read.size) << "\n";
    return false;
  }
  auto parsed = ParseText(read.text);
  if (!parsed.ok()) {
    std::cout << path << ": " << FormatError(parsed.status()) << "\n";
    return false;
  }
  *proto = *std::move(parsed);
  return true;
}

std::string TensorLine(const Tensor& tensor) {
  std::vector<std::string> snapshot;
  int64_t id = 0;
  for (const CarrierVersion& entry : tensor.Snapshot()) {
    snapshot.push_back(absl::StrCat(CarrierId(id++), "@", entry.version));
  }
  return absl::StrCat("OK dtype=", tensor.dtype().name(),
                      " levels=", tensor.num_subtensors(), " shape=(",
                      absl::StrJoin(tensor.shape(), ","), ") snapshot=[",
                      absl::StrJoin(snapshot, ","), "]");
}

}  // namespace strata
