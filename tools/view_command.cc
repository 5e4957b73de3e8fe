// strata view FILE OP ARGS... (representation-cli.md).
#include <sys/stat.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "carrier/carrier.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "proto/codec.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/text_file.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"
#include "views/views.h"

namespace strata {
namespace {

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

}  // namespace

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

}  // namespace strata
