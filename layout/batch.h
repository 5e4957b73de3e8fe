// The `strata layout --batch` request language (shared/design/layout-cli.md).
#ifndef STRATA_LAYOUT_BATCH_H_
#define STRATA_LAYOUT_BATCH_H_

#include <istream>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace strata {

// Answers one request line ("size (4,8):(1,4)") with its answer text ("32").
// Errors: TypeError or ValueError saying what is wrong (unknown request, wrong
// argument count, malformed argument, inadmissible operation, overflow).
absl::StatusOr<std::string> AnswerLayoutRequest(absl::string_view request);

// Reads requests one per line and writes exactly one answer line per request,
// in order; blank lines and lines starting with '#' get none. A failed request
// answers "error: <Kind>: <message>" on one line and the batch goes on. Returns
// the exit status: 1 if any answer was an error, else 0.
int RunLayoutBatch(std::istream& in, std::ostream& out);

}  // namespace strata

#endif  // STRATA_LAYOUT_BATCH_H_
