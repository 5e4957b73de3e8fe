// What the strata commands share: the usage, argument parsing, the OK line
// of a replayed text, the bound on dumped data.
#ifndef STRATA_TOOLS_CLI_UTIL_H_
#define STRATA_TOOLS_CLI_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "proto/codec.h"

namespace strata {

// Prints the usage of every command to standard error; returns 2.
int Usage();

// True when `path` names a directory: an ifstream opens one without error.
bool IsDirectory(const std::string& path);

// "(4,64)": the top-level extents of L_0, linear in the number of leaves.
std::string TopLevelShape(const Layout& layout);

// One validate line for `replayed`, e.g. "OK dtype=float32 levels=1
// shape=(4,8) snapshot=[c0@0]" (the text's carrier ids).
std::string OkLine(const Replayed& replayed);

// "(1,0)" or "2": the integers of a flat tuple; errors name `what`.
absl::StatusOr<std::vector<int64_t>> IntegersArg(const std::string& what,
                                                 const std::string& text);
// One integer argument written exactly as a decimal: an optional '-' and
// digits, nothing else (no '+', no spaces, no tuple), within int64. A
// TypeError (or ValueError out of range) naming `what` otherwise.
absl::StatusOr<int64_t> ExactIntegerArg(const std::string& what,
                                        const std::string& text);
// A tuple argument (a SHAPE).
absl::StatusOr<IntTuple> TupleArg(const std::string& what,
                                  const std::string& text);

// ResourceExhaustedError when a dump of `t` with data would hold more than
// kMaxTextBytes, before any byte is copied.
absl::Status CheckDumpDataFits(const Tensor& t);

}  // namespace strata

#endif  // STRATA_TOOLS_CLI_UTIL_H_
