// A JSON value of a safetensors header as text for a message, bounded in
// length and in nesting (safetensors_reader.cc).
#ifndef STRATA_CHECKPOINT_INTERNAL_JSON_TEXT_H_
#define STRATA_CHECKPOINT_INTERNAL_JSON_TEXT_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace strata {
namespace checkpoint_internal {

using HeaderJson = nlohmann::json;

// Appends `value` as JSON text until `out` holds more than kMessageText
// characters or the nesting passes kMessageDepth ("..." for the rest): dump()
// recurses once per level, and a header may nest arrays 10^5 deep.
inline constexpr size_t kMessageText = 80;
inline constexpr int kMessageDepth = 16;
inline void AppendBounded(const HeaderJson& value, int depth,
                          std::string* out) {
  if (out->size() > kMessageText) return;
  if (!value.is_structured()) {
    absl::StrAppend(
        out, value.dump(-1, ' ', false, HeaderJson::error_handler_t::replace));
    return;
  }
  if (depth >= kMessageDepth) {
    absl::StrAppend(out, value.is_array() ? "[...]" : "{...}");
    return;
  }
  out->push_back(value.is_array() ? '[' : '{');
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (out->size() > kMessageText) break;
    if (!first) out->push_back(',');
    first = false;
    if (value.is_object()) {
      absl::StrAppend(out,
                      HeaderJson(it.key()).dump(
                          -1, ' ', false, HeaderJson::error_handler_t::replace),
                      ":");
    }
    AppendBounded(*it, depth + 1, out);
  }
  out->push_back(value.is_array() ? ']' : '}');
}

// A JSON value as text for a message (at most ~80 characters).
inline std::string JsonText(const HeaderJson& value) {
  std::string text;
  AppendBounded(value, 0, &text);
  if (text.size() > kMessageText) {
    text = absl::StrCat(text.substr(0, kMessageText), "...");
  }
  return text;
}

}  // namespace checkpoint_internal
}  // namespace strata

#endif  // STRATA_CHECKPOINT_INTERNAL_JSON_TEXT_H_
