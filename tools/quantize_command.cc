// strata quantize FORMAT SHAPE BLOCKED_MODE [--scale-layout L] --input FILE.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/quantize.h"
#include "proto/codec.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/text_file.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

// strata quantize FORMAT SHAPE BLOCKED_MODE [--scale-layout L] --input FILE
// (representation-cli.md): exit 0 with the text, 1 with "<Kind>: <message>"
// for a rejected argument, 2 for an unreadable file or one whose length is not
// 4 * prod(SHAPE) bytes, or a usage error.
int QuantizeCommand(const std::vector<std::string>& args) {
  if (args.size() < 3) return Usage();
  std::string scale_layout_name = "row_major", input;
  bool have_input = false;
  for (size_t i = 3; i < args.size(); i += 2) {
    if (i + 1 >= args.size()) return Usage();
    if (args[i] == "--scale-layout") {
      scale_layout_name = args[i + 1];
    } else if (args[i] == "--input" && !have_input) {
      input = args[i + 1];
      have_input = true;
    } else {
      return Usage();
    }
  }
  if (!have_input) return Usage();
  auto reject = [](const absl::Status& status) {
    std::cout << FormatError(status) << "\n";
    return 1;
  };
  // The arguments, before the file is read.
  const CompoundDType* format = nullptr;
  if (auto named = DTypeRegistry::Global().Lookup(args[0]); named.ok()) {
    format = (*named)->AsCompound();
  }
  if (format == nullptr || FindBlockScaleRule(*format) == nullptr) {
    return reject(ValueErrorCat("strata quantize: FORMAT \"", args[0],
                                "\" is not a block-scaled dtype"));
  }
  auto shape = IntegersArg("strata quantize: SHAPE", args[1]);
  if (!shape.ok()) return reject(shape.status());
  int64_t count = 1;
  for (int64_t extent : *shape) {
    if (extent < 0) {
      return reject(ValueErrorCat("strata quantize: SHAPE ", args[1],
                                  " has the negative extent ", extent));
    }
    if (!CheckedMul(count, extent, &count) || count > (int64_t{1} << 60)) {
      return reject(ValueErrorCat("strata quantize: SHAPE ", args[1],
                                  " holds more than 2^60 values"));
    }
  }
  // '-' where the format fixes its blocks; a negative mode counts from the
  // end (-1 the last).
  // formats.md: '-' exactly where the table fixes the blocks, an integer
  // exactly (an optional '-' and digits) where the caller chooses the mode.
  absl::StatusOr<int64_t> mode = kBlocksOfTheFormat;
  const BlockScaling& scaling = FindBlockScaleRule(*format)->scaling();
  if (!scaling.chosen_mode && args[2] != "-") {
    return reject(ValueErrorCat(
        "strata quantize: ", format->name(), " fixes its blocks (",
        scaling.Describe(), "): BLOCKED_MODE is '-', not \"", args[2], "\""));
  }
  if (args[2] != "-") {
    mode = ExactIntegerArg("strata quantize: BLOCKED_MODE", args[2]);
    if (!mode.ok()) return reject(mode.status());
    const int64_t rank = static_cast<int64_t>(shape->size());
    if (*mode < 0 && *mode >= -rank) *mode += rank;
  }
  ScaleLayout scale_layout;
  if (scale_layout_name == "row_major") {
    scale_layout = ScaleLayout::kRowMajor;
  } else if (scale_layout_name == "swizzled_128x4") {
    scale_layout = ScaleLayout::kSwizzled128x4;
  } else {
    return reject(ValueErrorCat("strata quantize: --scale-layout \"",
                                scale_layout_name,
                                "\" is not row_major or swizzled_128x4"));
  }
  std::vector<IntTuple> extents(shape->begin(), shape->end());
  auto layout = Layout::RowMajor(IntTuple::Tuple(extents));
  if (!layout.ok()) return reject(layout.status());
  // The file: exactly 4 * count bytes (read up to one byte more).
  const int64_t expected = 4 * count;
  const int fd =
      input == "-" ? STDIN_FILENO : open(input.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))) {
    const std::string reason = fd < 0 ? std::strerror(errno) : "is a directory";
    if (fd >= 0) close(fd);
    std::cout << input << ": unreadable file\n";
    std::cerr << "strata quantize: cannot read " << input << ": " << reason
              << "\n";
    return 2;
  }
  if (S_ISREG(st.st_mode) && fd != STDIN_FILENO && st.st_size != expected) {
    close(fd);
    std::cout << input << ": wrong length: " << st.st_size
              << " bytes, expected " << expected << " (" << count
              << " float32 values of shape " << args[1] << ")\n";
    return 2;
  }
  if (expected > kMaxTextBytes) {
    if (fd != STDIN_FILENO) close(fd);
    return reject(ResourceExhaustedErrorCat(
        "strata quantize: ", count, " float32 values (", expected,
        " bytes) are above the limit kMaxTextBytes = ", kMaxTextBytes,
        " bytes (64 MiB) of a representation text"));
  }
  auto carrier = HostCarrier::Create(*dtypes::Float32(), count);
  if (!carrier.ok()) {
    if (fd != STDIN_FILENO) close(fd);
    return reject(carrier.status());
  }
  auto* bytes = static_cast<char*>((*carrier)->mutable_data());
  int64_t got = 0;
  bool failed = false;
  char extra;
  while (true) {
    char* to = got < expected ? bytes + got : &extra;
    const int64_t want = got < expected ? expected - got : 1;
    const ssize_t n = read(fd, to, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) failed = true;
    if (n <= 0) break;
    got += n;
    if (got > expected) break;
  }
  const std::string reason = failed ? std::strerror(errno) : "";
  if (fd != STDIN_FILENO) close(fd);
  if (failed) {
    std::cout << input << ": unreadable file\n";
    std::cerr << "strata quantize: cannot read " << input << ": " << reason
              << "\n";
    return 2;
  }
  if (got != expected) {
    std::cout << input
              << ": wrong length: " << (got > expected ? "more than " : "")
              << got << " bytes, expected " << expected << " (" << count
              << " float32 values of shape " << args[1] << ")\n";
    return 2;
  }
  // Little-endian on disk; this host's order otherwise.
  if (!(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)) {
    for (int64_t i = 0; i < expected; i += 4) {
      std::swap(bytes[i], bytes[i + 3]);
      std::swap(bytes[i + 1], bytes[i + 2]);
    }
  }
  auto source = Tensor::Create(*carrier, 0, *layout);
  if (!source.ok()) return reject(source.status());
  auto q = QuantizeBlockScaled(*source, *format, *mode, scale_layout);
  if (!q.ok()) return reject(q.status());
  const std::string text = ToText(ToProto(*q, {/*include_data=*/true}));
  if (static_cast<int64_t>(text.size()) > kMaxTextBytes) {
    return reject(ResourceExhaustedErrorCat(
        "strata quantize: the text holds ", text.size(),
        " bytes, above the limit kMaxTextBytes = ", kMaxTextBytes,
        " bytes (64 MiB) of a representation text"));
  }
  std::cout << text;
  return 0;
}

}  // namespace strata
