#include "layout/algebra.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "layout/random_layouts.h"
#include "layout/testing.h"
#include "util/errors.h"

namespace strata {
namespace {

using testing::RandomLayouts;

using testing::L;

// A's function extended beyond size(A) along its last leaf, as composition
// defines it.
int64_t Extended(const Layout& a, int64_t x) {
  const Layout c = Coalesce(a);
  return c(x);  // operator() lets the last leaf absorb the quotient.
}

// One checker per operation, after CuTe's unit tests.
void ExpectCoalesce(const Layout& layout, const Layout& result) {
  ASSERT_EQ(result.size(), layout.size()) << layout.ToString();
  EXPECT_LE(result.depth(), 1);
  for (int64_t i = 0; i < layout.size(); ++i) {
    ASSERT_EQ(result(i), layout(i)) << layout.ToString() << " at " << i;
  }
}

void ExpectComposition(const Layout& a, const Layout& b, const Layout& r) {
  ASSERT_EQ(r.size(), b.size()) << a.ToString() << " o " << b.ToString();
  for (int64_t i = 0; i < b.size(); ++i) {
    ASSERT_EQ(r(i), Extended(a, b(i))) << a.ToString() << " o " << b.ToString()
                                       << " = " << r.ToString() << " at " << i;
  }
  // B's top-level mode structure is kept.
  if (!b.shape().is_leaf()) {
    ASSERT_EQ(r.rank(), b.rank());
    for (int m = 0; m < b.rank(); ++m) {
      EXPECT_EQ(r.mode(m).size(), b.mode(m).size());
    }
  }
}

void ExpectComplement(const Layout& l, int64_t n, const Layout& r) {
  std::set<int64_t> image_l;
  for (int64_t i = 0; i < l.size(); ++i) image_l.insert(l(i));
  std::set<int64_t> image_r;
  for (int64_t i = 0; i < r.size(); ++i) {
    ASSERT_TRUE(image_r.insert(r(i)).second) << "complement not injective";
    if (r(i) != 0) {
      ASSERT_EQ(image_l.count(r(i)), 0u) << "images overlap";
    }
  }
  if (l.cosize() <= n) {
    auto both = MakeLayout({l, r});
    ASSERT_TRUE(both.ok());
    std::set<int64_t> cover;
    for (int64_t i = 0; i < both->size(); ++i) cover.insert((*both)(i));
    for (int64_t x = 0; x < n; ++x) {
      ASSERT_EQ(cover.count(x), 1u)
          << l.ToString() << " complement " << r.ToString() << " misses " << x
          << " of [0," << n << ")";
    }
  }
}

// CuTe's left_inverse post-condition: A(R(A(i))) == A(i) for all i < size(A),
// R defined on [0, cosize(A)) and landing in A's domain on A's image; where A
// is injective, R(A(i)) == i.
void ExpectLeftInverse(const Layout& a, const Layout& r) {
  ASSERT_GE(r.size(), a.cosize()) << a.ToString() << " -> " << r.ToString();
  std::set<int64_t> image;
  for (int64_t i = 0; i < a.size(); ++i) image.insert(a(i));
  const bool injective = static_cast<int64_t>(image.size()) == a.size();
  for (int64_t i = 0; i < a.size(); ++i) {
    const int64_t back = r(a(i));
    ASSERT_GE(back, 0) << a.ToString() << " left_inverse " << r.ToString();
    ASSERT_LT(back, a.size())
        << a.ToString() << " left_inverse " << r.ToString() << " at " << i;
    ASSERT_EQ(a(back), a(i))
        << a.ToString() << " left_inverse " << r.ToString() << " at " << i;
    if (injective) {
      ASSERT_EQ(back, i) << a.ToString() << " " << r.ToString();
    }
  }
}

TEST(AlgebraDocExamples, Coalesce) {
  EXPECT_EQ(Coalesce(L("(2,(1,6)):(1,(6,2))")).ToString(), "12:1");
  EXPECT_EQ(Coalesce(L("(4,1):(1,9)")).ToString(), "4:1");
  EXPECT_EQ(Coalesce(L("(1,1):(3,9)")).ToString(), "1:0");
  EXPECT_EQ(Coalesce(L("(2,4):(4,1)")).ToString(), "(2,4):(4,1)");
  EXPECT_EQ(CoalesceByMode(L("(2,(1,6)):(1,(6,2))"), IntTuple::Tuple({1, 1}))
                ->ToString(),
            "(2,6):(1,2)");
}

TEST(AlgebraDocExamples, Composition) {
  EXPECT_EQ(Composition(L("(6,2):(8,2)"), L("(4,3):(3,1)"))->ToString(),
            "((2,2),3):((24,2),8)");
  EXPECT_EQ(Composition(L("20:2"), L("(5,4):(4,1)"))->ToString(),
            "(5,4):(8,2)");
  EXPECT_EQ(Composition(L("(10,2):(16,4)"), L("(5,4):(1,5)"))->ToString(),
            "(5,(2,2)):(16,(80,4))");
  EXPECT_EQ(Composition(L("(4,3):(3,1)"), L("12:0"))->ToString(), "12:0");
}

TEST(AlgebraDocExamples, ByModeComposition) {
  // A 12x32 row-major layout tiled by (3:4, 8:2).
  const Layout a = L("(12,(4,8)):(59,(13,1))");
  const std::vector<Layout> tiler = {L("3:4"), L("8:2")};
  auto r = Composition(a, tiler);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ToString(), "(3,(2,4)):(236,(26,1))");
}

TEST(AlgebraDocExamples, Complement) {
  EXPECT_EQ(Complement(L("4:1"), 24)->ToString(), "6:4");
  EXPECT_EQ(Complement(L("6:4"), 24)->ToString(), "4:1");
  EXPECT_EQ(Complement(L("(4,6):(1,4)"), 24)->ToString(), "1:0");
  EXPECT_EQ(Complement(L("4:2"), 24)->ToString(), "(2,3):(1,8)");
  // (1,3,1):(1,2,24) before coalescing: extent-1 modes go away.
  EXPECT_EQ(Complement(L("(2,4):(1,6)"), 24)->ToString(), "3:2");
}

TEST(AlgebraDocExamples, ComplementCoalescesItsResult) {
  EXPECT_EQ(Complement(L("(2,2):(1,6)"), 24)->ToString(), "(3,2):(2,12)");
}

TEST(AlgebraDocExamples, LogicalDivide) {
  EXPECT_EQ(LogicalDivide(L("(4,2,3):(2,1,8)"), L("4:2"))->ToString(),
            "((2,2),(2,3)):((4,1),(2,8))");
  const std::vector<Layout> tiler = {L("3:3"), L("(2,4):(1,8)")};
  auto r = LogicalDivide(L("(9,(4,8)):(59,(13,1))"), tiler);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ToString(), "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))");
}

TEST(AlgebraDocExamples, ZippedAndTiledDivide) {
  const std::vector<Layout> tiler = {L("3:3"), L("(2,4):(1,8)")};
  const Layout a = L("(9,(4,8)):(59,(13,1))");
  EXPECT_EQ(ZippedDivide(a, tiler)->ToString(),
            "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))");
  EXPECT_EQ(TiledDivide(a, tiler)->ToString(),
            "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))");
}

TEST(AlgebraDocExamples, LogicalProduct) {
  EXPECT_EQ(LogicalProduct(L("(2,2):(4,1)"), L("6:1"))->ToString(),
            "((2,2),(2,3)):((4,1),(2,8))");
}

TEST(AlgebraDocExamples, BlockedAndRakedProduct) {
  EXPECT_EQ(BlockedProduct(L("(2,5):(5,1)"), L("(3,4):(1,3)"))->ToString(),
            "((2,3),(5,4)):((5,10),(1,30))");
  EXPECT_EQ(RakedProduct(L("(2,5):(5,1)"), L("(3,4):(1,3)"))->ToString(),
            "((3,2),(4,5)):((10,5),(30,1))");
}

TEST(AlgebraDocExamples, Inverses) {
  EXPECT_EQ(RightInverse(L("(4,8):(8,1)"))->ToString(), "(8,4):(4,1)");
  EXPECT_EQ(LeftInverse(L("(4,8):(8,1)"))->ToString(), "(8,4):(4,1)");
  EXPECT_EQ(RightInverse(L("4:2"))->ToString(), "1:0");
  auto left = LeftInverse(L("4:2"));
  ASSERT_TRUE(left.ok()) << left.status();
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ((*left)(2 * i), i);
}

TEST(AlgebraErrors, InadmissibleCompositionQuotesTheLayouts) {
  auto r = Composition(L("(4,3):(1,10)"), L("6:1"));
  EXPECT_TRUE(IsValueError(r.status()));
  EXPECT_NE(r.status().message().find("(4,3):(1,10)"), absl::string_view::npos)
      << r.status();
  auto s = Composition(L("(4,3):(1,10)"), L("2:3"));
  EXPECT_TRUE(IsValueError(s.status())) << s.status();
  EXPECT_TRUE(IsValueError(Composition(L("8:1"), L("4:-1")).status()));
}

TEST(AlgebraErrors, ComplementAndInverseErrors) {
  EXPECT_TRUE(IsValueError(Complement(L("(2,2):(1,1)"), 8).status()));
  EXPECT_TRUE(IsValueError(Complement(L("4:-1"), 8).status()));
  EXPECT_TRUE(IsValueError(Complement(L("4:1"), 0).status()));
  EXPECT_TRUE(IsValueError(LeftInverse(L("(2,2):(3,2)")).status()));
  EXPECT_TRUE(IsValueError(LeftInverse(L("(2,2):(1,1)")).status()));
  EXPECT_TRUE(IsValueError(LeftInverse(L("(2,3):(0,-1)")).status()));
  EXPECT_TRUE(IsValueError(LogicalDivide(L("8:1"), L("(4,0):(1,1)")).status()));
  const std::vector<Layout> long_tiler = {L("2:1"), L("2:1"), L("2:1")};
  EXPECT_TRUE(
      IsValueError(LogicalDivide(L("(4,4):(1,4)"), long_tiler).status()));
}

TEST(AlgebraErrors, OverflowIsAValueErrorNeverUndefined) {
  const Layout huge = L("(1000000000,1000000000):(1,1000000000)");
  EXPECT_TRUE(IsValueError(LogicalProduct(huge, huge).status()));
  EXPECT_TRUE(
      IsValueError(Composition(L("2:4611686018427387904"), L("4:1")).status()));
  EXPECT_TRUE(IsValueError(
      Complement(L("2:4611686018427387904"), 9223372036854775807).status()));
}

constexpr int kCases = 3000;

TEST(AlgebraLaws, CoalescePreservesTheFunction) {
  RandomLayouts gen(/*seed=*/1);
  for (int n = 0; n < kCases; ++n) {
    const Layout l = gen.Any(6, 6, 40, 3);
    SCOPED_TRACE(l.ToString());
    ExpectCoalesce(l, Coalesce(l));
    ASSERT_EQ(Coalesce(Coalesce(l)), Coalesce(l));
  }
}

TEST(AlgebraLaws, CompositionIsFunctionComposition) {
  RandomLayouts gen(/*seed=*/2);
  int admitted = 0;
  for (int n = 0; n < kCases; ++n) {
    const Layout a = gen.Injective(4, 6, 2);
    const Layout b =
        n % 2 == 0 ? gen.DividingTiler(a.size()) : gen.Any(3, 4, 6, 2);
    auto r = Composition(a, b);
    if (!r.ok()) {
      ASSERT_TRUE(IsValueError(r.status())) << r.status();
      continue;
    }
    ++admitted;
    ExpectComposition(a, b, *r);
  }
  EXPECT_GT(admitted, kCases / 3);
}

TEST(AlgebraLaws, CompositionIsAssociativeWhereAdmissible) {
  RandomLayouts gen(/*seed=*/3);
  int checked = 0;
  for (int n = 0; n < kCases; ++n) {
    const Layout a = gen.Injective(4, 6, 2);
    const Layout b = gen.DividingTiler(a.size());
    const Layout c = gen.DividingTiler(b.size());
    auto ab = Composition(a, b);
    auto bc = Composition(b, c);
    if (!ab.ok() || !bc.ok()) continue;
    auto ab_c = Composition(*ab, c);
    auto a_bc = Composition(a, *bc);
    if (!ab_c.ok() || !a_bc.ok()) continue;
    ++checked;
    ASSERT_TRUE(FunctionallyEqual(*ab_c, *a_bc))
        << a.ToString() << " " << b.ToString() << " " << c.ToString();
  }
  EXPECT_GT(checked, kCases / 4);
}

TEST(AlgebraLaws, RightInverseIsAnInverseOnItsDomain) {
  RandomLayouts gen(/*seed=*/4);
  for (int n = 0; n < kCases; ++n) {
    const Layout l =
        n % 2 ? gen.Injective(5, 6, 2, /*gaps=*/false) : gen.Any(4, 5, 12, 2);
    auto r = RightInverse(l);
    ASSERT_TRUE(r.ok()) << l.ToString() << ": " << r.status();
    for (int64_t i = 0; i < r->size(); ++i) {
      ASSERT_LT((*r)(i), l.size());
      ASSERT_EQ(l((*r)(i)), i)
          << l.ToString() << " right_inverse " << r->ToString();
    }
    if (n % 2) {
      ASSERT_EQ(r->size(), l.size()) << "a bijection inverts fully";
    }
  }
}

TEST(AlgebraLaws, LeftInverseUndoesInjectiveLayouts) {
  RandomLayouts gen(/*seed=*/5);
  for (int n = 0; n < kCases; ++n) {
    const Layout l = gen.Injective(5, 6, 2);
    auto r = LeftInverse(l);
    ASSERT_TRUE(r.ok()) << l.ToString() << ": " << r.status();
    ASSERT_GE(r->size(), l.cosize());
    for (int64_t i = 0; i < l.size(); ++i) {
      ASSERT_EQ((*r)(l(i)), i)
          << l.ToString() << " left_inverse " << r->ToString();
    }
  }
}

TEST(AlgebraLaws, ComplementIsDisjointAndCovers) {
  RandomLayouts gen(/*seed=*/6);
  for (int n = 0; n < kCases; ++n) {
    const Layout l = gen.Injective(4, 5, 2);
    const int64_t n_target = l.cosize() * gen.Uniform(1, 3) + gen.Uniform(0, 5);
    auto r = Complement(l, n_target);
    ASSERT_TRUE(r.ok()) << l.ToString() << ": " << r.status();
    ExpectComplement(l, n_target, *r);
  }
}

TEST(AlgebraLaws, DivideKeepsItsDefinition) {
  RandomLayouts gen(/*seed=*/7);
  int admitted = 0;
  for (int n = 0; n < kCases; ++n) {
    const Layout a = gen.Injective(4, 6, 2);
    const Layout b = gen.DividingTiler(a.size());
    auto r = LogicalDivide(a, b);
    if (!r.ok()) continue;
    ++admitted;
    auto rest = Complement(b, a.size());
    ASSERT_TRUE(rest.ok());
    auto tiler = MakeLayout({b, *rest});
    ASSERT_TRUE(tiler.ok());
    ASSERT_EQ(r->size(), tiler->size());
    for (int64_t i = 0; i < r->size(); ++i) {
      ASSERT_EQ((*r)(i), Extended(a, (*tiler)(i)));
    }
    ASSERT_EQ(r->mode(0).size(), b.size());
    auto zipped = ZippedDivide(a, b);
    ASSERT_TRUE(zipped.ok());
    ASSERT_TRUE(FunctionallyEqual(*zipped, *r));
    auto tiled = TiledDivide(a, b);
    ASSERT_TRUE(tiled.ok());
    ASSERT_TRUE(FunctionallyEqual(*tiled, *r));
  }
  EXPECT_GT(admitted, kCases / 2);
}

TEST(AlgebraLaws, ProductsKeepTheirDefinitions) {
  RandomLayouts gen(/*seed=*/8);
  int admitted = 0;
  for (int n = 0; n < kCases; ++n) {
    const Layout a = gen.Injective(2, 4, 1, /*gaps=*/false);
    const Layout b = gen.Injective(2, 4, 1, /*gaps=*/false);
    auto p = LogicalProduct(a, b);
    if (!p.ok()) continue;
    ++admitted;
    ASSERT_EQ(p->size(), a.size() * b.size());
    ASSERT_TRUE(FunctionallyEqual(p->mode(0), a));
    auto blocked = BlockedProduct(a, b);
    auto raked = RakedProduct(a, b);
    ASSERT_TRUE(blocked.ok()) << blocked.status();
    ASSERT_TRUE(raked.ok()) << raked.status();
    // Same image as the logical product, each value once when a and b are
    // injective.
    std::multiset<int64_t> ip, ib, ir;
    for (int64_t i = 0; i < p->size(); ++i) {
      ip.insert((*p)(i));
      ib.insert((*blocked)(i));
      ir.insert((*raked)(i));
    }
    ASSERT_EQ(ip, ib) << a.ToString() << " x " << b.ToString();
    ASSERT_EQ(ip, ir);
    // Mode i of blocked is (A_i, C_i): the block varies fastest.
    if (blocked->rank() == 2 && a.rank() == 2 && b.rank() == 2) {
      for (int64_t x = 0; x < a.mode(0).size(); ++x) {
        for (int64_t y = 0; y < b.mode(0).size(); ++y) {
          const IntTuple crd = IntTuple::Tuple(
              {IntTuple::Tuple({x, y}), IntTuple::Tuple({0, 0})});
          const IntTuple logical = IntTuple::Tuple(
              {IntTuple::Tuple({x, 0}), IntTuple::Tuple({y, 0})});
          ASSERT_EQ(*blocked->Crd2Idx(crd), *p->Crd2Idx(logical));
        }
      }
    }
  }
  EXPECT_GT(admitted, kCases / 2);
}

TEST(AlgebraLaws, JointCompositionAtAnOffsetSharesOneShape) {
  RandomLayouts gen(/*seed=*/10);
  int admitted = 0;
  int wrapped = 0;
  for (int n = 0; n < kCases; ++n) {
    const Layout a = gen.Injective(4, 5, 2);
    // A second operand of the same shape with stride-0 (broadcast) leaves.
    const Layout s = *Layout::Create(
        a.shape(), a.shape().TransformLeaves(
                       [&](size_t, int64_t) { return gen.Uniform(0, 3); }));
    const Layout b = gen.DividingTiler(a.size());
    const int64_t start = gen.Uniform(0, a.size() - 1);
    auto joint = ComposeJointly({a, s}, start, b);
    if (!joint.ok()) {
      ASSERT_TRUE(IsValueError(joint.status())) << joint.status();
      ++wrapped;
      continue;
    }
    ++admitted;
    ASSERT_EQ(joint->results[0].shape(), joint->results[1].shape());
    for (int64_t i = 0; i < b.size(); ++i) {
      ASSERT_EQ(Extended(a, start + b(i)),
                joint->bases[0] + joint->results[0](i))
          << a.ToString() << " at " << start << " o " << b.ToString();
      ASSERT_EQ(Extended(s, start + b(i)),
                joint->bases[1] + joint->results[1](i))
          << s.ToString() << " at " << start << " o " << b.ToString();
    }
  }
  EXPECT_GT(admitted, kCases / 4);
  EXPECT_GT(wrapped, 0);
}

TEST(AlgebraErrors, ASliceThatWrapsIsRefused) {
  // (2,3):(1,10) from linear 1, two elements: A(1) = 1, A(2) = 10, not 1 + k*d.
  EXPECT_TRUE(
      IsValueError(ComposeJointly({L("(2,3):(1,10)")}, 1, L("2:1")).status()));
  auto ok = ComposeJointly({L("(2,3):(1,10)")}, 2, L("2:2"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->bases[0], 10);
  EXPECT_EQ(ok->results[0].ToString(), "2:10");
}

TEST(AlgebraLaws, PrintParsePrintIsTheIdentity) {
  RandomLayouts gen(/*seed=*/9);
  for (int n = 0; n < kCases; ++n) {
    const Layout l = gen.Any(8, 9, 1000, 4);
    const std::string text = l.ToString();
    auto parsed = ParseLayout(text);
    ASSERT_TRUE(parsed.ok()) << text;
    ASSERT_EQ(*parsed, l);
    ASSERT_EQ(parsed->ToString(), text);
  }
}

// --- Issue 16, item 7: agreement with CuTe on degenerate operands ----------

TEST(AlgebraIssue16, ComposeWithASizeOneRightOperandAgreesWithCuTe) {
  // CuTe answers (1):(1); B reaches only B(0) == 0, so every stride gives the
  // same function, and Strata's size-1 modes have stride 0.
  const Layout a = L("((4,8),(7)):((7,28),(1))");
  auto r = Composition(a, L("(1):(6)"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ToString(), "(1):(0)");
  ExpectComposition(a, L("(1):(6)"), *r);
  struct Case {
    const char* a;
    const char* b;
    const char* r;
  } cases[] = {
      {"((4,8),(7)):((7,28),(1))", "1:6", "1:0"},
      {"(4,3):(3,1)", "(1,2):(5,4)", "(1,2):(0,1)"},
      {"(4,3):(3,1)", "(2,1):(1,9223372036854775807)", "(2,1):(3,0)"},
      {"(4,3):(1,10)", "(2,(1,3)):(1,(7,4))", "(2,(1,3)):(1,(0,10))"},
      {"8:1", "1:-3", "1:0"},
      {"(4,3):(3,1)", "((1,1),1):((5,7),-9)", "((1,1),1):((0,0),0)"},
  };
  for (const Case& c : cases) {
    auto result = Composition(L(c.a), L(c.b));
    ASSERT_TRUE(result.ok()) << c.a << " o " << c.b << ": " << result.status();
    EXPECT_EQ(result->ToString(), c.r) << c.a << " o " << c.b;
    ExpectComposition(L(c.a), L(c.b), *result);
  }
  // The divisibility checks still hold for every other mode.
  EXPECT_TRUE(
      IsValueError(Composition(L("(4,3):(3,1)"), L("(1,2):(5,6)")).status()));
  EXPECT_TRUE(IsValueError(Composition(L("8:1"), L("2:-3")).status()));
}

TEST(AlgebraIssue16, ComposeWithStrideZeroRightModesAgreesWithCuTe) {
  // CuTe returns a stride-0 right operand unchanged: N:0 reaches A(0) == 0.
  struct Case {
    const char* a;
    const char* b;
    const char* r;
  } cases[] = {
      {"(4,3):(1,10)", "6:0", "6:0"},
      {"(4,3):(1,10)", "(2,6):(1,0)", "(2,6):(1,0)"},
      {"(4,3):(3,1)", "(4,2):(0,1)", "(4,2):(0,3)"},
      {"((4,8),(7)):((7,28),(1))", "(5,(3,2)):(0,(0,32))",
       "(5,(3,2)):(0,(0,1))"},
      {"(4,3):(3,1)", "(1000000000000,2):(0,4)", "(1000000000000,2):(0,1)"},
  };
  for (const Case& c : cases) {
    auto result = Composition(L(c.a), L(c.b));
    ASSERT_TRUE(result.ok()) << c.a << " o " << c.b << ": " << result.status();
    EXPECT_EQ(result->ToString(), c.r) << c.a << " o " << c.b;
    if (L(c.b).size() <= 4096) ExpectComposition(L(c.a), L(c.b), *result);
  }
  // A joint composition at an offset moves the base, not the stride-0 mode.
  auto joint = ComposeJointly({L("(4,3):(1,10)")}, 5, L("(3,2):(0,1)"));
  ASSERT_TRUE(joint.ok()) << joint.status();
  EXPECT_EQ(joint->bases[0], 11);
  EXPECT_EQ(joint->results[0].ToString(), "(3,2):(0,1)");
}

TEST(AlgebraIssue16, DegenerateRightModesNeverChangeAdmissibility) {
  RandomLayouts gen(/*seed=*/16);
  int admitted = 0;
  for (int n = 0; n < kCases; ++n) {
    const Layout a = gen.Injective(4, 6, 2);
    const Layout b =
        n % 2 == 0 ? gen.DividingTiler(a.size()) : gen.Any(3, 4, 6, 2);
    const Layout degenerate = gen.WithDegenerateModes(b, 3, 1000);
    SCOPED_TRACE(a.ToString() + " o " + degenerate.ToString());
    auto plain = Composition(a, b);
    auto r = Composition(a, degenerate);
    ASSERT_EQ(plain.ok(), r.ok()) << plain.status() << " / " << r.status();
    if (!r.ok()) {
      ASSERT_TRUE(IsValueError(r.status())) << r.status();
      continue;
    }
    ++admitted;
    ExpectComposition(a, degenerate, *r);
  }
  EXPECT_GT(admitted, kCases / 3);
}

TEST(AlgebraIssue16, LeftInverseSkipsStrideZeroModesLikeCuTe) {
  const Layout a = L("(2,(8,3)):(0,(1,8))");
  auto r = LeftInverse(a);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ToString(), "24:2");  // CuTe's answer.
  ExpectLeftInverse(a, *r);
  struct Case {
    const char* a;
    const char* r;
  } cases[] = {
      {"(4,8):(8,1)", "(8,4):(4,1)"},
      {"4:2", "(2,4):(0,1)"},
      {"(2,2):(0,1)", "2:2"},
      {"(3,4):(0,0)", "1:0"},
      {"(2,3):(0,2)", "(2,3):(0,2)"},
      {"((2,4),1):((0,3),-5)", "(3,4):(0,2)"},
      {"1:7", "1:0"},
      {"(2,2):(4,1)", "(4,2):(2,1)"},
  };
  for (const Case& c : cases) {
    auto result = LeftInverse(L(c.a));
    ASSERT_TRUE(result.ok()) << c.a << ": " << result.status();
    EXPECT_EQ(result->ToString(), c.r) << c.a;
    ExpectLeftInverse(L(c.a), *result);
  }
}

TEST(AlgebraIssue16, LeftInverseIsAQuasiInverseOnRandomStrideZeroLayouts) {
  RandomLayouts gen(/*seed=*/17);
  for (int n = 0; n < kCases; ++n) {
    const Layout a = gen.InjectiveWithStrideZero(5, 6, 2);
    auto r = LeftInverse(a);
    ASSERT_TRUE(r.ok()) << a.ToString() << ": " << r.status();
    ExpectLeftInverse(a, *r);
  }
  // And on arbitrary non-negative layouts, where it is admitted.
  int admitted = 0;
  for (int n = 0; n < kCases; ++n) {
    const Layout any = gen.Any(4, 4, 8, 2);
    const Layout a = *Layout::Create(
        any.shape(), any.stride().TransformLeaves(
                         [](size_t, int64_t d) { return d < 0 ? -d : d; }));
    auto r = LeftInverse(a);
    if (!r.ok()) {
      ASSERT_TRUE(IsValueError(r.status())) << r.status();
      continue;
    }
    ++admitted;
    ExpectLeftInverse(a, *r);
  }
  EXPECT_GT(admitted, kCases / 10);
}

// --- Issue 16, item 4: extreme integers are ValueErrors, never UB ------------

TEST(AlgebraIssue16, ExtremeIntegersInTheAlgebraAreValueErrors) {
  const int64_t kMax = INT64_MAX;
  const int64_t kMin = INT64_MIN;
  const int64_t values[] = {kMax, kMin, -1, 0, 1, 2, kMax / 2 + 1, kMin + 1};
  std::vector<Layout> layouts = {L("8:1"), L("(4,3):(3,1)"), L("1:0")};
  for (int64_t x : values) {
    for (int64_t y : values) {
      for (const IntTuple& shape :
           {IntTuple::Flat({x, y}), IntTuple::Flat({2, x}), IntTuple(x)}) {
        for (const IntTuple& stride :
             {IntTuple::Flat({y, x}), IntTuple::Flat({1, y}), IntTuple(y)}) {
          auto l = Layout::Create(shape, stride);
          if (!l.ok()) {
            ASSERT_TRUE(IsValueError(l.status())) << l.status();
            continue;
          }
          if (l->size() > 0) {
            EXPECT_GE(l->cosize(), 1);
            (void)(*l)(l->size() - 1);
          }
          layouts.push_back(*l);
        }
      }
    }
  }
  auto ok_or_value_error = [](const absl::Status& s) {
    return s.ok() || IsValueError(s);
  };
  for (const Layout& a : layouts) {
    SCOPED_TRACE(a.ToString());
    (void)Coalesce(a);
    for (int64_t n : values) {
      EXPECT_TRUE(ok_or_value_error(Complement(a, n).status()));
      EXPECT_TRUE(ok_or_value_error(ComposeJointly({a}, n, L("2:1")).status()));
    }
    EXPECT_TRUE(ok_or_value_error(RightInverse(a).status()));
    EXPECT_TRUE(ok_or_value_error(LeftInverse(a).status()));
    for (const Layout& b : {layouts[0], layouts[1], layouts[2], a}) {
      EXPECT_TRUE(ok_or_value_error(Composition(a, b).status()));
      EXPECT_TRUE(ok_or_value_error(Composition(b, a).status()));
      EXPECT_TRUE(ok_or_value_error(LogicalDivide(a, b).status()));
      EXPECT_TRUE(ok_or_value_error(LogicalProduct(a, b).status()));
      EXPECT_TRUE(ok_or_value_error(BlockedProduct(a, b).status()));
      EXPECT_TRUE(ok_or_value_error(RakedProduct(b, a).status()));
      EXPECT_TRUE(ok_or_value_error(ZippedDivide(b, a).status()));
      EXPECT_TRUE(ok_or_value_error(TiledDivide(b, a).status()));
    }
    const IntTuple::Elements elements = a.shape().TopElements();
    for (int i = 0; i < elements.size(); ++i) {
      int64_t extent, stride;
      (void)ModeAsSingleStride(a, elements, i, &extent, &stride);
    }
  }
  // A mode whose merged span would overflow stays two strides.
  const Layout wide = L("((2,3)):((4611686018427387904,1))");
  int64_t extent, stride;
  EXPECT_FALSE(ModeAsSingleStride(wide, wide.shape().TopElements(), 0, &extent,
                                  &stride));
}

}  // namespace
}  // namespace strata
