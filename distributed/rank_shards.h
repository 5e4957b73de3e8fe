// Rank shards of a whole checkpoint (../shared/design/checkpoints.md section
// 3): PlanCheckpointShards judges every tensor's tensor-parallel or
// expert-parallel split before a byte is read; LoadRankShard maps, for one
// rank, only the pages that hold its parts.
//
// NOTE [ Rank shards ]
// A rule is a regular expression over whole tensor names (RE2, FullMatch)
// and a dim (negative from the end); the first rule that matches a tensor
// splits it along that dim into `parts` contiguous ranges (PlanShards,
// views/shard_plan.h: granule-aligned, as even as possible); a tensor no rule
// matches is replicated on every rank. A split is exact when every part is a
// view; otherwise the tensor is refused with the padding PlanShards names,
// and so is a tensor the reader refused or whose dim is out of range. Every
// tensor is judged before anything is loaded: a plan with a refusal loads
// nothing.
//
// LoadRankShard takes each part's view (a replicated tensor: the whole) and
// maps again, read-only, only the page-aligned bytes of its file that each
// level of the view reaches (one mapping per distinct span; the levels of a
// GGUF block share theirs), then rebuilds the view over carriers in those
// mappings: same layouts, offsets moved to the new carriers. The
// checkpoint's own mappings are not touched. A rank of N so maps about 1/N of
// a dim-0 or leading-dim (expert) split tensor, plus a page at each edge; a
// split of an inner dim reaches from its first row to its last and maps
// nearly all of it (mapped_bytes says so).
#ifndef STRATA_DISTRIBUTED_RANK_SHARDS_H_
#define STRATA_DISTRIBUTED_RANK_SHARDS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "checkpoint/checkpoint.h"
#include "core/tensor.h"

namespace strata {

struct ShardRule {
  std::string regex;  // RE2, matched against the whole name.
  int64_t dim = 0;    // Negative: from the last dim.
};

// The rules of a rules file: one `REGEX DIM` a line (the last
// whitespace-separated word is DIM, an exact integer; the regex is what
// precedes it, trimmed), `#` starting a comment, blank lines ignored.
// ValueError naming the line (1-based) and what is wrong: no DIM, a DIM that
// is no integer, a regex RE2 refuses (its message).
absl::StatusOr<std::vector<ShardRule>> ParseShardRules(absl::string_view text);

struct TensorShardPlan {
  enum class Kind { kSplit, kReplicated, kRefused };
  std::string name;
  Kind kind = Kind::kReplicated;
  int64_t dim = 0;  // Normalized (>= 0); split and refused-by-plan.
  int64_t granule = 1;
  int64_t extent = 0;
  int64_t pad = 0;  // The extent that would make the split exact.
  std::vector<std::pair<int64_t, int64_t>> ranges;  // Split: one per rank.
  absl::Status status;                              // Refused: why.
};

struct CheckpointShardPlan {
  int64_t parts = 1;
  std::vector<TensorShardPlan> tensors;  // The checkpoint's order.
  int64_t split = 0, replicated = 0, refused = 0;
};

// Errors: ValueError for parts < 1 or above kMaxShardParts, a rule whose
// regex RE2 refuses. Per tensor (kRefused, with its status): the reader's
// error; a dim out of range for its rank; a split that is not exact
// (PlanShards' refusal of a part, with pad = the extent that would make it
// exact), or more parts than granules.
absl::StatusOr<CheckpointShardPlan> PlanCheckpointShards(
    const Checkpoint& checkpoint, absl::Span<const ShardRule> rules,
    int64_t parts);

// A refused tensor's error: ValueError "NAME: <why> (dim D, extent N,
// granule=G, pad=M)" (the readers' refusals: "NAME: <why>").
absl::Status RefusalError(const TensorShardPlan& tensor);

struct TensorMap {
  std::vector<std::pair<std::string, Tensor>> tensors;  // The plan's order.
  int64_t mapped_bytes = 0;  // What this rank mapped, pages included.
  int64_t whole_bytes = 0;   // The bytes of every level of every tensor.
};

// This rank's part of every tensor (NOTE [ Rank shards ]). Errors, before
// anything is mapped: ValueError for a rank outside [0, plan.parts), a plan
// with a refused tensor (naming the first), a plan of another checkpoint (a
// tensor it names that the checkpoint holds not at its place);
// ResourceExhaustedError when a mapping is refused.
absl::StatusOr<TensorMap> LoadRankShard(const Checkpoint& checkpoint,
                                        const CheckpointShardPlan& plan,
                                        int64_t rank);

}  // namespace strata

#endif  // STRATA_DISTRIBUTED_RANK_SHARDS_H_
