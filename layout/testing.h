// Test helpers of floor 1 (testonly): the layouts that tests write as text.
#ifndef STRATA_LAYOUT_TESTING_H_
#define STRATA_LAYOUT_TESTING_H_

#include "absl/strings/string_view.h"
#include "layout/layout.h"

namespace strata {
namespace testing {

// The layout that `text` denotes ("(4,8):(8,1)", layout-cli.md). A text that
// does not parse fails the calling test and gives the empty Layout().
Layout L(absl::string_view text);

// Expects `l`'s size, max_index and min_index to be those Layout::Create
// computes for its shape and stride (for layouts whose bounds a view copied
// or derived, NOTE [ Layout bounds ] in layout/layout.cc).
void ExpectCreatedBounds(const Layout& l);

}  // namespace testing
}  // namespace strata

#endif  // STRATA_LAYOUT_TESTING_H_
