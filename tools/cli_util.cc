#include "tools/cli_util.h"

#include <sys/stat.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "carrier/carrier.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/packing.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "proto/codec.h"
#include "util/errors.h"

namespace strata {

// clang-format off
constexpr char kUsage[] =
    "usage:\n"
    "  strata demo\n"
    "  strata dump --example NAME | --list [--data]\n"
    "  strata validate FILE...        (FILE '-' reads standard input)\n"
    "  strata view FILE OP ARGS...    OP: permute PERM | slice DIM START STOP STEP |\n"
    "                                 reshape SHAPE | as_strided LAYOUT OFFSET |\n"
    "                                 broadcast_to SHAPE | broadcast_in_dim SHAPE DIMS |\n"
    "                                 squeeze [DIM] | unsqueeze DIM\n"
    "  strata layout --batch FILE     (FILE '-' reads standard input)\n"
    "  strata layout --show LAYOUT\n"
    "  strata quantize FORMAT SHAPE BLOCKED_MODE [--scale-layout row_major|swizzled_128x4]\n"
    "                  --input FILE   (FORMAT any block-scaled dtype; BLOCKED_MODE '-' where\n"
    "                                 the format fixes its blocks; FILE '-' reads standard\n"
    "                                 input: prod(SHAPE) float32 values, little-endian)\n"
    "  strata import FILE [--dump NAME [--data]]   (a safetensors or GGUF file)\n"
    "  strata shard FILE NAME DIM PARTS   (a checkpoint, or a text dump with NAME '-')\n"
    "  strata dequantize FILE NAME [--dtype float32|bfloat16|float16] [--out OUT.npy]\n"
    "                                 (a checkpoint, or '-' '-': a text dump on standard input)\n"
    "  strata convert SRC DST --to T [--scale-layout row_major] [--only REGEX] [--skip REGEX]\n"
    "                 [--max-shard-size SIZE] [--overwrite] [--quiet]\n"
    "                                 (a whole checkpoint; DST ending in .gguf writes GGUF)\n";
// clang-format on

int Usage() {
  std::cerr << kUsage;
  return 2;
}

// True when `path` names a directory: an ifstream opens one without error.
bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// "(4,64)": the top-level extents of L_0. Linear in the number of leaves
// (Layout::mode(i) walks the tokens from the start: a text may hold a
// placement of millions of modes).
std::string TopLevelShape(const Layout& layout) {
  const IntTuple& shape = layout.shape();
  const IntTuple::Elements elements = shape.TopElements();
  const absl::Span<const int64_t> leaves = shape.leaves();
  std::vector<int64_t> extents;
  extents.reserve(elements.size());
  for (int i = 0; i < elements.size(); ++i) {
    int64_t extent = 1;
    bool overflow = false;
    for (int k = elements.leaf[i]; k < elements.leaf[i + 1]; ++k) {
      overflow |= __builtin_mul_overflow(extent, leaves[k], &extent);
    }
    extents.push_back(overflow ? layout.mode(i).size() : extent);
  }
  return absl::StrCat("(", absl::StrJoin(extents, ","), ")");
}

// One validate line for `replayed`, e.g. "OK dtype=float32 levels=1 shape=(4,8)
// ...".
std::string OkLine(const Replayed& replayed) {
  const Tensor& t = replayed.tensor;
  std::vector<std::string> snapshot;
  for (const CarrierVersion& entry : t.Snapshot()) {
    for (const auto& [carrier, id] : replayed.carrier_ids) {
      if (carrier == entry.carrier)
        snapshot.push_back(absl::StrCat(id, "@", entry.version));
    }
  }
  return absl::StrCat("OK dtype=", t.dtype().name(),
                      " levels=", t.num_subtensors(),
                      " shape=", TopLevelShape(t.layout()), " snapshot=[",
                      absl::StrJoin(snapshot, ","), "]");
}

// "(1,0)" or "2": the integers of a flat tuple.
absl::StatusOr<std::vector<int64_t>> IntegersArg(const std::string& what,
                                                 const std::string& text) {
  auto value = ParseIntTuple(text);
  if (!value.ok()) return WithContext(value.status(), what);
  if (value->depth() > 1) {
    return TypeErrorCat(what, ": \"", text,
                        "\" is not a flat tuple of integers");
  }
  const auto leaves = value->leaves();
  return std::vector<int64_t>(leaves.begin(), leaves.end());
}

absl::StatusOr<int64_t> ExactIntegerArg(const std::string& what,
                                        const std::string& text) {
  const size_t digits = !text.empty() && text[0] == '-' ? 1 : 0;
  const bool decimal =
      text.size() > digits &&
      text.find_first_not_of("0123456789", digits) == std::string::npos;
  if (!decimal) {
    return TypeErrorCat(what, ": \"", text,
                        "\" is not an integer (an optional '-' and digits)");
  }
  int64_t value;
  if (!absl::SimpleAtoi(text, &value)) {
    return ValueErrorCat(what, ": ", text, " is outside int64");
  }
  return value;
}

// A tuple argument (a SHAPE).
absl::StatusOr<IntTuple> TupleArg(const std::string& what,
                                  const std::string& text) {
  auto value = ParseIntTuple(text);
  if (!value.ok()) return WithContext(value.status(), what);
  return *std::move(value);
}

// The data bytes a dump of `t` with data would hold (each carrier once);
// ResourceExhaustedError above kMaxTextBytes, before any byte is copied: a
// text replayed without data may name zero-filled carriers of gigabytes.
absl::Status CheckDumpDataFits(const Tensor& t) {
  std::vector<const Carrier*> seen;
  int64_t total = 0;
  for (const Subtensor& s : TensorAccess::representation(t).subtensors()) {
    const Carrier* c = s.carrier.get();
    if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
    seen.push_back(c);
    const SimpleDType* simple = c->dtype().AsSimple();
    if (simple == nullptr || c->data() == nullptr) continue;
    const absl::StatusOr<int64_t> bytes = StorageBytes(*simple, c->size());
    if (!bytes.ok() || *bytes > kMaxTextBytes - total) {
      return ResourceExhaustedErrorCat(
          "strata view: the view's carriers hold more than ", kMaxTextBytes,
          " bytes of data (carrier of ", c->size(), " ", c->dtype().name(),
          " values), above the limit kMaxTextBytes = ", kMaxTextBytes,
          " bytes (64 MiB) of a representation text");
    }
    total += *bytes;
  }
  return absl::OkStatus();
}

}  // namespace strata
