#include "layout/int_tuple.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

IntTuple IntTuple::Tuple(absl::Span<const IntTuple> elements) {
  IntTuple result;
  result.tokens_.clear();
  result.leaves_.clear();
  result.tokens_.push_back(static_cast<int32_t>(elements.size()));
  for (const IntTuple& e : elements) {
    result.tokens_.insert(result.tokens_.end(), e.tokens_.begin(),
                          e.tokens_.end());
    result.leaves_.insert(result.leaves_.end(), e.leaves_.begin(),
                          e.leaves_.end());
  }
  return result;
}

IntTuple IntTuple::Flat(absl::Span<const int64_t> values) {
  IntTuple result;
  result.tokens_.assign(values.size() + 1, kLeafToken);
  result.tokens_[0] = static_cast<int32_t>(values.size());
  result.leaves_.assign(values.begin(), values.end());
  return result;
}

int IntTuple::depth() const {
  // Depth of the deepest leaf or empty tuple, tracked with a stack of pending
  // children.
  absl::InlinedVector<int32_t, 16>
      remaining;  // Children left at each open level.
  int max_depth = 0;
  for (int32_t token : tokens_) {
    if (!remaining.empty()) --remaining.back();
    if (token != kLeafToken) {
      remaining.push_back(token);
      max_depth = std::max<int>(max_depth, remaining.size());
    }
    while (!remaining.empty() && remaining.back() == 0) remaining.pop_back();
  }
  return max_depth;
}

IntTuple IntTuple::operator[](int i) const {
  if (is_leaf()) return *this;
  int token = 1;
  int leaf = 0;
  for (int k = 0; k < i; ++k) token = SubtreeEnd(token, &leaf);
  const int first_leaf = leaf;
  const int end = SubtreeEnd(token, &leaf);
  IntTuple result;
  result.tokens_.assign(tokens_.begin() + token, tokens_.begin() + end);
  result.leaves_.assign(leaves_.begin() + first_leaf, leaves_.begin() + leaf);
  return result;
}

IntTuple::Elements IntTuple::TopElements() const {
  Elements e;
  if (is_leaf()) {
    e.token = {0, 1};
    e.leaf = {0, 1};
    return e;
  }
  const int rank = tokens_[0];
  e.token.resize_for_overwrite(rank + 1);  // Every entry is written below.
  e.leaf.resize_for_overwrite(rank + 1);
  if (tokens_.size() == leaves_.size() + 1) {
    // A flat tuple (only the root is not a leaf): element i is token i + 1
    // and leaf i.
    for (int i = 0; i <= rank; ++i) {
      e.token[i] = i + 1;
      e.leaf[i] = i;
    }
    return e;
  }
  int token = 1;
  int leaf = 0;
  e.token[0] = token;
  e.leaf[0] = leaf;
  for (int i = 0; i < rank; ++i) {
    token = SubtreeEnd(token, &leaf);
    e.token[i + 1] = token;
    e.leaf[i + 1] = leaf;
  }
  return e;
}

void IntTupleBuilder::AppendElement(const IntTuple& source,
                                    const IntTuple::Elements& elements, int i) {
  tuple_.AppendElementRange(source, elements.token[i], elements.token[i + 1],
                            elements.leaf[i], elements.leaf[i + 1]);
}

void IntTupleBuilder::AppendInteger(int64_t value) {
  tuple_.AppendIntegerElement(value);
}

IntTuple IntTupleBuilder::Build(bool unwrap_single_integer) && {
  if (unwrap_single_integer) tuple_.UnwrapSingleInteger();
  return std::move(tuple_);
}

bool IntTuple::WeaklyCongruentTo(const IntTuple& other) const {
  // Walk both preorders together; a leaf here matches a whole subtree there.
  int i = 0;
  int j = 0;
  int unused = 0;
  while (i < static_cast<int>(tokens_.size())) {
    if (tokens_[i] == kLeafToken) {
      j = other.SubtreeEnd(j, &unused);
      ++i;
      continue;
    }
    if (other.tokens_[j] != tokens_[i]) return false;
    ++i;
    ++j;
  }
  return true;
}

std::string IntTuple::ToString() const {
  struct Frame {
    int32_t children_left;
    bool wrote_child;
  };
  absl::InlinedVector<Frame, 16> open;
  std::string out;
  size_t leaf = 0;
  for (int32_t token : tokens_) {
    if (!open.empty()) {
      if (open.back().wrote_child) out += ',';
      open.back().wrote_child = true;
      --open.back().children_left;
    }
    if (token == kLeafToken) {
      absl::StrAppend(&out, leaves_[leaf++]);
    } else {
      out += '(';
      open.push_back({token, false});
    }
    while (!open.empty() && open.back().children_left == 0) {
      out += ')';
      open.pop_back();
    }
  }
  return out;
}

namespace {

class IntTupleParser {
 public:
  explicit IntTupleParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<IntTuple> ParseAll() {
    STRATA_ASSIGN_OR_RETURN(IntTuple result, Parse(0));
    SkipSpace();
    if (pos_ != text_.size()) return Unexpected("end of text");
    return result;
  }

 private:
  absl::StatusOr<IntTuple> Parse(int depth) {
    SkipSpace();
    if (pos_ >= text_.size()) return Unexpected("an integer or '('");
    if (text_[pos_] == '(') {
      if (depth >= kMaxIntTupleDepth) {
        return ValueErrorCat("integer tuple \"", Quote(),
                             "\" nests deeper than ", kMaxIntTupleDepth,
                             " levels");
      }
      ++pos_;
      absl::InlinedVector<IntTuple, 8> elements;
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ')') {
        ++pos_;
        return IntTuple::Tuple(elements);
      }
      while (true) {
        STRATA_ASSIGN_OR_RETURN(IntTuple element, Parse(depth + 1));
        elements.push_back(std::move(element));
        SkipSpace();
        if (pos_ < text_.size() && text_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < text_.size() && text_[pos_] == ')') {
          ++pos_;
          return IntTuple::Tuple(elements);
        }
        return Unexpected("',' or ')'");
      }
    }
    return ParseInteger();
  }

  absl::StatusOr<IntTuple> ParseInteger() {
    const size_t start = pos_;
    bool negative = false;
    if (text_[pos_] == '-' || text_[pos_] == '+') {
      negative = text_[pos_] == '-';
      ++pos_;
    }
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
      pos_ = start;
      return Unexpected("an integer or '('");
    }
    // Accumulate negatively so that INT64_MIN parses.
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const int digit = text_[pos_] - '0';
      if (!CheckedMul(value, 10, &value) || !CheckedSub(value, digit, &value)) {
        return ValueErrorCat("integer tuple \"", Quote(),
                             "\": integer at position ", start,
                             " does not fit in 64 bits");
      }
      ++pos_;
    }
    if (!negative) {
      if (value == INT64_MIN) {
        return ValueErrorCat("integer tuple \"", Quote(),
                             "\": integer at position ", start,
                             " does not fit in 64 bits");
      }
      value = -value;
    }
    return IntTuple(value);
  }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  std::string Quote() const {
    constexpr size_t kMax = 80;
    if (text_.size() <= kMax) return std::string(text_);
    return absl::StrCat(text_.substr(0, kMax), "...");
  }

  absl::Status Unexpected(absl::string_view expected) {
    const std::string found =
        pos_ < text_.size() ? absl::StrCat("'", text_.substr(pos_, 1), "'")
                            : std::string("end of text");
    return TypeErrorCat("\"", Quote(), "\" is not an integer tuple: expected ",
                        expected, " at position ", pos_, ", found ", found);
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<IntTuple> ParseIntTuple(absl::string_view text) {
  return IntTupleParser(text).ParseAll();
}

absl::StatusOr<int64_t> ParseInt64(absl::string_view text,
                                   absl::string_view what) {
  absl::StatusOr<IntTuple> value = ParseIntTuple(text);
  if (value.ok() && !value->is_leaf()) {
    value = TypeErrorCat("\"", text, "\" is not an integer");
  }
  if (!value.ok()) {
    return what.empty() ? value.status() : WithContext(value.status(), what);
  }
  return value->value();
}

}  // namespace strata
