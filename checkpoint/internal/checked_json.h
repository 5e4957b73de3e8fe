// The checked JSON parse of a safetensors header and of a sharded
// directory's index.
#ifndef STRATA_CHECKPOINT_INTERNAL_CHECKED_JSON_H_
#define STRATA_CHECKPOINT_INTERNAL_CHECKED_JSON_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "checkpoint/internal/names.h"
#include "nlohmann/json.hpp"

namespace strata {
namespace checkpoint_internal {

// Nesting of a value that the parser accepts (serde_json's, the safetensors
// library's parser).
inline constexpr int kMaxJsonDepth = 128;

// The SAX pass of NOTE [ The safetensors header parser ]
// (safetensors_reader.cc), for a safetensors header and for the index of a
// sharded directory (checkpoint/directory.cc): nesting within kMaxJsonDepth,
// no key twice in one object, and the order of the root's keys and of the
// keys of the root's object `ordered_key` (which std::map-based DOMs lose).
// Its errors name `what` ("the header", "the index").
class JsonChecker : public nlohmann::json_sax<nlohmann::json> {
 public:
  using Json = nlohmann::json;
  JsonChecker(absl::string_view what, absl::string_view ordered_key)
      : what_(what), ordered_key_(ordered_key) {}
  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override {
    return Value();
  }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override {
    if (!Enter()) return false;
    levels_.push_back({/*object=*/true, {}, {}});
    return true;
  }
  bool key(string_t& key) override {
    Level& level = levels_.back();
    if (!level.keys.insert(key).second) {
      error_ = absl::StrCat("the key ", Quoted(key), " appears twice in ",
                            levels_.size() == 1 ? what_ : "an object");
      return false;
    }
    level.key = key;
    if (levels_.size() == 1) {
      root_keys_.push_back(key);
    } else if (levels_.size() == 2 && levels_[0].key == ordered_key_) {
      ordered_keys_.push_back(key);
    }
    return true;
  }
  bool end_object() override { return Leave(); }
  bool start_array(std::size_t) override {
    if (!Enter()) return false;
    levels_.push_back({/*object=*/false, {}, {}});
    return true;
  }
  bool end_array() override { return Leave(); }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 6: ..."
    absl::string_view what = ex.what();
    const size_t bracket = what.find("] ");
    if (bracket != absl::string_view::npos) what.remove_prefix(bracket + 2);
    error_ = absl::StrCat(what_, " is not JSON: ", what);
    return false;
  }
  // Both passes over `text`: these checks, then the DOM (std::map objects)
  // into *root. On false, error() says why, naming `what`.
  bool Parse(absl::string_view text, Json* root) {
    if (!Json::sax_parse(text.begin(), text.end(), this,
                         nlohmann::detail::input_format_t::json,
                         /*strict=*/true, /*ignore_comments=*/false)) {
      if (error_.empty()) error_ = absl::StrCat(what_, " is not JSON");
      return false;
    }
    *root = Json::parse(text.begin(), text.end(), nullptr,
                        /*allow_exceptions=*/false,
                        /*ignore_comments=*/false);
    if (root->is_discarded()) {
      error_ = absl::StrCat(what_, " is not JSON");
      return false;
    }
    return true;
  }
  const std::string& error() const { return error_; }
  // The root's keys and `ordered_key`'s, in the text's order.
  std::vector<std::string>& root_keys() { return root_keys_; }
  std::vector<std::string>& ordered_keys() { return ordered_keys_; }

 private:
  struct Level {
    bool object;
    absl::flat_hash_set<std::string> keys;  // Of an object.
    std::string key;                        // Its latest key.
  };
  // A scalar value closes nothing: always accepted.
  static bool Value() { return true; }
  // An object or array opens one more level, within kMaxJsonDepth.
  bool Enter() {
    if (static_cast<int>(levels_.size()) < kMaxJsonDepth) return true;
    std::string path;
    for (const Level& level : levels_) {
      if (!level.object) continue;
      if (path.size() > 200) {
        absl::StrAppend(&path, "...");
        break;
      }
      absl::StrAppend(&path, path.empty() ? "" : " > ", Quoted(level.key));
    }
    error_ = absl::StrCat(what_, " nests values deeper than ", kMaxJsonDepth,
                          " levels (the limit of serde_json, ",
                          "which the safetensors library parses with): depth ",
                          levels_.size() + 1, " under ",
                          path.empty() ? "the root" : path);
    return false;
  }
  bool Leave() {
    levels_.pop_back();
    return true;
  }

  std::string what_, ordered_key_;
  std::vector<Level> levels_;
  std::vector<std::string> root_keys_, ordered_keys_;
  std::string error_;
};

}  // namespace checkpoint_internal
}  // namespace strata

#endif  // STRATA_CHECKPOINT_INTERNAL_CHECKED_JSON_H_
