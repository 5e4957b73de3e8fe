// `strata convert SRC DST --to T [--scale-layout L] [--only REGEX]
// [--skip REGEX] [--max-shard-size SIZE] [--overwrite] [--quiet]`
// (../shared/design/checkpoints.md section 2; convert/convert.h).
#ifndef STRATA_TOOLS_CONVERT_COMMAND_H_
#define STRATA_TOOLS_CONVERT_COMMAND_H_

#include <string>
#include <vector>

namespace strata {

// Converts SRC into DST. On a terminal, a progress bar on standard error
// (tensors done, bytes, MB/s, time left) unless --quiet; without one, a line
// per file written ("wrote PATH") on standard output unless --quiet. Each
// refused tensor is named on standard error with its reason; the summary
// line "converted N, copied M, refused R; B bytes in T s (X MB/s)" ends
// standard output. SIGINT, SIGTERM, SIGHUP and SIGPIPE stop the conversion at
// the next chunk; its temporary files are removed and the signal then ends the
// process as it would have. Exit status: 0 every tensor converted or copied;
// 1 some refused (the rest written); 2 the arguments, a SRC that is not a
// checkpoint, a DST that cannot be written (nothing left behind but what
// existed before).
int ConvertCommand(const std::vector<std::string>& args);

}  // namespace strata

#endif  // STRATA_TOOLS_CONVERT_COMMAND_H_
