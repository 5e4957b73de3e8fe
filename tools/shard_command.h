// `strata shard FILE NAME DIM PARTS` (../shared/design/formats.md section 5).
#ifndef STRATA_TOOLS_SHARD_COMMAND_H_
#define STRATA_TOOLS_SHARD_COMMAND_H_

#include <string>
#include <vector>

namespace strata {

// Splits dim DIM of Tensor NAME of FILE (a checkpoint strata import reads,
// or a text dump with NAME '-') into PARTS contiguous ranges (PlanShards,
// views/shard_plan.h) and prints
//   granule=G extent=N
//   part 0: [A,B) OK dtype=... levels=... shape=(...)
//   part 1: [B,C) <Kind>: <message>
//   pad=M
// Exit status: 0 every part is a view; 1 a part is refused, the Tensor is
// refused or absent, or more parts than granules (the granule line, then the
// ValueError naming G); 2 an unreadable file, or arguments of another form
// (the usage on standard error).
//
// `strata shard CHECKPOINT --rules FILE --parts N` (checkpoints.md section 3)
// plans every tensor (PlanCheckpointShards) and prints one line each:
//   NAME dim=D granule=G parts=N OK
//   NAME replicated
//   NAME dim=D granule=G parts=N <Kind>: <message> pad=M
// then "T tensors: S split, R replicated, F refused". Exit 1 when any is
// refused; 2 for arguments, a rules file line that is not REGEX DIM or a
// regex RE2 refuses (naming the line), an unreadable checkpoint.
int ShardCommand(const std::vector<std::string>& args);

}  // namespace strata

#endif  // STRATA_TOOLS_SHARD_COMMAND_H_
