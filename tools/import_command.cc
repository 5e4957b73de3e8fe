#include "tools/import_command.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "checkpoint/checkpoint.h"
#include "core/mutation_snapshot.h"
#include "core/tensor.h"
#include "dtype/packing.h"
#include "proto/codec.h"
#include "tools/text_file.h"
#include "util/errors.h"

namespace strata {
namespace {

constexpr char kImportUsage[] =
    "usage: strata import PATH [--dump NAME [--data]]   (a safetensors or "
    "GGUF file, told by its first bytes; a sharded directory, its "
    "*.safetensors.index.json, or a GGUF split set; PATH '-' reads standard "
    "input)\n";

// "NAME: OK dtype=mxfp4 levels=2 shape=(2,3,64) snapshot=[c0@0,c1@0]".
std::string OkLine(const std::string& name, const Tensor& t) {
  return absl::StrCat(name, ": ", TensorLine(t));
}

// Standard input copied into a memory file (a pipe cannot be mapped); -1 with
// `reason` set on failure.
int StdinAsFile(std::string* reason) {
  const int fd = memfd_create("strata-import-stdin", MFD_CLOEXEC);
  if (fd < 0) {
    *reason = std::strerror(errno);
    return -1;
  }
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *reason = std::strerror(errno);
      close(fd);
      return -1;
    }
    if (n == 0) return fd;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = write(fd, buffer + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        *reason = std::strerror(errno);
        close(fd);
        return -1;
      }
      done += w;
    }
  }
}

}  // namespace

int ImportCommand(const std::vector<std::string>& args) {
  const bool dump = args.size() >= 3 && args[1] == "--dump";
  const bool data = dump && args.size() == 4 && args[3] == "--data";
  if (!(args.size() == 1 || (dump && args.size() == 3) || data)) {
    std::cerr << kImportUsage;
    return 2;
  }
  const std::string& file = args[0];
  absl::StatusOr<Checkpoint> read = absl::UnknownError("unread");
  if (file == "-") {
    std::string reason;
    const int fd = StdinAsFile(&reason);
    if (fd < 0) {
      std::cout << file << ": unreadable file\n";
      std::cerr << "strata import: cannot read standard input: " << reason
                << "\n";
      return 2;
    }
    read = ReadCheckpointFd(fd, file);
    close(fd);
  } else {
    read = ReadCheckpoint(file);
  }
  if (!read.ok()) {
    const absl::string_view message = read.status().message();
    if (IsValueError(read.status()) &&
        !absl::StrContains(message, "not a safetensors file") &&
        !absl::StrContains(message, "not a GGUF file")) {
      std::cout << file << ": unreadable file\n";
      std::cerr << "strata import: " << message << "\n";
    } else {
      std::cout << file << ": " << FormatError(read.status()) << "\n";
    }
    return 2;
  }
  if (!dump) {
    int status = 0;
    for (const CheckpointTensor& t : read->tensors) {
      // A directory or split set names each tensor's file (checkpoints.md
      // section 1): "NAME [FILE]: OK ...".
      const std::string label =
          t.file.empty() ? t.name : absl::StrCat(t.name, " [", t.file, "]");
      if (t.tensor.ok()) {
        std::cout << OkLine(label, *t.tensor) << "\n";
      } else {
        std::cout << label << ": " << FormatError(t.tensor.status()) << "\n";
        status = 1;
      }
    }
    return status;
  }
  const std::string& name = args[2];
  for (const CheckpointTensor& t : read->tensors) {
    if (t.name != name) continue;
    if (!t.tensor.ok()) {
      std::cout << t.name << ": " << FormatError(t.tensor.status()) << "\n";
      return 1;
    }
    if (data) {
      // Each carrier's bytes once (snapshot order); the text must stay under
      // kMaxTextBytes, checked before any byte is copied.
      int64_t total = 0;
      for (const CarrierVersion& v : t.tensor->Snapshot()) {
        const SimpleDType* simple = v.carrier->dtype().AsSimple();
        const absl::StatusOr<int64_t> bytes =
            StorageBytes(*simple, v.carrier->size());  // A mapped carrier's.
        if (!bytes.ok() || *bytes > kMaxTextBytes - total) {
          std::cout << t.name << ": "
                    << FormatError(ResourceExhaustedErrorCat(
                           "strata import: the carriers of \"", t.name,
                           "\" hold more than ", kMaxTextBytes,
                           " bytes of data, above the limit kMaxTextBytes = ",
                           kMaxTextBytes,
                           " bytes (64 MiB) of a representation text"))
                    << "\n";
          return 1;
        }
        total += *bytes;
      }
    }
    std::cout << ToText(ToProto(*t.tensor, {data}));
    return 0;
  }
  std::cout << name << ": "
            << FormatError(ValueErrorCat("strata import: ", file,
                                         " holds no tensor named \"", name,
                                         "\""))
            << "\n";
  return 1;
}

}  // namespace strata
