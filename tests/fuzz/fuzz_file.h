// The fuzz input as an open file: the checkpoint readers read file
// descriptors (they map the file), so the fuzzers hand them a memory file.
#ifndef STRATA_TESTS_FUZZ_FUZZ_FILE_H_
#define STRATA_TESTS_FUZZ_FUZZ_FILE_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace strata {
namespace fuzz {

// A memory file holding data[0, size); -1 where it cannot be made.
inline int InputAsFile(const uint8_t* data, size_t size, const char* name) {
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return -1;
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) {
      close(fd);
      return -1;
    }
    done += n;
  }
  return fd;
}

}  // namespace fuzz
}  // namespace strata

#endif  // STRATA_TESTS_FUZZ_FUZZ_FILE_H_
