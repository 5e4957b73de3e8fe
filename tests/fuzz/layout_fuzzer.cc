// libFuzzer target: the layout parser and algebra. The input is a batch of
// requests (layout-cli.md); its first two lines, when they are small layouts,
// are also checked against the algebra's laws, and a law that fails aborts (a
// finding).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "absl/strings/str_split.h"
#include "layout/algebra.h"
#include "layout/batch.h"
#include "layout/layout.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

constexpr int64_t kSmall = 1 << 12;

void CheckLaws(const strata::Layout& a, const strata::Layout& b) {
  using namespace strata;
  if (a.size() > kSmall || b.size() > kSmall) return;
  const Layout c = Coalesce(a);
  FUZZ_CHECK(c.size() == a.size());
  for (int64_t i = 0; i < a.size(); ++i) FUZZ_CHECK(c(i) == a(i));
  auto r = Composition(a, b);
  if (r.ok() && a.size() > 0 && b.size() > 0) {
    const Layout ca = Coalesce(a);
    FUZZ_CHECK(r->size() == b.size());
    for (int64_t i = 0; i < b.size(); ++i) {
      // A's last mode extends without bound: evaluate the coalesced A linearly.
      const int64_t x = b(i);
      if (x < 0) continue;
      FUZZ_CHECK((*r)(i) == ca(x));
    }
  }
  auto inverse = RightInverse(a);
  if (inverse.ok()) {
    for (int64_t i = 0; i < inverse->size(); ++i)
      FUZZ_CHECK(a((*inverse)(i)) == i);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::istringstream in(input);
  std::ostringstream out;
  strata::RunLayoutBatch(in, out);
  std::vector<std::string> lines = absl::StrSplit(input, '\n');
  if (lines.size() >= 2) {
    auto a = strata::ParseLayout(lines[0]);
    auto b = strata::ParseLayout(lines[1]);
    if (a.ok() && b.ok()) CheckLaws(*a, *b);
  }
  return 0;
}
