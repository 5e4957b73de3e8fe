#include "layout/batch.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "layout/algebra.h"
#include "layout/layout.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

using Args = std::vector<absl::string_view>;

absl::StatusOr<std::string> LayoutAnswer(absl::StatusOr<Layout> layout) {
  if (!layout.ok()) return layout.status();
  return layout->ToString();
}

using BinaryOp = absl::StatusOr<Layout> (*)(const Layout&, const Layout&);

absl::StatusOr<std::string> Binary(const Args& args, BinaryOp op) {
  STRATA_ASSIGN_OR_RETURN(Layout a, ParseLayout(args[0]));
  STRATA_ASSIGN_OR_RETURN(Layout b, ParseLayout(args[1]));
  return LayoutAnswer(op(a, b));
}

// A request answered by an integer property of one layout.
template <typename Property>
std::function<absl::StatusOr<std::string>(const Args&)> Unary(
    Property property) {
  return [property](const Args& a) -> absl::StatusOr<std::string> {
    STRATA_ASSIGN_OR_RETURN(Layout l, ParseLayout(a[0]));
    return absl::StrCat(property(l));
  };
}

struct Request {
  absl::string_view name;
  int arity;
  std::function<absl::StatusOr<std::string>(const Args&)> answer;
};

const std::vector<Request>& Requests() {
  static const auto* requests = new std::vector<Request>{
      {"size", 1, Unary([](const Layout& l) { return l.size(); })},
      {"cosize", 1, Unary([](const Layout& l) { return l.cosize(); })},
      {"rank", 1, Unary([](const Layout& l) -> int64_t { return l.rank(); })},
      {"depth", 1, Unary([](const Layout& l) -> int64_t { return l.depth(); })},
      {"coalesce", 1,
       [](const Args& a) -> absl::StatusOr<std::string> {
         STRATA_ASSIGN_OR_RETURN(Layout l, ParseLayout(a[0]));
         return Coalesce(l).ToString();
       }},
      {"crd2idx", 2,
       [](const Args& a) -> absl::StatusOr<std::string> {
         STRATA_ASSIGN_OR_RETURN(Layout l, ParseLayout(a[0]));
         STRATA_ASSIGN_OR_RETURN(IntTuple c, ParseIntTuple(a[1]));
         STRATA_ASSIGN_OR_RETURN(int64_t index, l.Crd2Idx(c));
         return absl::StrCat(index);
       }},
      {"idx2crd", 2,
       [](const Args& a) -> absl::StatusOr<std::string> {
         STRATA_ASSIGN_OR_RETURN(IntTuple shape, ParseIntTuple(a[0]));
         STRATA_ASSIGN_OR_RETURN(int64_t index, ParseInt64(a[1]));
         STRATA_ASSIGN_OR_RETURN(IntTuple crd, Idx2Crd(index, shape));
         return crd.ToString();
       }},
      {"compose", 2,
       [](const Args& a) {
         return Binary(a, [](const Layout& x, const Layout& y) {
           return Composition(x, y);
         });
       }},
      {"complement", 2,
       [](const Args& a) -> absl::StatusOr<std::string> {
         STRATA_ASSIGN_OR_RETURN(Layout l, ParseLayout(a[0]));
         STRATA_ASSIGN_OR_RETURN(int64_t n, ParseInt64(a[1]));
         return LayoutAnswer(Complement(l, n));
       }},
      {"right_inverse", 1,
       [](const Args& a) -> absl::StatusOr<std::string> {
         STRATA_ASSIGN_OR_RETURN(Layout l, ParseLayout(a[0]));
         return LayoutAnswer(RightInverse(l));
       }},
      {"left_inverse", 1,
       [](const Args& a) -> absl::StatusOr<std::string> {
         STRATA_ASSIGN_OR_RETURN(Layout l, ParseLayout(a[0]));
         return LayoutAnswer(LeftInverse(l));
       }},
      {"logical_divide", 2,
       [](const Args& a) {
         return Binary(a, [](const Layout& x, const Layout& y) {
           return LogicalDivide(x, y);
         });
       }},
      {"zipped_divide", 2,
       [](const Args& a) {
         return Binary(a, [](const Layout& x, const Layout& y) {
           return ZippedDivide(x, y);
         });
       }},
      {"tiled_divide", 2,
       [](const Args& a) {
         return Binary(a, [](const Layout& x, const Layout& y) {
           return TiledDivide(x, y);
         });
       }},
      {"logical_product", 2,
       [](const Args& a) { return Binary(a, LogicalProduct); }},
      {"blocked_product", 2,
       [](const Args& a) { return Binary(a, BlockedProduct); }},
      {"raked_product", 2,
       [](const Args& a) { return Binary(a, RakedProduct); }},
  };
  return *requests;
}

}  // namespace

absl::StatusOr<std::string> AnswerLayoutRequest(absl::string_view request) {
  std::vector<absl::string_view> words =
      absl::StrSplit(request, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (words.empty()) return TypeError("empty request");
  const absl::string_view name = words[0];
  const Args args(words.begin() + 1, words.end());
  for (const Request& r : Requests()) {
    if (r.name != name) continue;
    if (static_cast<int>(args.size()) != r.arity) {
      return TypeErrorCat(name, " takes ", r.arity,
                          r.arity == 1 ? " argument" : " arguments", ", got ",
                          args.size());
    }
    return r.answer(args);
  }
  return TypeErrorCat("unknown request \"", name.substr(0, 40), "\"");
}

int RunLayoutBatch(std::istream& in, std::ostream& out) {
  int exit_status = 0;
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view request = absl::StripAsciiWhitespace(line);
    if (request.empty() || request[0] == '#') continue;
    absl::StatusOr<std::string> answer = AnswerLayoutRequest(request);
    if (answer.ok()) {
      out << *answer << '\n';
    } else {
      exit_status = 1;
      out << "error: "
          << absl::StrReplaceAll(FormatError(answer.status()),
                                 {{"\n", " "}, {"\r", " "}})
          << '\n';
    }
  }
  out.flush();
  return exit_status;
}

}  // namespace strata
