// The `strata` command-line tool (shared/design/representation-cli.md,
// layout-cli.md).
//
// clang-format off
//   strata demo                  the main job
//   strata dump --example NAME   an example representation as text
//   strata dump --list           the example names
//   strata validate FILE...      replay each text file, report OK or the error
//   strata view FILE OP ARGS...  replay FILE, apply one view, print it
//   strata layout --batch FILE   layout algebra requests, one answer line each
//   strata layout --show LAYOUT  a rank-1 or rank-2 layout drawn as a table
//   strata quantize FORMAT SHAPE BLOCKED_MODE [--scale-layout row_major|swizzled_128x4] --input FILE
//                                quantize float32 values, print the Tensor
//   strata import FILE           a safetensors file's tensors (import_command.h)
// clang-format on
//
// Texts are read up to kMaxTextBytes (proto/codec.h, 64 MiB); a longer one, a
// directory or an unreadable file is exit status 2.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "carrier/carrier.h"
#include "carrier/carrier_registry.h"
#include "core/errors.h"
#include "core/representation.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/batch.h"
#include "layout/checked_math.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "layout/show.h"
#include "ops/quantize.h"
#include "proto/codec.h"
#include "proto/examples.h"
#include "tools/demo_command.h"
#include "tools/import_command.h"
#include "tools/shard_command.h"
#include "tools/text_file.h"
#include "views/views.h"

namespace strata {
namespace {

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
    "  strata shard FILE NAME DIM PARTS   (a checkpoint, or a text dump with NAME '-')\n";
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

int LayoutCommand(const std::vector<std::string>& args) {
  if (args.size() == 2 && args[0] == "--batch") {
    if (args[1] == "-") return RunLayoutBatch(std::cin, std::cout);
    std::ifstream in(args[1]);
    if (!in || IsDirectory(args[1])) {
      std::cerr << "strata layout: cannot read " << args[1] << "\n";
      return 2;
    }
    return RunLayoutBatch(in, std::cout);
  }
  if (args.size() == 2 && args[0] == "--show") {
    auto layout = ParseLayout(args[1]);
    if (!layout.ok()) {
      std::cout << "error: " << FormatError(layout.status()) << "\n";
      return 1;
    }
    auto table = ShowLayout(*layout);
    if (!table.ok()) {
      std::cout << "error: " << FormatError(table.status()) << "\n";
      return 1;
    }
    std::cout << *table;
    return 0;
  }
  return Usage();
}

std::string SnapshotText(const MutationSnapshot& snapshot,
                         const std::vector<const Carrier*>& names) {
  std::vector<std::string> parts;
  for (const CarrierVersion& entry : snapshot) {
    size_t id = 0;
    while (id < names.size() && names[id] != entry.carrier) ++id;
    parts.push_back(absl::StrCat(CarrierId(id), "@", entry.version));
  }
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

int DumpCommand(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "--list") {
    for (const std::string& name : ExampleNames()) std::cout << name << "\n";
    return 0;
  }
  const bool data = args.size() == 3 && args[2] == "--data";
  if ((args.size() != 2 && !data) || args[0] != "--example") return Usage();
  auto tensor = MakeExample(args[1]);
  if (!tensor.ok()) {
    std::cerr << "strata dump: " << FormatError(tensor.status()) << "\n";
    return 2;
  }
  std::cout << ToText(ToProto(*tensor, {data}));
  return 0;
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

// A tuple argument (a SHAPE).
absl::StatusOr<IntTuple> TupleArg(const std::string& what,
                                  const std::string& text) {
  auto value = ParseIntTuple(text);
  if (!value.ok()) return WithContext(value.status(), what);
  return *std::move(value);
}

struct ViewOp {
  const char* name;
  size_t min_args;
  size_t max_args;
};
constexpr ViewOp kViewOps[] = {
    {"permute", 1, 1},    {"slice", 4, 4},        {"reshape", 1, 1},
    {"as_strided", 2, 2}, {"broadcast_to", 1, 1}, {"broadcast_in_dim", 2, 2},
    {"squeeze", 0, 1},    {"unsqueeze", 1, 1},
};

absl::StatusOr<Tensor> ApplyView(const Tensor& t, const std::string& op,
                                 const std::vector<std::string>& a) {
  if (op == "permute") {
    STRATA_ASSIGN_OR_RETURN(auto perm, IntegersArg("permute PERM", a[0]));
    return Permute(t, perm);
  }
  if (op == "slice") {
    static constexpr const char* kNames[] = {"slice DIM", "slice START",
                                             "slice STOP", "slice STEP"};
    int64_t v[4];
    for (int i = 0; i < 4; ++i) {
      STRATA_ASSIGN_OR_RETURN(v[i], ParseInt64(a[i], kNames[i]));
    }
    return Slice(t, v[0], v[1], v[2], v[3]);
  }
  if (op == "reshape" || op == "broadcast_to" || op == "broadcast_in_dim") {
    STRATA_ASSIGN_OR_RETURN(IntTuple tuple, TupleArg(op + " SHAPE", a[0]));
    // A nested element of SHAPE counts as its size (the tool's notation).
    std::vector<int64_t> shape;
    const int rank = tuple.is_leaf() ? 1 : tuple.rank();
    for (int i = 0; i < rank; ++i) {
      const IntTuple element = tuple.is_leaf() ? tuple : tuple[i];
      int64_t size = 1;
      for (int64_t leaf : element.leaves()) {
        if (leaf < 0 || !CheckedMul(size, leaf, &size)) {
          return ValueErrorCat(op, " SHAPE: ", a[0],
                               " has a negative or overflowing extent");
        }
      }
      shape.push_back(size);
    }
    if (op == "reshape") return Reshape(t, shape);
    if (op == "broadcast_to") return BroadcastTo(t, shape);
    STRATA_ASSIGN_OR_RETURN(auto dims, IntegersArg(op + " DIMS", a[1]));
    return BroadcastInDim(t, shape, dims);
  }
  if (op == "as_strided") {
    auto layout = ParseLayout(a[0]);
    if (!layout.ok()) return WithContext(layout.status(), "as_strided LAYOUT");
    STRATA_ASSIGN_OR_RETURN(int64_t offset,
                            ParseInt64(a[1], "as_strided OFFSET"));
    return AsStrided(t, *layout, offset);
  }
  if (op == "squeeze") {
    if (a.empty()) return Squeeze(t);
    STRATA_ASSIGN_OR_RETURN(int64_t dim, ParseInt64(a[0], "squeeze DIM"));
    return Squeeze(t, dim);
  }
  STRATA_ASSIGN_OR_RETURN(int64_t dim, ParseInt64(a[0], "unsqueeze DIM"));
  return Unsqueeze(t, dim);
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

int ViewCommand(const std::vector<std::string>& args) {
  if (args.size() < 2) return Usage();
  const std::string& file = args[0];
  const std::string& op = args[1];
  const std::vector<std::string> op_args(args.begin() + 2, args.end());
  bool known = false;
  for (const ViewOp& v : kViewOps) {
    known |= op == v.name && op_args.size() >= v.min_args &&
             op_args.size() <= v.max_args;
  }
  if (!known) return Usage();
  proto::RepresentationProto proto;
  if (!ReadProto("view", file, &proto)) return 2;
  auto source = Replay(proto);
  if (!source.ok()) {
    std::cout << file << ": " << FormatError(source.status()) << "\n";
    return 1;
  }
  auto view = ApplyView(*source, op, op_args);
  if (!view.ok()) {
    std::cout << file << ": " << FormatError(view.status()) << "\n";
    return 1;
  }
  bool with_data = false;
  for (const auto& c : proto.carriers()) with_data |= !c.data().empty();
  if (with_data) {
    const absl::Status fits = CheckDumpDataFits(*view);
    if (!fits.ok()) {
      std::cout << file << ": " << FormatError(fits) << "\n";
      return 1;
    }
  }
  const std::string text = ToText(ToProto(*view, {with_data}));
  if (static_cast<int64_t>(text.size()) > kMaxTextBytes) {
    std::cout << file << ": "
              << FormatError(ResourceExhaustedErrorCat(
                     "strata view: the view's text holds ", text.size(),
                     " bytes, above the limit kMaxTextBytes = ", kMaxTextBytes,
                     " bytes (64 MiB) of a representation text"))
              << "\n";
    return 1;
  }
  std::cout << text;
  return 0;
}

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
  absl::StatusOr<int64_t> mode = kBlocksOfTheFormat;
  if (args[2] != "-") {
    mode = ParseInt64(args[2], "strata quantize: BLOCKED_MODE");
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

int ValidateCommand(const std::vector<std::string>& files) {
  if (files.empty()) return Usage();
  int exit_status = 0;
  for (const std::string& file : files) {
    proto::RepresentationProto proto;
    if (!ReadProto("validate", file, &proto)) {
      exit_status = 2;
      continue;
    }
    auto replayed = ReplayWithIds(proto);
    if (!replayed.ok()) {
      std::cout << file << ": " << FormatError(replayed.status()) << "\n";
      exit_status = std::max(exit_status, 1);
      continue;
    }
    std::cout << file << ": " << OkLine(*replayed) << "\n";
  }
  return exit_status;
}

// The demo's steps; every result is checked, and the first failure ends it.
}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return strata::Usage();
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "demo" && args.empty()) return strata::DemoCommand();
  if (command == "layout") return strata::LayoutCommand(args);
  if (command == "dump") return strata::DumpCommand(args);
  if (command == "validate") return strata::ValidateCommand(args);
  if (command == "view") return strata::ViewCommand(args);
  if (command == "quantize") return strata::QuantizeCommand(args);
  if (command == "import") return strata::ImportCommand(args);
  if (command == "shard") return strata::ShardCommand(args);
  return strata::Usage();
}
