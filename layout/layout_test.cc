#include "layout/layout.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "layout/random_layouts.h"
#include "layout/testing.h"
#include "util/errors.h"

namespace strata {
namespace {

using testing::L;

TEST(LayoutTest, SizeCosizeRankDepth) {
  const Layout l = L("((2,2),4):((1,4),2)");
  EXPECT_EQ(l.size(), 16);
  EXPECT_EQ(l.rank(), 2);
  EXPECT_EQ(l.depth(), 2);
  EXPECT_EQ(l.cosize(), 1 + 1 + 4 + 6);
  EXPECT_EQ(L("8:1").cosize(), 8);
  EXPECT_EQ(L("(4,8):(1,4)").cosize(), 32);
}

TEST(LayoutTest, CosizeWithZeroAndNegativeStrides) {
  EXPECT_EQ(L("(3,4):(0,1)").cosize(), 4);
  EXPECT_EQ(L("8:0").cosize(), 1);
  // Values 0,-1,-2,-3: the largest reachable index is 0.
  EXPECT_EQ(L("4:-1").cosize(), 1);
  EXPECT_EQ(L("4:-1").min_index(), -3);
  // Values 0..: max is 3*2 = 6 from mode 0, mode 1 only lowers it.
  EXPECT_EQ(L("(4,3):(2,-5)").cosize(), 7);
  EXPECT_EQ(L("(4,3):(2,-5)").min_index(), -10);
}

TEST(LayoutTest, EmptyLayoutHasCosizeZero) {
  const Layout l = L("(4,0):(1,4)");
  EXPECT_EQ(l.size(), 0);
  EXPECT_EQ(l.cosize(), 0);
  EXPECT_FALSE(l.Crd2Idx(0).ok());
}

TEST(LayoutTest, Crd2IdxLinearAndHierarchical) {
  const Layout l = L("(4,(2,2)):(2,(1,8))");
  // Linear 5 -> (1,1) -> (1,(1,0)).
  EXPECT_EQ(*l.Crd2Idx(5), 2 + 1);
  EXPECT_EQ(*l.Crd2Idx(IntTuple::Tuple({1, 1})), 3);
  EXPECT_EQ(*l.Crd2Idx(IntTuple::Tuple({1, IntTuple::Tuple({1, 0})})), 3);
  EXPECT_EQ(*l.Crd2Idx(IntTuple::Tuple({3, 3})), 6 + 1 + 8);
  for (int64_t i = 0; i < l.size(); ++i) {
    auto crd = Idx2Crd(i, l.shape());
    ASSERT_TRUE(crd.ok());
    EXPECT_EQ(*l.Crd2Idx(*crd), l(i)) << i;
    EXPECT_EQ(*l.Crd2Idx(i), l(i)) << i;
  }
}

TEST(LayoutTest, Crd2IdxRejectsCoordinatesOutsideTheShape) {
  const Layout l = L("(4,(2,2)):(2,(1,8))");
  for (const IntTuple& c :
       {IntTuple(16), IntTuple(-1), IntTuple::Tuple({4, 0}),
        IntTuple::Tuple({0, 4}), IntTuple::Tuple({0, IntTuple::Tuple({2, 0})}),
        IntTuple::Tuple({0, 1, 2}),
        IntTuple::Tuple({IntTuple::Tuple({0, 0}), 0})}) {
    auto idx = l.Crd2Idx(c);
    EXPECT_TRUE(IsValueError(idx.status())) << c.ToString();
    EXPECT_NE(idx.status().message().find(l.ToString()),
              absl::string_view::npos);
  }
}

TEST(LayoutTest, Idx2CrdIsColexicographic) {
  const IntTuple shape = IntTuple::Tuple({2, IntTuple::Tuple({3, 2})});
  EXPECT_EQ(Idx2Crd(0, shape)->ToString(), "(0,(0,0))");
  EXPECT_EQ(Idx2Crd(1, shape)->ToString(), "(1,(0,0))");
  EXPECT_EQ(Idx2Crd(2, shape)->ToString(), "(0,(1,0))");
  EXPECT_EQ(Idx2Crd(11, shape)->ToString(), "(1,(2,1))");
  EXPECT_TRUE(IsValueError(Idx2Crd(12, shape).status()));
  EXPECT_TRUE(IsValueError(Idx2Crd(-1, shape).status()));
}

TEST(LayoutTest, CompactLayouts) {
  EXPECT_EQ(Layout::ColumnMajor(IntTuple::Tuple({4, 8}))->ToString(),
            "(4,8):(1,4)");
  EXPECT_EQ(Layout::RowMajor(IntTuple::Tuple({4, 8}))->ToString(),
            "(4,8):(8,1)");
  EXPECT_EQ(Layout::RowMajor(IntTuple::Tuple({2, IntTuple::Tuple({3, 4})}))
                ->ToString(),
            "(2,(3,4)):(12,(4,1))");
}

TEST(LayoutTest, ModesAreSubLayouts) {
  const Layout l = L("((2,2),4):((1,4),2)");
  EXPECT_EQ(l.mode(0).ToString(), "(2,2):(1,4)");
  EXPECT_EQ(l.mode(1).ToString(), "4:2");
  EXPECT_EQ(L("8:1").mode(0).ToString(), "8:1");
}

TEST(LayoutTest, ParseRejectsNonLayoutsAsTypeErrors) {
  for (const std::string text :
       {"8", "(4,8):1", "(4,8):(1,(4,1))", "4:1:2", ":", "(4,8)(1,4)", "a:b"}) {
    auto layout = ParseLayout(text);
    EXPECT_TRUE(IsTypeError(layout.status()))
        << text << ": " << layout.status();
  }
}

TEST(LayoutTest, CreateRejectsIncongruentStrideAsValueError) {
  auto layout = Layout::Create(IntTuple::Tuple({4, 8}), IntTuple(1));
  EXPECT_TRUE(IsValueError(layout.status()));
  EXPECT_NE(layout.status().message().find("not congruent"),
            absl::string_view::npos);
}

TEST(LayoutTest, NegativeExtentIsAValueError) {
  EXPECT_TRUE(IsValueError(ParseLayout("(4,-2):(1,4)").status()));
}

TEST(LayoutTest, ExtremeValuesOverflowCleanly) {
  EXPECT_TRUE(
      IsValueError(ParseLayout("(1000000000000000000,1000):(1,1)").status()));
  EXPECT_TRUE(IsValueError(ParseLayout("3:-9223372036854775808").status()));
  // 2:INT64_MIN reaches 0 and INT64_MIN: representable, so admitted.
  EXPECT_EQ(ParseLayout("2:-9223372036854775808")->min_index(), INT64_MIN);
  EXPECT_TRUE(
      IsValueError(ParseLayout("(2,2):(9223372036854775807,1)").status()));
  // Extent 1 never moves, whatever the stride.
  auto fine = ParseLayout("1:-9223372036854775808");
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->cosize(), 1);
  auto big = ParseLayout("1000000000000000000:1");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->cosize(), 1000000000000000000);
}

TEST(LayoutIssue16, ModesOfAnEmptyLayoutAreValidLayouts) {
  // Admitted before because size 0, then mode(1) dereferenced a failed Create.
  EXPECT_TRUE(
      IsValueError(ParseLayout("(0,3):(1,9223372036854775807)").status()));
  EXPECT_TRUE(IsValueError(
      ParseLayout("(0,(4294967296,4294967296)):(1,(1,1))").status()));
  EXPECT_TRUE(IsValueError(Layout::Create(IntTuple::Flat({0, 3, INT64_MAX}),
                                          IntTuple::Flat({1, 1, 1}))
                               .status()));
  const Layout l = L("(0,(2,3)):(5,(1,-2))");
  EXPECT_EQ(l.size(), 0);
  EXPECT_EQ(l.cosize(), 0);
  EXPECT_EQ(l(0), 0);  // Outside the precondition, but no division by 0.
  const auto modes = TopLevelModes(l);
  ASSERT_EQ(modes.size(), 2u);
  EXPECT_EQ(modes[0].ToString(), "0:5");
  EXPECT_EQ(modes[1].ToString(), "(2,3):(1,-2)");
  EXPECT_EQ(modes[1].min_index(), -4);
}

TEST(LayoutIssue16, CosizeAlwaysFitsInInt64) {
  // cosize() == largest index + 1 overflowed for a largest index of INT64_MAX.
  auto at_limit = ParseLayout("2:9223372036854775807");
  EXPECT_TRUE(IsValueError(at_limit.status())) << at_limit.status();
  EXPECT_NE(at_limit.status().message().find("cosize"), std::string::npos);
  EXPECT_TRUE(
      IsValueError(ParseLayout("(2,2):(9223372036854775806,1)").status()));
  auto below = ParseLayout("2:9223372036854775806");
  ASSERT_TRUE(below.ok()) << below.status();
  EXPECT_EQ(below->cosize(), INT64_MAX);
  auto longest = ParseLayout("9223372036854775807:1");
  ASSERT_TRUE(longest.ok()) << longest.status();
  EXPECT_EQ(longest->size(), INT64_MAX);
  EXPECT_EQ(longest->cosize(), INT64_MAX);
  EXPECT_EQ((*longest)(INT64_MAX - 1), INT64_MAX - 1);
  EXPECT_TRUE(
      IsValueError(ParseLayout("(9223372036854775807,2):(1,0)").status()));
  EXPECT_TRUE(IsValueError(ParseLayout("-9223372036854775808:1").status()));
  // Every combination of extreme leaves is either a layout or a ValueError,
  // and an admitted one answers size, cosize and its last index exactly.
  const int64_t values[] = {INT64_MAX, INT64_MIN, -1, 0, 1, 2, INT64_MAX / 2};
  for (int64_t e : values) {
    for (int64_t d : values) {
      for (int64_t d2 : values) {
        auto l =
            Layout::Create(IntTuple::Flat({e, 2}), IntTuple::Flat({d, d2}));
        if (!l.ok()) {
          EXPECT_TRUE(IsValueError(l.status())) << l.status();
          continue;
        }
        EXPECT_GE(l->cosize(), 0);
        if (l->size() > 0) {
          EXPECT_LE(l->min_index(), (*l)(l->size() - 1));
          EXPECT_GE(l->max_index(), (*l)(l->size() - 1));
          auto crd = Idx2Crd(l->size() - 1, l->shape());
          ASSERT_TRUE(crd.ok()) << crd.status();
          EXPECT_TRUE(l->Crd2Idx(*crd).ok());
        }
        // Component 0 equals its extent: outside the shape.
        EXPECT_TRUE(IsValueError(l->Crd2Idx(IntTuple::Flat({e, d})).status()));
      }
    }
  }
}

TEST(LayoutTest, CanonicalPrintRoundTrips) {
  for (const std::string text :
       {"8:1", "(4):(1)", "(4,8):(1,4)", "((2,2),4):((1,4),2)", "(3,4):(0,1)",
        "():()", "4:-1"}) {
    EXPECT_EQ(L(text).ToString(), text);
  }
  EXPECT_EQ(L(" ( 4 , 8 ) : ( 1 , 4 ) ").ToString(), "(4,8):(1,4)");
}

// GatherModes (the offset-free views' one pass) against Layout::Create of the
// same modes: random hierarchical layouts, their modes in random order with
// new stride-0 modes inserted, with and without a twin, with bounds copied
// (DerivedBounds::KeepingReach) and computed, and past the inline buffers.
TEST(LayoutAssemblerTest, GatherModesEqualsCreateOfTheNamedModes) {
  testing::RandomLayouts random(20261201);
  int nested = 0, spilled = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const bool wide = trial % 5 == 0;
    const Layout source = random.Any(wide ? 14 : 6, 4, 50, /*max_depth=*/3);
    auto twin_strides = source.stride().TransformLeaves(
        [&](size_t, int64_t) { return random.Uniform(-40, 40); });
    const Layout twin = *Layout::Create(source.shape(), twin_strides);
    const int rank = source.rank();
    std::vector<int> order(rank);
    for (int i = 0; i < rank; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), random.engine());
    std::vector<LayoutAssembler::ModeSpec> specs;
    std::vector<IntTuple> shape, stride, twin_stride;
    // A new mode of stride 0, or of extent 1 and any strides: either keeps
    // the reach.
    auto add_new_mode = [&] {
      const bool unit = random.Uniform(0, 1) == 0;
      const int64_t extent = unit ? 1 : random.Uniform(0, 3);
      const int64_t d = unit ? random.Uniform(-9, 9) : 0;
      const int64_t twin_d = unit ? random.Uniform(-9, 9) : 0;
      specs.push_back({-1, extent, d, twin_d});
      shape.push_back(extent);
      stride.push_back(d);
      twin_stride.push_back(twin_d);
    };
    for (int i : order) {
      if (random.Uniform(0, 3) == 0) add_new_mode();
      specs.push_back({i, 0});
      const Layout mode = source.shape().is_leaf() ? source : source.mode(i);
      const Layout twin_mode = twin.shape().is_leaf() ? twin : twin.mode(i);
      shape.push_back(mode.shape());
      stride.push_back(mode.stride());
      twin_stride.push_back(twin_mode.stride());
    }
    if (random.Uniform(0, 1) == 0) add_new_mode();
    auto create = [&](const std::vector<IntTuple>& s,
                      const std::vector<IntTuple>& d) {
      if (s.size() == 1 && s[0].is_leaf()) return Layout::Create(s[0], d[0]);
      return Layout::Create(IntTuple::Tuple(s), IntTuple::Tuple(d));
    };
    const absl::StatusOr<Layout> expected = create(shape, stride);
    const absl::StatusOr<Layout> expected_twin = create(shape, twin_stride);
    ASSERT_TRUE(expected.ok() && expected_twin.ok()) << source.ToString();
    const IntTuple::Elements elements = source.shape().TopElements();
    const bool flat =
        source.shape().is_leaf() ||
        source.shape().tokens().size() == source.shape().leaves().size() + 1;
    const LayoutAssembler::ModeTable modes =
        LayoutAssembler::ModeTable::Of(elements);
    const LayoutAssembler::ModeTable* table = flat ? nullptr : &modes;
    nested += !flat;
    spilled += shape.size() > 8 || source.shape().num_leaves() > 8;
    for (const bool kept : {false, true}) {
      for (const bool with_twin : {false, true}) {
        const auto kept_bounds = LayoutAssembler::DerivedBounds::KeepingReach(
            expected->size(), source, with_twin ? &twin : nullptr);
        Layout out, twin_out;
        // New modes of extent other than 1 change the size, not the reach.
        const absl::Status status = LayoutAssembler::GatherModes(
            source, table, with_twin ? &twin : nullptr, specs,
            kept ? &kept_bounds : nullptr, &out,
            with_twin ? &twin_out : nullptr);
        ASSERT_TRUE(status.ok()) << status << " " << source.ToString();
        const std::string context = source.ToString() + " kept " +
                                    std::to_string(kept) + " twin " +
                                    std::to_string(with_twin);
        EXPECT_EQ(out, *expected) << context;
        EXPECT_EQ(out.size(), expected->size()) << context;
        EXPECT_EQ(out.cosize(), expected->cosize()) << context;
        EXPECT_EQ(out.min_index(), expected->min_index()) << context;
        if (with_twin) {
          EXPECT_EQ(twin_out, *expected_twin) << context;
          EXPECT_EQ(twin_out.size(), expected_twin->size()) << context;
          EXPECT_EQ(twin_out.cosize(), expected_twin->cosize()) << context;
          EXPECT_EQ(twin_out.min_index(), expected_twin->min_index())
              << context;
        }
      }
    }
  }
  // Both of GatherSpecs' paths, and past the inline buffers.
  EXPECT_GT(nested, 500);
  EXPECT_GT(spilled, 50);
}

// Empty-tuple modes hold a token and no leaf; with wide modes beside them
// the counts pass the inline buffers (the review found the buffers were
// reserved a leaf per mode, which an empty tuple does not take).
TEST(LayoutAssemblerTest, GatherModesOfEmptyTupleModesAndWideModes) {
  for (const std::string text :
       {"((2,2,2,2,2,2,2,2,2),()):((1,2,4,8,16,32,64,128,256),())",
        "((),(2,2,2,2,2,2,2,2,2)):((),(1,2,4,8,16,32,64,128,256))",
        "(4,(),3):(1,(),4)", "((),()):((),())", "((),3):((),2)",
        "(2,2,2,2,2,2,2,2,2,2):(1,2,4,8,16,32,64,128,256,512)",
        // 16 and 21 flat modes: the fixed-size fill of leaf tokens covers 15
        // (the API fuzzer found a trailing () mode past it).
        "(2,2,2,2,2,2,2,2,2,2,2,2,2,2,2):(0,0,0,0,0,0,0,0,0,0,0,0,0,0,0)",
        "(2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2):"
        "(0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0)",
        "((),(),(),(),(),(),(),(),(),()):((),(),(),(),(),(),(),(),(),())"}) {
    const Layout source = L(text);
    const int rank = source.rank();
    const IntTuple::Elements elements = source.shape().TopElements();
    const LayoutAssembler::ModeTable modes =
        LayoutAssembler::ModeTable::Of(elements);
    // The modes reversed, with a new mode in front.
    std::vector<LayoutAssembler::ModeSpec> specs = {{-1, 3, 0, 0}};
    std::vector<IntTuple> shape = {3}, stride = {0};
    for (int i = rank; i-- > 0;) {
      specs.push_back({i, 0});
      shape.push_back(source.mode(i).shape());
      stride.push_back(source.mode(i).stride());
    }
    const Layout expected =
        *Layout::Create(IntTuple::Tuple(shape), IntTuple::Tuple(stride));
    // Flat sources may also be read without the table (mode i is leaf i).
    const bool flat =
        source.shape().tokens().size() == source.shape().leaves().size() + 1;
    const auto kept_bounds = LayoutAssembler::DerivedBounds::KeepingReach(
        expected.size(), source, &source);
    for (const bool kept : {false, true}) {
      for (const bool table : {true, false}) {
        if (!table && !flat) continue;
        Layout out, twin_out;
        const absl::Status status = LayoutAssembler::GatherModes(
            source, table ? &modes : nullptr, &source, specs,
            kept ? &kept_bounds : nullptr, &out, &twin_out);
        ASSERT_TRUE(status.ok()) << status << " " << text;
        EXPECT_EQ(out, expected) << text;
        EXPECT_EQ(twin_out, expected) << text;
        EXPECT_EQ(out.size(), expected.size()) << text;
        EXPECT_EQ(out.cosize(), expected.cosize()) << text;
      }
    }
  }
}

TEST(LayoutAssemblerTest, GatherModesReportsAnOverflowingSizeAsCreateDoes) {
  const Layout source = L("(4,2):(1,4)");
  const Layout twin = L("(4,2):(2,1)");
  const std::vector<LayoutAssembler::ModeSpec> specs = {
      {0, 0}, {-1, int64_t{1} << 62}, {1, 0}};
  Layout out = L("3:1"), twin_out = L("3:1");
  const absl::Status status = LayoutAssembler::GatherModes(
      source, nullptr, &twin, specs, nullptr, &out, &twin_out);
  EXPECT_TRUE(IsValueError(status)) << status;
  EXPECT_EQ(status.message(),
            Layout::Create(IntTuple::Tuple({4, int64_t{1} << 62, 2}),
                           IntTuple::Tuple({1, 0, 4}))
                .status()
                .message());
  // On error both outputs are 1:0.
  EXPECT_EQ(out, Layout());
  EXPECT_EQ(twin_out, Layout());
}

}  // namespace
}  // namespace strata
