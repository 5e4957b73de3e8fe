#include "tools/shard_command.h"

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/checkpoint.h"
#include "core/errors.h"
#include "core/tensor.h"
#include "proto/codec.h"
#include "tools/cli_util.h"
#include "tools/text_file.h"
#include "views/shard_plan.h"

namespace strata {
namespace {

constexpr char kShardUsage[] =
    "usage: strata shard FILE NAME DIM PARTS   (FILE a checkpoint; NAME '-' "
    "for a text dump)\n";

std::string OkLine(const Tensor& t) {
  return absl::StrCat("OK dtype=", t.dtype().name(),
                      " levels=", t.num_subtensors(), " shape=(",
                      absl::StrJoin(t.shape(), ","), ")");
}

}  // namespace

int ShardCommand(const std::vector<std::string>& args) {
  // DIM and PARTS exactly as decimals: "+1" or " 1" is a usage error.
  absl::StatusOr<int64_t> dim_arg =
      ExactIntegerArg("DIM", args.size() == 4 ? args[2] : "");
  absl::StatusOr<int64_t> parts_arg =
      ExactIntegerArg("PARTS", args.size() == 4 ? args[3] : "");
  if (args.size() != 4 || !dim_arg.ok() || !parts_arg.ok()) {
    if (args.size() == 4) {
      std::cerr << "strata shard: "
                << (dim_arg.ok() ? parts_arg : dim_arg).status().message()
                << "\n";
    }
    std::cerr << kShardUsage;
    return 2;
  }
  int64_t dim = *dim_arg, parts = *parts_arg;
  const std::string& file = args[0];
  const std::string& name = args[1];
  absl::StatusOr<Tensor> tensor = absl::UnknownError("unread");
  if (name == "-") {
    proto::RepresentationProto proto;
    if (!ReadProto("shard", file, &proto)) return 2;
    tensor = Replay(proto);
  } else {
    absl::StatusOr<Checkpoint> read = ReadCheckpoint(file);
    if (!read.ok()) {
      std::cout << file << ": " << FormatError(read.status()) << "\n";
      return 2;
    }
    tensor = ValueErrorCat("strata shard: ", file, " holds no tensor named \"",
                           name, "\"");
    for (CheckpointTensor& t : read->tensors) {
      if (t.name == name) tensor = std::move(t.tensor);
    }
  }
  const std::string label = name == "-" ? file : name;
  if (!tensor.ok()) {
    std::cout << label << ": " << FormatError(tensor.status()) << "\n";
    return 1;
  }
  const int64_t rank = static_cast<int64_t>(tensor->shape().size());
  if (dim < 0 && dim >= -rank) dim += rank;  // -1: the last dim.
  absl::StatusOr<int64_t> granule = ShardGranule(*tensor, dim);
  if (!granule.ok()) {
    std::cout << FormatError(granule.status()) << "\n";
    return 1;
  }
  std::cout << "granule=" << *granule << " extent=" << tensor->shape()[dim]
            << "\n";
  absl::StatusOr<ShardPlan> plan = PlanShards(*tensor, dim, parts);
  if (!plan.ok()) {
    std::cout << FormatError(plan.status()) << "\n";
    return 1;
  }
  int status = 0;
  for (size_t k = 0; k < plan->parts.size(); ++k) {
    const ShardPart& p = plan->parts[k];
    std::cout << "part " << k << ": [" << p.begin << "," << p.end << ") "
              << (p.view.ok() ? OkLine(*p.view) : FormatError(p.view.status()))
              << "\n";
    if (!p.view.ok()) status = 1;
  }
  std::cout << "pad=" << plan->pad << "\n";
  return status;
}

}  // namespace strata
