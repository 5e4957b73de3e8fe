#include "layout/int_tuple.h"

#include <string>

#include "gtest/gtest.h"
#include "util/errors.h"

namespace strata {
namespace {

TEST(IntTupleTest, IntegerIsALeafOfRankOneAndDepthZero) {
  IntTuple t(8);
  EXPECT_TRUE(t.is_leaf());
  EXPECT_EQ(t.value(), 8);
  EXPECT_EQ(t.rank(), 1);
  EXPECT_EQ(t.depth(), 0);
  EXPECT_EQ(t[0], t);
  EXPECT_EQ(t.ToString(), "8");
}

TEST(IntTupleTest, NestedTupleStructure) {
  IntTuple t = IntTuple::Tuple({4, IntTuple::Tuple({2, 2})});
  EXPECT_FALSE(t.is_leaf());
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.depth(), 2);
  EXPECT_EQ(t[0], IntTuple(4));
  EXPECT_EQ(t[1], IntTuple::Tuple({2, 2}));
  EXPECT_EQ(t.num_leaves(), 3);
  EXPECT_EQ(t.ToString(), "(4,(2,2))");
}

TEST(IntTupleTest, OneElementAndEmptyTuplesPrintWithParentheses) {
  EXPECT_EQ(IntTuple::Tuple({4}).ToString(), "(4)");
  EXPECT_EQ(IntTuple::Tuple({}).ToString(), "()");
  EXPECT_EQ(IntTuple::Tuple({IntTuple::Tuple({})}).ToString(), "(())");
  EXPECT_EQ(IntTuple::Tuple({}).depth(), 1);
  EXPECT_NE(IntTuple::Tuple({4}), IntTuple(4));
}

TEST(IntTupleTest, ParsePrintRoundTrip) {
  for (const std::string text :
       {"8", "-3", "(4)", "()", "(4,8)", "((2,2),4)", "(1,(2,(3,(4,5))),6)",
        "9223372036854775807", "-9223372036854775808", "(0,(-1,2))"}) {
    auto parsed = ParseIntTuple(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    EXPECT_EQ(parsed->ToString(), text);
  }
}

TEST(IntTupleTest, ParseIgnoresWhitespace) {
  auto parsed = ParseIntTuple(" ( 4 ,\t(2, 2) ) ");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->ToString(), "(4,(2,2))");
}

TEST(IntTupleTest, ParseErrorsAreTypeErrorsNamingThePosition) {
  for (const std::string text :
       {"", "(", "(4,", "(4 8)", "4)", "x", "(,)", "--1", "4:1"}) {
    auto parsed = ParseIntTuple(text);
    EXPECT_TRUE(IsTypeError(parsed.status()))
        << text << ": " << parsed.status();
    EXPECT_NE(parsed.status().message().find("position"),
              absl::string_view::npos);
  }
}

TEST(IntTupleTest, IntegerOutOfRangeIsAValueError) {
  auto parsed = ParseIntTuple("(1,9223372036854775808)");
  EXPECT_TRUE(IsValueError(parsed.status())) << parsed.status();
  EXPECT_TRUE(IsValueError(ParseIntTuple("-9223372036854775809").status()));
}

TEST(IntTupleTest, DeepNestingParsesUpToTheLimitAndFailsCleanlyBeyond) {
  const std::string deep =
      std::string(1000, '(') + "8" + std::string(1000, ')');
  auto parsed = ParseIntTuple(deep);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->depth(), 1000);
  EXPECT_EQ(parsed->ToString(), deep);
  const std::string too_deep =
      std::string(5000, '(') + "8" + std::string(5000, ')');
  EXPECT_TRUE(IsValueError(ParseIntTuple(too_deep).status()));
}

TEST(IntTupleTest, WeakCongruence) {
  IntTuple shape = IntTuple::Tuple({4, IntTuple::Tuple({2, 2})});
  EXPECT_TRUE(IntTuple(3).WeaklyCongruentTo(shape));
  EXPECT_TRUE(IntTuple::Tuple({1, 3}).WeaklyCongruentTo(shape));
  EXPECT_TRUE(
      IntTuple::Tuple({1, IntTuple::Tuple({0, 1})}).WeaklyCongruentTo(shape));
  EXPECT_FALSE(IntTuple::Tuple({1, 2, 3}).WeaklyCongruentTo(shape));
  EXPECT_FALSE(
      IntTuple::Tuple({IntTuple::Tuple({0, 1}), 1}).WeaklyCongruentTo(shape));
}

TEST(IntTupleTest, SmallTuplesAreCopyableValues) {
  IntTuple a = IntTuple::Flat({1, 2, 3, 4, 5, 6, 7, 8});
  IntTuple b = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(b.ToString(), "(1,2,3,4,5,6,7,8)");
}

}  // namespace
}  // namespace strata
