// IntTuple: an integer, or an ordered tuple of IntTuples (CuTe's IntTuple).
//
// Shapes, strides and coordinates of layouts are IntTuples. The tree is stored
// flat, in preorder, so that a tuple of up to 8 leaves (and up to 12 nodes)
// lives inline without a heap allocation:
// clang-format off
//   tokens_  one entry per node: kLeafToken for an integer, else the node's
//            child count;
//   leaves_  the integers, in order (colexicographic leaf order is this
//            order).
// clang-format on
// For example (4,(2,2)) has tokens [2, leaf, 2, leaf, leaf] and leaves
// [4, 2, 2].
//
// An IntTuple is a plain value: copies are deep, comparison is structural.
#ifndef STRATA_LAYOUT_INT_TUPLE_H_
#define STRATA_LAYOUT_INT_TUPLE_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "layout/small_vector.h"

namespace strata {

class IntTuple {
 public:
  // The integer 0.
  IntTuple() : tokens_(kLeafToken), leaves_(int64_t{0}) {}
  // An integer (implicit, so that shapes read naturally: IntTuple::Tuple({4,
  // 8})).
  IntTuple(int64_t value) : tokens_(kLeafToken), leaves_(value) {}  // NOLINT
  IntTuple(int value) : IntTuple(static_cast<int64_t>(value)) {}    // NOLINT

  // The tuple of `elements`, in order. Tuple({}) is the empty tuple "()".
  static IntTuple Tuple(absl::Span<const IntTuple> elements);
  static IntTuple Tuple(std::initializer_list<IntTuple> elements) {
    return Tuple(absl::MakeConstSpan(elements.begin(), elements.size()));
  }
  // The flat tuple of `values`: Flat({2,3}) is (2,3).
  static IntTuple Flat(absl::Span<const int64_t> values);

  bool is_leaf() const { return tokens_[0] == kLeafToken; }
  // The integer of a leaf. Precondition: is_leaf().
  int64_t value() const { return leaves_[0]; }

  // CuTe's rank: 1 for an integer, else the number of top-level elements.
  int rank() const { return is_leaf() ? 1 : tokens_[0]; }
  // 0 for an integer, else 1 + the largest depth of an element.
  int depth() const;
  // Element i (0 <= i < rank()); element 0 of an integer is the integer itself.
  IntTuple operator[](int i) const;

  // All integers, in order.
  absl::Span<const int64_t> leaves() const {
    return absl::MakeConstSpan(leaves_.data(), leaves_.size());
  }
  int num_leaves() const { return static_cast<int>(leaves_.size()); }

  // Same nesting structure, whatever the integers.
  bool SameStructure(const IntTuple& other) const {
    return tokens_ == other.tokens_;
  }
  // CuTe's weakly_congruent(this, other): this is an integer, or both are
  // tuples of equal rank whose elements are pairwise weakly congruent (this is
  // "coarser" than other).
  bool WeaklyCongruentTo(const IntTuple& other) const;

  // The same structure with every integer replaced by f(index, value).
  template <typename F>
  IntTuple TransformLeaves(F f) const {
    IntTuple result = *this;
    for (size_t i = 0; i < result.leaves_.size(); ++i) {
      result.leaves_[i] = f(i, result.leaves_[i]);
    }
    return result;
  }

  // Canonical text: "8", "(4,(2,2))", "(4)" for a one-element tuple, "()" for
  // empty.
  std::string ToString() const;

  friend bool operator==(const IntTuple& a, const IntTuple& b) {
    return a.tokens_ == b.tokens_ && a.leaves_ == b.leaves_;
  }
  friend bool operator!=(const IntTuple& a, const IntTuple& b) {
    return !(a == b);
  }

  // Token-level access for the layout algorithms (layout.cc, algebra.cc).
  static constexpr int32_t kLeafToken = -1;
  // Tokens and leaves held without a heap block.
  static constexpr uint32_t kInlineTokens = 12;
  static constexpr uint32_t kInlineLeaves = 8;
  absl::Span<const int32_t> tokens() const {
    return absl::MakeConstSpan(tokens_.data(), tokens_.size());
  }
  // Index one past the end of the subtree starting at token `begin`; adds the
  // number of leaves in that subtree to *leaf_count.
  int SubtreeEnd(int begin, int* leaf_count) const {
    // Iterative: nesting may be deep. Inline: the views and the block rule
    // walk a layout's top-level modes with it on every call, and most of
    // those modes are one leaf.
    const int32_t* tokens = tokens_.data();
    if (tokens[begin] == kLeafToken) {
      ++*leaf_count;
      return begin + 1;
    }
    int pending = 1;  // Nodes still to visit in this subtree.
    int i = begin;
    int leaves = *leaf_count;
    while (pending > 0) {
      const int32_t token = tokens[i++];
      --pending;
      if (token == kLeafToken) {
        ++leaves;
      } else {
        pending += token;
      }
    }
    *leaf_count = leaves;
    return i;
  }

  // Where each top-level element lives: element i spans tokens [token[i],
  // token[i+1]) and leaves [leaf[i], leaf[i+1]). An integer is its own single
  // element.
  struct Elements {
    layout_internal::SmallVector<int32_t, 9> token;
    layout_internal::SmallVector<int32_t, 9> leaf;
    int size() const { return static_cast<int>(token.size()) - 1; }
  };
  Elements TopElements() const;

  friend class IntTupleBuilder;
  friend class Layout;
  friend class LayoutAssembler;

 private:
  // A flat tuple (or one integer) built in place: its first token, then leaf
  // tokens, and its leaves from a whole buffer of kInlineLeaves
  // (LayoutAssembler::FlatLayout). Precondition: the counts fit the inline
  // buffers, num_tokens >= 1.
  using TokenVector = layout_internal::SmallVector<int32_t, kInlineTokens>;
  using LeafVector = layout_internal::SmallVector<int64_t, kInlineLeaves>;
  IntTuple(int32_t first_token, int num_tokens, const int64_t* leaves,
           int num_leaves)
      : tokens_(TokenVector::FirstThenFill(), first_token, kLeafToken,
                num_tokens),
        leaves_(LeafVector::WholeBuffer(), leaves, num_leaves) {}

  // In-place building (IntTupleBuilder): the empty tuple;
  // then element tokens [token_begin, token_end) and leaves [leaf_begin,
  // leaf_end) of `source`, or one integer, appended as the next element.
  void ResetToEmptyTuple() {
    tokens_.truncate(1);  // A valid tuple has at least one token.
    tokens_[0] = 0;
    leaves_.clear();
  }
  void AppendElementRange(const IntTuple& source, int token_begin,
                          int token_end, int leaf_begin, int leaf_end) {
    ++tokens_[0];
    tokens_.append(source.tokens_.data() + token_begin,
                   source.tokens_.data() + token_end);
    leaves_.append(source.leaves_.data() + leaf_begin,
                   source.leaves_.data() + leaf_end);
  }
  void AppendIntegerElement(int64_t value) {
    ++tokens_[0];
    tokens_.push_back(kLeafToken);
    leaves_.push_back(value);
  }
  // A tuple holding one integer becomes that integer.
  void UnwrapSingleInteger() {
    if (tokens_.size() == 2 && tokens_[1] == kLeafToken) {
      tokens_.truncate(1);
      tokens_[0] = kLeafToken;
    }
  }

  TokenVector tokens_;
  LeafVector leaves_;
};

// Builds a tuple from elements of other tuples and new integers, without the
// intermediate IntTuples that operator[] and Tuple would create (views use it).
class IntTupleBuilder {
 public:
  IntTupleBuilder() : tuple_(IntTuple::Tuple({})) {}
  void AppendElement(const IntTuple& source, const IntTuple::Elements& elements,
                     int i);
  void AppendInteger(int64_t value);
  // The tuple; with `unwrap_single_integer`, a tuple holding one integer is
  // returned as that integer.
  IntTuple Build(bool unwrap_single_integer) &&;

 private:
  IntTuple tuple_;
};

// Parses the notation of layout-cli.md ("8", "(4,(2,2))"), whitespace ignored.
// Errors: TypeError for text that is not an integer tuple (the message quotes
// the text and the position); ValueError for an integer outside int64 or
// nesting deeper than kMaxIntTupleDepth.
inline constexpr int kMaxIntTupleDepth = 1024;
absl::StatusOr<IntTuple> ParseIntTuple(absl::string_view text);

// Parses one integer argument ("-1") in the same notation. `what` names the
// argument ("slice STEP"); when it is not empty, every message starts with
// "<what>: ". Errors: those of ParseIntTuple; TypeError quoting the text when
// it is a tuple ("\"(1)\" is not an integer").
absl::StatusOr<int64_t> ParseInt64(absl::string_view text,
                                   absl::string_view what = {});

}  // namespace strata

#endif  // STRATA_LAYOUT_INT_TUPLE_H_
