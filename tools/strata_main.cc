// The `strata` command-line tool (shared/design/representation-cli.md,
// layout-cli.md).
//
//   strata demo                     the main job
//   strata dump --example NAME      an example representation as text (--list:
//   names) strata validate FILE...         replay each text file and report OK
//   or the error strata layout --batch FILE      layout algebra requests, one
//   answer line each strata layout --show LAYOUT     a rank-1 or rank-2 layout
//   drawn as a table
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "carrier/carrier_registry.h"
#include "core/errors.h"
#include "core/representation.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "dtype/registry.h"
#include "layout/batch.h"
#include "layout/layout.h"
#include "layout/show.h"
#include "ops/quantize.h"
#include "proto/codec.h"
#include "proto/examples.h"
#include "views/views.h"

namespace strata {
namespace {

constexpr char kUsage[] =
    "usage:\n"
    "  strata demo\n"
    "  strata dump --example NAME | --list [--data]\n"
    "  strata validate FILE...        (FILE '-' reads standard input)\n"
    "  strata view FILE OP ARGS...    OP: permute PERM | slice DIM START STOP "
    "STEP |\n"
    "                                 reshape SHAPE | as_strided LAYOUT OFFSET "
    "|\n"
    "                                 broadcast_to SHAPE | broadcast_in_dim "
    "SHAPE DIMS |\n"
    "                                 squeeze [DIM] | unsqueeze DIM\n"
    "  strata layout --batch FILE     (FILE '-' reads standard input)\n"
    "  strata layout --show LAYOUT\n";

int Usage() {
  std::cerr << kUsage;
  return 2;
}

int LayoutCommand(const std::vector<std::string>& args) {
  if (args.size() == 2 && args[0] == "--batch") {
    if (args[1] == "-") return RunLayoutBatch(std::cin, std::cout);
    std::ifstream in(args[1]);
    if (!in) {
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
    parts.push_back(absl::StrCat("c", id, "@", entry.version));
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

// "(4,64)": the top-level extents of L_0.
std::string TopLevelShape(const Layout& layout) {
  std::vector<int64_t> extents;
  for (int i = 0; i < layout.rank(); ++i)
    extents.push_back(layout.mode(i).size());
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

// Reads FILE ('-' = standard input); false when unreadable.
bool ReadFile(const std::string& path, std::string* text) {
  std::ostringstream buffer;
  if (path == "-") {
    buffer << std::cin.rdbuf();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    buffer << in.rdbuf();
    if (in.bad()) return false;
  }
  *text = buffer.str();
  return true;
}

absl::StatusOr<int64_t> IntegerArg(const std::string& text) {
  STRATA_ASSIGN_OR_RETURN(IntTuple value, ParseIntTuple(text));
  if (!value.is_leaf()) return TypeErrorCat("\"", text, "\" is not an integer");
  return value.value();
}

// "(1,0)" or "2": the integers of a flat tuple.
absl::StatusOr<std::vector<int64_t>> IntegersArg(const std::string& text) {
  STRATA_ASSIGN_OR_RETURN(IntTuple value, ParseIntTuple(text));
  if (value.depth() > 1) {
    return TypeErrorCat("\"", text, "\" is not a flat tuple of integers");
  }
  const auto leaves = value.leaves();
  return std::vector<int64_t>(leaves.begin(), leaves.end());
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
    STRATA_ASSIGN_OR_RETURN(auto perm, IntegersArg(a[0]));
    return Permute(t, perm);
  }
  if (op == "slice") {
    int64_t v[4];
    for (int i = 0; i < 4; ++i) {
      STRATA_ASSIGN_OR_RETURN(v[i], IntegerArg(a[i]));
    }
    return Slice(t, v[0], v[1], v[2], v[3]);
  }
  if (op == "reshape" || op == "broadcast_to" || op == "broadcast_in_dim") {
    STRATA_ASSIGN_OR_RETURN(IntTuple shape, ParseIntTuple(a[0]));
    if (op == "reshape") return Reshape(t, shape);
    if (op == "broadcast_to") return BroadcastTo(t, shape);
    STRATA_ASSIGN_OR_RETURN(auto dims, IntegersArg(a[1]));
    return BroadcastInDim(t, shape, dims);
  }
  if (op == "as_strided") {
    STRATA_ASSIGN_OR_RETURN(Layout layout, ParseLayout(a[0]));
    STRATA_ASSIGN_OR_RETURN(int64_t offset, IntegerArg(a[1]));
    return AsStrided(t, layout, offset);
  }
  if (op == "squeeze") {
    if (a.empty()) return Squeeze(t);
    STRATA_ASSIGN_OR_RETURN(int64_t dim, IntegerArg(a[0]));
    return Squeeze(t, dim);
  }
  STRATA_ASSIGN_OR_RETURN(int64_t dim, IntegerArg(a[0]));
  return Unsqueeze(t, dim);
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
  std::string text;
  if (!ReadFile(file, &text)) {
    std::cerr << "strata view: cannot read " << file << "\n";
    return 2;
  }
  auto proto = ParseText(text);
  if (!proto.ok()) {
    std::cout << file << ": " << FormatError(proto.status()) << "\n";
    return 2;
  }
  auto source = Replay(*proto);
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
  for (const auto& c : proto->carriers()) with_data |= !c.data().empty();
  std::cout << ToText(ToProto(*view, {with_data}));
  return 0;
}

int ValidateCommand(const std::vector<std::string>& files) {
  if (files.empty()) return Usage();
  int exit_status = 0;
  for (const std::string& file : files) {
    std::string text;
    if (!ReadFile(file, &text)) {
      std::cout << file << ": unreadable file\n";
      std::cerr << "strata validate: cannot read " << file << "\n";
      exit_status = 2;
      continue;
    }
    auto proto = ParseText(text);
    if (!proto.ok()) {
      std::cout << file << ": " << FormatError(proto.status()) << "\n";
      exit_status = 2;
      continue;
    }
    auto replayed = ReplayWithIds(*proto);
    if (!replayed.ok()) {
      std::cout << file << ": " << FormatError(replayed.status()) << "\n";
      exit_status = std::max(exit_status, 1);
      continue;
    }
    std::cout << file << ": " << OkLine(*replayed) << "\n";
  }
  return exit_status;
}

int Demo() {
  std::cout
      << "Strata demo: how one logical Tensor is built from typed storage.\n\n";
  std::cout << "Registered dtypes: "
            << absl::StrJoin(DTypeRegistry::Global().Names(), " ") << "\n";
  std::cout << "Carrier classes:   "
            << absl::StrJoin(CarrierClassRegistry::Global().Names(), " ")
            << "\n\n";

  // 1. A conventional float32 Tensor: one carrier, one placement layout.
  auto carrier = HostCarrier::Create(dtypes::Float32(), 32);
  auto tensor = Tensor::Create(*carrier, 0, *ParseLayout("(4,8):(8,1)"));
  if (!tensor.ok()) {
    std::cout << FormatError(tensor.status()) << "\n";
    return 1;
  }
  std::cout << "1. Conventional Tensor: float32, shape (4,8), row-major\n"
            << "   Tensor::Create(host carrier of 32 values, offset 0, "
            << tensor->layout().ToString() << ")\n"
            << "   dtype=" << tensor->dtype().name()
            << " levels=" << tensor->num_subtensors()
            << " size=" << tensor->size() << " snapshot="
            << SnapshotText(tensor->Snapshot(), {tensor->carrier().get()})
            << "\n";
  auto overfull = Tensor::Create(*carrier, 4, *ParseLayout("(4,8):(8,1)"));
  std::cout << "   The same placement at offset 4 is rejected:\n     "
            << FormatError(overfull.status()) << "\n\n";

  // 2. Quantize a float32 (4,64) Tensor to mxfp8_e4m3: fp8 values + one e8m0
  // scale
  //    per 32 values of the last mode, linked by a stride-0 adjacent layout.
  auto source_carrier = HostCarrier::Create(dtypes::Float32(), 4 * 64);
  auto* source_values = static_cast<float*>((*source_carrier)->mutable_data());
  for (int i = 0; i < 4 * 64; ++i) {
    source_values[i] = std::ldexp(std::sin(0.37f * i), i / 32 - 2);
  }
  const Tensor source =
      *Tensor::Create(*source_carrier, 0, *ParseLayout("(4,64):(64,1)"));
  auto quantized = QuantizeBlockScaled(source, *dtypes::MXFP8E4M3(), 1);
  if (!quantized.ok()) {
    std::cout << FormatError(quantized.status()) << "\n";
    return 1;
  }
  const Tensor& mx = *quantized;
  const Representation& rep = mx.representation();
  const auto* scale_codes =
      static_cast<const uint8_t*>(rep.subtensor(1).carrier->data());
  std::vector<std::string> scale_text;
  for (int i = 0; i < 8; ++i) {
    scale_text.push_back(
        absl::StrCat("2^", static_cast<int>(scale_codes[i]) - 127));
  }
  std::cout << "2. Block-scaled Tensor: QuantizeBlockScaled(float32 (4,64), "
               "mxfp8_e4m3, "
               "blocked mode 1)\n"
            << "   level 0 (values, float8_e4m3fn):  L_0 = "
            << rep.subtensor(0).placement.ToString() << "\n"
            << "   level 1 (scales, float8_e8m0fnu): L_1 = "
            << rep.subtensor(1).placement.ToString() << "\n"
            << "   adjacent S_0 = " << rep.adjacent_layouts()[0].ToString()
            << "  (stride 0 across each block of 32: one scale per block)\n"
            << "   scales (row-major): " << absl::StrJoin(scale_text, " ")
            << "\n"
            << "   validated: schema, carriers, placements, adjacent range, "
               "block rule -> OK\n"
            << "   snapshot="
            << SnapshotText(mx.Snapshot(), {rep.subtensor(0).carrier.get(),
                                            rep.subtensor(1).carrier.get()})
            << "\n";
  auto transposed = Permute(mx, {1, 0});
  std::cout << "   permute (1,0) moves the scales with the values: S_0 = "
            << transposed->representation().adjacent_layouts()[0].ToString()
            << "\n";
  auto cut = Slice(mx, 1, 0, 16);
  std::cout << "   a slice that cuts a block is rejected:\n     "
            << FormatError(cut.status()) << "\n\n";

  // 3. Dump both as protobuf text, replay them, and validate the replay.
  std::cout << "3. Dump -> replay -> dump\n";
  for (const Tensor* t : {static_cast<const Tensor*>(&*tensor), &mx}) {
    const std::string text = ToText(ToProto(*t));
    auto replayed = ReplayWithIds(*ParseText(text));
    if (!replayed.ok()) {
      std::cout << FormatError(replayed.status()) << "\n";
      return 1;
    }
    const bool stable = ToText(ToProto(replayed->tensor)) == text;
    std::cout << "   --- " << t->dtype().name() << " as text ---\n"
              << text << "   replayed: " << OkLine(*replayed)
              << (stable ? "\n   dumped again: identical bytes\n"
                         : "\n   MISMATCH\n");
    if (!stable) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return strata::Usage();
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "demo" && args.empty()) return strata::Demo();
  if (command == "layout") return strata::LayoutCommand(args);
  if (command == "dump") return strata::DumpCommand(args);
  if (command == "validate") return strata::ValidateCommand(args);
  if (command == "view") return strata::ViewCommand(args);
  return strata::Usage();
}
