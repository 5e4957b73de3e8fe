#include "checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "checkpoint/directory.h"
#include "checkpoint/gguf.h"
#include "checkpoint/internal/names.h"
#include "checkpoint/safetensors.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& path) {
  if (IsCheckpointCollection(path)) return ReadCheckpointDirectory(path);
  return checkpoint_internal::WithOpenFile("ReadCheckpoint", path, [&](int fd) {
    return ReadCheckpointFd(fd, path);
  });
}

absl::StatusOr<Checkpoint> ReadCheckpointFd(int fd, const std::string& path) {
  char magic[4] = {0, 0, 0, 0};
  const ssize_t got = pread(fd, magic, sizeof magic, 0);
  Checkpoint out;
  if (got == 4 && IsGgufMagic(absl::string_view(magic, 4))) {
    STRATA_ASSIGN_OR_RETURN(Gguf gguf, ReadGgufFd(fd, path));
    out.format = "gguf";
    for (GgufTensor& t : gguf.tensors) {
      out.tensors.push_back({std::move(t.name), std::move(t.tensor), ""});
    }
    return out;
  }
  STRATA_ASSIGN_OR_RETURN(Safetensors st, ReadSafetensorsFd(fd, path));
  out.format = "safetensors";
  for (SafetensorsTensor& t : st.tensors) {
    out.tensors.push_back({std::move(t.name), std::move(t.tensor), ""});
  }
  return out;
}

}  // namespace strata
