#include "tools/shard_command.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/checkpoint.h"
#include "core/tensor.h"
#include "distributed/rank_shards.h"
#include "proto/codec.h"
#include "tools/cli_util.h"
#include "tools/text_file.h"
#include "util/errors.h"
#include "views/shard_plan.h"

namespace strata {
namespace {

constexpr char kShardUsage[] =
    "usage: strata shard FILE NAME DIM PARTS   (FILE a checkpoint; NAME '-' "
    "for a text dump)\n"
    "       strata shard CHECKPOINT --rules FILE --parts N   (every tensor; "
    "FILE: one 'REGEX DIM' a line)\n";

// `strata shard CHECKPOINT --rules FILE --parts N` (checkpoints.md section
// 3): one line per tensor, then the counts.
int PlanCommand(const std::vector<std::string>& args) {
  std::string rules_file, parts_text;
  for (size_t i = 1; i + 1 < args.size(); i += 2) {
    if (args[i] == "--rules" && rules_file.empty()) {
      rules_file = args[i + 1];
    } else if (args[i] == "--parts" && parts_text.empty()) {
      parts_text = args[i + 1];
    } else {
      std::cerr << kShardUsage;
      return 2;
    }
  }
  absl::StatusOr<int64_t> parts = ExactIntegerArg("--parts", parts_text);
  if (args.size() != 5 || rules_file.empty() || !parts.ok()) {
    if (!parts.ok() && !parts_text.empty()) {
      std::cerr << "strata shard: " << parts.status().message() << "\n";
    }
    std::cerr << kShardUsage;
    return 2;
  }
  std::ifstream in(rules_file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    std::cerr << "strata shard: cannot read the rules file " << rules_file
              << "\n";
    return 2;
  }
  absl::StatusOr<std::vector<ShardRule>> rules = ParseShardRules(text.str());
  if (!rules.ok()) {
    std::cerr << rules_file << ": " << FormatError(rules.status()) << "\n";
    return 2;
  }
  absl::StatusOr<Checkpoint> read = ReadCheckpoint(args[0]);
  if (!read.ok()) {
    std::cout << args[0] << ": " << FormatError(read.status()) << "\n";
    return 2;
  }
  absl::StatusOr<CheckpointShardPlan> plan =
      PlanCheckpointShards(*read, *rules, *parts);
  if (!plan.ok()) {
    std::cerr << FormatError(plan.status()) << "\n";
    return 2;
  }
  for (const TensorShardPlan& t : plan->tensors) {
    std::cout << t.name;
    switch (t.kind) {
      case TensorShardPlan::Kind::kReplicated:
        std::cout << " replicated\n";
        break;
      case TensorShardPlan::Kind::kSplit:
        std::cout << " dim=" << t.dim << " granule=" << t.granule
                  << " parts=" << plan->parts << " OK\n";
        break;
      case TensorShardPlan::Kind::kRefused:
        if (t.granule > 0 && t.extent > 0) {
          std::cout << " dim=" << t.dim << " granule=" << t.granule
                    << " parts=" << plan->parts << " " << FormatError(t.status)
                    << " pad=" << t.pad << "\n";
        } else {
          std::cout << " " << FormatError(t.status) << "\n";
        }
        break;
    }
  }
  std::cout << plan->tensors.size() << " tensors: " << plan->split << " split, "
            << plan->replicated << " replicated, " << plan->refused
            << " refused\n";
  return plan->refused > 0 ? 1 : 0;
}

std::string OkLine(const Tensor& t) {
  return absl::StrCat("OK dtype=", t.dtype().name(),
                      " levels=", t.num_subtensors(), " shape=(",
                      absl::StrJoin(t.shape(), ","), ")");
}

}  // namespace

int ShardCommand(const std::vector<std::string>& args) {
  if (args.size() >= 2 &&
      std::find(args.begin(), args.end(), "--rules") != args.end()) {
    return PlanCommand(args);
  }
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
