#include "layout/batch.h"

#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "layout/layout.h"
#include "layout/show.h"

namespace strata {
namespace {

std::string Answer(const std::string& request) {
  auto answer = AnswerLayoutRequest(request);
  return answer.ok() ? *answer : "error";
}

TEST(LayoutBatchTest, EveryRequestOfTheContract) {
  EXPECT_EQ(Answer("size (4,8):(1,4)"), "32");
  EXPECT_EQ(Answer("cosize (3,4):(0,1)"), "4");
  EXPECT_EQ(Answer("rank ((2,2),4):((1,4),2)"), "2");
  EXPECT_EQ(Answer("depth ((2,2),4):((1,4),2)"), "2");
  EXPECT_EQ(Answer("crd2idx (4,8):(1,4) (1,2)"), "9");
  EXPECT_EQ(Answer("crd2idx (4,8):(1,4) 9"), "9");
  EXPECT_EQ(Answer("idx2crd (2,(3,2)) 11"), "(1,(2,1))");
  EXPECT_EQ(Answer("coalesce (2,(1,6)):(1,(6,2))"), "12:1");
  EXPECT_EQ(Answer("compose (6,2):(8,2) (4,3):(3,1)"), "((2,2),3):((24,2),8)");
  EXPECT_EQ(Answer("complement 4:1 24"), "6:4");
  EXPECT_EQ(Answer("right_inverse (4,8):(8,1)"), "(8,4):(4,1)");
  EXPECT_EQ(Answer("left_inverse (4,8):(8,1)"), "(8,4):(4,1)");
  EXPECT_EQ(Answer("logical_divide (4,2,3):(2,1,8) 4:2"),
            "((2,2),(2,3)):((4,1),(2,8))");
  EXPECT_EQ(Answer("zipped_divide (4,2,3):(2,1,8) 4:2"),
            "((2,2),(2,3)):((4,1),(2,8))");
  EXPECT_EQ(Answer("logical_product (2,2):(4,1) 6:1"),
            "((2,2),(2,3)):((4,1),(2,8))");
  EXPECT_EQ(Answer("blocked_product (2,5):(5,1) (3,4):(1,3)"),
            "((2,3),(5,4)):((5,10),(1,30))");
  EXPECT_EQ(Answer("raked_product (2,5):(5,1) (3,4):(1,3)"),
            "((3,2),(4,5)):((10,5),(30,1))");
}

TEST(LayoutBatchTest, OneAnswerLinePerRequestAndErrorsGoOn) {
  std::istringstream in(
      "# comment\n"
      "size 8:1\n"
      "\n"
      "compose (4,3):(1,10) 6:1\n"
      "frobnicate 8:1\n"
      "size 8:1 9:1\n"
      "size (4,8):1\n"
      "crd2idx 8:1 8\n"
      "size (1000000000000,1000000000000):(1,1)\n"
      "cosize 8:2\n");
  std::ostringstream out;
  EXPECT_EQ(RunLayoutBatch(in, out), 1);
  std::istringstream lines(out.str());
  std::string line;
  std::vector<std::string> answers;
  while (std::getline(lines, line)) answers.push_back(line);
  ASSERT_EQ(answers.size(), 8u) << out.str();
  EXPECT_EQ(answers[0], "8");
  for (int i = 1; i < 7; ++i) {
    EXPECT_EQ(answers[i].rfind("error: ", 0), 0u) << answers[i];
  }
  EXPECT_NE(answers[1].find("ValueError"), std::string::npos);
  EXPECT_NE(answers[2].find("unknown request"), std::string::npos);
  EXPECT_NE(answers[3].find("takes 1 argument"), std::string::npos);
  EXPECT_NE(answers[4].find("TypeError"), std::string::npos);
  EXPECT_EQ(answers[7], "15");
}

TEST(LayoutBatchIssue16,
     ComposeWithASizeOneOperandAndLeftInverseWithStrideZero) {
  // layout-cli.md: one answer line per request, a layout for compose and
  // left_inverse; CuTe gives (1):(1) and 24:2, equal as functions.
  std::istringstream in(
      "compose ((4,8),(7)):((7,28),(1)) (1):(6)\n"
      "left_inverse (2,(8,3)):(0,(1,8))\n"
      "compose (4,3):(3,1) (4,2):(0,1)\n"
      "left_inverse (2,2):(3,2)\n"
      "size 2:9223372036854775807\n");
  std::ostringstream out;
  EXPECT_EQ(RunLayoutBatch(in, out), 1);
  EXPECT_EQ(out.str(),
            "(1):(0)\n"
            "24:2\n"
            "(4,2):(0,3)\n"
            "error: ValueError: left_inverse: layout (2,2):(3,2) is not "
            "injective in the admissible sense: coalesced stride 3 is not a "
            "multiple of the span 2*2 of the mode below it (the modes overlap "
            "or interleave)\n"
            "error: ValueError: layout 2:9223372036854775807: the largest "
            "index 9223372036854775807 leaves no room for cosize (largest "
            "index + 1) in int64\n");
}

TEST(LayoutBatchTest, AllAnswersOkExitsZero) {
  std::istringstream in("size 8:1\r\ncosize 8:1\n");
  std::ostringstream out;
  EXPECT_EQ(RunLayoutBatch(in, out), 0);
  EXPECT_EQ(out.str(), "8\n8\n");
}

TEST(LayoutShowTest, DrawsRowsAsModeZeroAndColumnsAsModeOne) {
  auto text = ShowLayout(*ParseLayout("(2,3):(3,1)"));
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text,
            "(2,3):(3,1)\n"
            "    0   1   2 \n"
            "  +---+---+---+\n"
            "0 | 0 | 1 | 2 |\n"
            "  +---+---+---+\n"
            "1 | 3 | 4 | 5 |\n"
            "  +---+---+---+\n");
  auto hier = ShowLayout(*ParseLayout("((2,2),2):((1,4),2)"));
  ASSERT_TRUE(hier.ok());
  EXPECT_NE(hier->find("3 | 5 | 7 |"), std::string::npos) << *hier;
  EXPECT_FALSE(ShowLayout(*ParseLayout("(2,2,2):(1,2,4)")).ok());
  auto rank1 = ShowLayout(*ParseLayout("3:2"));
  ASSERT_TRUE(rank1.ok());
  EXPECT_NE(rank1->find("2 | 4 |"), std::string::npos) << *rank1;
}

}  // namespace
}  // namespace strata
