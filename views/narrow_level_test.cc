#include "views/narrow_level.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "layout/layout.h"
#include "layout/random_layouts.h"
#include "tests/test_util.h"
#include "util/errors.h"

namespace strata {
namespace views_internal {
namespace {

using strata::testing::ExpectCreatedBounds;
using strata::testing::L;

// Colexicographic digits of `index` over `extents`.
std::vector<int64_t> Digits(int64_t index, absl::Span<const int64_t> extents) {
  std::vector<int64_t> out;
  for (int64_t e : extents) {
    out.push_back(index % e);
    index /= e;
  }
  return out;
}

// The brute force of NOTE [ Boxes of a level's leaf grid ]: tries every box of
// the leaf grid that starts at base's digits and holds every reached
// coordinate, and admits iff in one of them the reached indices, in the box's
// colexicographic order, are a layout of `reached`'s shape.
bool SomeBoxAdmits(const Layout& placement, int64_t base, const Layout& reached,
                   std::string* box_found) {
  const auto extents = placement.shape().leaves();
  const size_t leaves = extents.size();
  const auto r_extents = reached.shape().leaves();
  const std::vector<int64_t> start = Digits(base, extents);
  std::vector<std::vector<int64_t>> coords;  // Per reached linear index.
  for (int64_t i = 0; i < reached.size(); ++i) {
    coords.push_back(Digits(base + reached(i), extents));
  }
  // Per leaf, every (step, extent) whose range holds the reached digits.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> options(leaves);
  for (size_t a = 0; a < leaves; ++a) {
    int64_t top = start[a];
    for (const auto& x : coords) {
      if (x[a] < start[a]) return false;  // Below the start: no box.
      top = std::max(top, x[a]);
    }
    options[a].push_back({1, 1});
    if (top == start[a]) options[a].clear(), options[a].push_back({1, 1});
    for (int64_t g = 1; g < extents[a]; ++g) {
      bool divides = true;
      for (const auto& x : coords)
        divides = divides && (x[a] - start[a]) % g == 0;
      if (!divides) continue;
      for (int64_t n = (top - start[a]) / g + 1;
           start[a] + (n - 1) * g < extents[a]; ++n) {
        if (n > 1) options[a].push_back({g, n});
      }
    }
    if (top != start[a]) options[a].erase(options[a].begin());
  }
  // Each leaf of `reached` as a unit coordinate, to read the candidate
  // strides off.
  std::vector<int64_t> unit_index(r_extents.size(), -1);
  {
    int64_t weight = 1;
    for (size_t k = 0; k < r_extents.size(); ++k) {
      if (r_extents[k] > 1) unit_index[k] = weight;
      weight *= r_extents[k];
    }
  }
  std::vector<size_t> pick(leaves, 0);
  for (;;) {
    std::vector<int64_t> box_weight(leaves);
    int64_t running = 1;
    for (size_t a = 0; a < leaves; ++a) {
      box_weight[a] = running;
      running *= options[a][pick[a]].second;
    }
    auto in_box = [&](const std::vector<int64_t>& x) {
      int64_t u = 0;
      for (size_t a = 0; a < leaves; ++a) {
        u += (x[a] - start[a]) / options[a][pick[a]].first * box_weight[a];
      }
      return u;
    };
    std::vector<int64_t> alpha(r_extents.size(), 0);
    for (size_t k = 0; k < r_extents.size(); ++k) {
      if (unit_index[k] >= 0) alpha[k] = in_box(coords[unit_index[k]]);
    }
    bool layout = true;
    for (int64_t i = 0; layout && i < reached.size(); ++i) {
      const std::vector<int64_t> c = Digits(i, r_extents);
      int64_t expected = 0;
      for (size_t k = 0; k < c.size(); ++k) expected += c[k] * alpha[k];
      layout = in_box(coords[i]) == expected;
    }
    if (layout) {
      for (size_t a = 0; a < leaves; ++a) {
        absl::StrAppend(box_found, a ? " " : "", start[a], "+",
                        options[a][pick[a]].first, "*",
                        options[a][pick[a]].second);
      }
      return true;
    }
    size_t a = 0;
    while (a < leaves && ++pick[a] == options[a].size()) pick[a++] = 0;
    if (a == leaves) return false;
  }
}

// Checks an admitted narrowing: every reached index is the box's, read
// through the new adjacent layout, and the bounds NarrowLevel derives for
// its layouts are those Layout::Create computes.
void ExpectExact(const Layout& placement, int64_t base, const Layout& reached,
                 const NarrowedLevel& n) {
  ExpectCreatedBounds(n.placement);
  ExpectCreatedBounds(n.adjacent);
  ASSERT_EQ(n.adjacent.shape(), reached.shape());
  for (int64_t i = 0; i < reached.size(); ++i) {
    const int64_t u = n.adjacent(i);
    ASSERT_GE(u, 0);
    ASSERT_LT(u, n.placement.size());
    ASSERT_EQ(n.offset_shift + n.placement(u), placement(base + reached(i)))
        << "coordinate " << i << " box " << n.placement.ToString() << " + "
        << n.offset_shift << " adjacent " << n.adjacent.ToString();
  }
}

// ExpectExact on the corners of `reached` only, for levels too big to walk.
void ExpectExactOnCorners(const Layout& placement, int64_t base,
                          const Layout& reached, const NarrowedLevel& n) {
  const auto extents = reached.shape().leaves();
  for (uint64_t corner = 0; corner < (uint64_t{1} << extents.size());
       ++corner) {
    int64_t index = 0, weight = 1;
    for (size_t k = 0; k < extents.size(); ++k) {
      if (corner >> k & 1) index += (extents[k] - 1) * weight;
      weight *= extents[k];
    }
    const int64_t u = n.adjacent(index);
    ASSERT_GE(u, 0);
    ASSERT_LT(u, n.placement.size());
    ASSERT_EQ(n.offset_shift + n.placement(u),
              placement(base + reached(index)));
  }
}

// The swizzled scales of a 256x256 mxfp8 Tensor (representation-cli.md,
// "Scale layouts"): R = 256 rows, nb = 8 blocks.
const char kSwizzled256[] = "((32,4,2),(4,2)):((16,4,1024),(1,512))";

TEST(NarrowLevelTest, ATensorParallelShardOfSwizzledScalesIsABox) {
  // Rows 128..255: the second 128-row tile, all blocks.
  const Layout placement = L(kSwizzled256);
  const Layout reached = L("(128,(32,8)):(1,(0,256))");
  auto n = NarrowLevel(placement, 128, reached);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->placement.ToString(), "((32,4,1),(4,2)):((16,4,1024),(1,512))");
  EXPECT_EQ(n->offset_shift, 1024);
  EXPECT_EQ(n->adjacent.ToString(), "(128,(32,8)):(1,(0,128))");
  ExpectExact(placement, 128, reached, *n);
}

TEST(NarrowLevelTest, AShardInsideATileIsABoxWithPadding) {
  // Rows 32..63 reach leaf 1 at 1 only; rows 40..99 stay in one tile but
  // cover leaf 0 partly and wrap it, so the box keeps leaf 0 whole.
  const Layout placement = L(kSwizzled256);
  auto inside = NarrowLevel(placement, 32, L("(32,(32,8)):(1,(0,256))"));
  ASSERT_TRUE(inside.ok()) << inside.status();
  EXPECT_EQ(inside->placement.ToString(),
            "((32,1,1),(4,2)):((16,4,1024),(1,512))");
  auto wrap = NarrowLevel(placement, 0, L("(100,(32,8)):(1,(0,256))"));
  ASSERT_TRUE(wrap.ok()) << wrap.status();
  EXPECT_EQ(wrap->placement.ToString(),
            "((32,4,1),(4,2)):((16,4,1024),(1,512))");
  ExpectExact(placement, 0, L("(100,(32,8)):(1,(0,256))"), *wrap);
}

TEST(NarrowLevelTest, AShardThatCrossesATileIsRefusedNamingTheLeaf) {
  // Rows 64..191 start inside tile 0 and end inside tile 1.
  auto n = NarrowLevel(L(kSwizzled256), 64, L("(128,(32,8)):(1,(0,256))"));
  ASSERT_TRUE(IsValueError(n.status())) << n.status();
  EXPECT_NE(n.status().message().find(
                "wrap around leaf 1 (extent 4, in mode 0) from coordinate 2"),
            absl::string_view::npos)
      << n.status();
}

TEST(NarrowLevelTest, BlocksShardedAcrossTheFourBlockAtomAreABox) {
  // Blocks 4..7 of every row (columns 128..255): leaf 4 at 1.
  auto n = NarrowLevel(L(kSwizzled256), 4 * 256, L("(256,(32,4)):(1,(0,256))"));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->placement.ToString(), "((32,4,2),(4,1)):((16,4,1024),(1,512))");
  EXPECT_EQ(n->offset_shift, 512);
  // Blocks 2..5 cross the 4-block atom.
  EXPECT_TRUE(IsValueError(
      NarrowLevel(L(kSwizzled256), 2 * 256, L("(256,(32,4)):(1,(0,256))"))
          .status()));
}

TEST(NarrowLevelTest, DiagonalAndStridedReachesAreBoxes) {
  // Stride 5 over leaves (4,4) steps both leaves at once; stride 6 over a
  // leaf of 10 wraps seamlessly in steps of 2.
  auto diagonal = NarrowLevel(L("(4,4):(1,4)"), 0, L("3:5"));
  ASSERT_TRUE(diagonal.ok()) << diagonal.status();
  EXPECT_EQ(diagonal->adjacent.ToString(), "3:4");
  ExpectExact(L("(4,4):(1,4)"), 0, L("3:5"), *diagonal);
  auto seamless = NarrowLevel(L("(10,2):(1,10)"), 0, L("3:6"));
  ASSERT_TRUE(seamless.ok()) << seamless.status();
  EXPECT_EQ(seamless->placement.ToString(), "(5,2):(2,10)");
  EXPECT_EQ(seamless->adjacent.ToString(), "3:3");
  ExpectExact(L("(10,2):(1,10)"), 0, L("3:6"), *seamless);
}

TEST(NarrowLevelTest, NegativeStridesAndIndicesOutsideTheLevelAreRefused) {
  EXPECT_TRUE(IsValueError(NarrowLevel(L("8:1"), 4, L("2:-1")).status()));
  EXPECT_TRUE(IsValueError(NarrowLevel(L("8:1"), 8, L("1:0")).status()));
  EXPECT_TRUE(IsValueError(NarrowLevel(L("8:1"), 4, L("2:4")).status()));
  EXPECT_TRUE(IsValueError(
      NarrowLevel(L("8:1"), 0, L("(2,2):(4611686018427387904,4)")).status()));
}

TEST(NarrowLevelTest, ExtremeExtentsAreCheckedArithmetic) {
  // A level of (2^31.5)^2 indices: near INT64_MAX, every product stays in
  // range or is refused.
  const Layout huge = L("(3037000499,3037000499):(1,3037000499)");
  auto rows = NarrowLevel(huge, 3037000499, L("3037000498:3037000499"));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->placement.ToString(), "(1,3037000498):(1,3037000499)");
  EXPECT_EQ(rows->offset_shift, 3037000499);
  auto columns = NarrowLevel(huge, 5, L("(3037000494,2):(1,3037000499)"));
  ASSERT_TRUE(columns.ok()) << columns.status();
  ExpectExactOnCorners(huge, 5, L("(3037000494,2):(1,3037000499)"), *columns);
  for (const char* reached :
       {"2:9223372036854775806",
        "(2,2):(4611686018427387903,4611686018427387903)",
        "(3037000499,3037000499):(3037000499,1)", "2:-9223372036854775807"}) {
    auto n = NarrowLevel(huge, 1, L(reached));
    EXPECT_TRUE(IsValueError(n.status())) << reached << ": " << n.status();
  }
}

// A random reached layout over a random hierarchical grid, both small enough
// for the brute force.
struct RandomCase {
  Layout placement;
  int64_t base;
  Layout reached;
};

RandomCase MakeCase(strata::testing::RandomLayouts& gen) {
  for (;;) {
    const IntTuple grid = gen.Shape(4, 5, 2, 96);
    const auto extents = grid.leaves();
    std::vector<int64_t> weights;
    int64_t size = 1;
    for (int64_t e : extents) {
      weights.push_back(size);
      size *= e;
    }
    // Placement strides do not change which box exists; make them a random
    // compact order so that offsets are checked too.
    const Layout compact = gen.CompactInRandomOrder(grid);
    // Negative strides sometimes: the box's bounds then sum into min_index.
    const Layout placement =
        gen.Uniform(0, 2) != 0
            ? compact
            : *Layout::Create(
                  compact.shape(),
                  compact.stride().TransformLeaves([&](size_t, int64_t d) {
                    return gen.Uniform(0, 1) ? -d : d;
                  }));
    const IntTuple shape = gen.Shape(3, 5, 2, 48);
    const IntTuple stride = shape.TransformLeaves([&](size_t, int64_t) {
      switch (gen.Uniform(0, 3)) {
        case 0:
          return gen.Uniform(0, size - 1);
        case 1:
          return weights[gen.Uniform(0, weights.size() - 1)] *
                 gen.Uniform(1, 3);
        default:
          return weights[gen.Uniform(0, weights.size() - 1)];
      }
    });
    const Layout reached = *Layout::Create(shape, stride);
    if (reached.max_index() >= size) continue;
    const int64_t base = gen.Uniform(0, 2) == 0
                             ? 0
                             : gen.Uniform(0, size - 1 - reached.max_index());
    return {placement, base, reached};
  }
}

TEST(NarrowLevelTest, AgreesWithTheBruteForceOnEveryDecision) {
  strata::testing::RandomLayouts gen(14);
  int admitted = 0, refused = 0;
  for (int n = 0; n < 3000; ++n) {
    const RandomCase c = MakeCase(gen);
    SCOPED_TRACE(absl::StrCat("placement ", c.placement.ToString(), " base ",
                              c.base, " reached ", c.reached.ToString()));
    std::string box;
    const bool brute = SomeBoxAdmits(c.placement, c.base, c.reached, &box);
    auto narrowed = NarrowLevel(c.placement, c.base, c.reached);
    ASSERT_EQ(narrowed.ok(), brute)
        << (brute ? "brute force found box " + box
                  : std::string(narrowed.ok() ? "" : ""))
        << " " << narrowed.status();
    if (narrowed.ok()) {
      ++admitted;
      ExpectExact(c.placement, c.base, c.reached, *narrowed);
    } else {
      ++refused;
      EXPECT_TRUE(IsValueError(narrowed.status())) << narrowed.status();
    }
  }
  // Both decisions are exercised often.
  EXPECT_GT(admitted, 500);
  EXPECT_GT(refused, 500);
}

TEST(NarrowLevelTest, NarrowingInPlaceWritesWhatTheValueHolds) {
  // The views' path writes the new adjacent layout over `reached` itself and
  // skips whole boxes; both must give NarrowLevel's answer.
  strata::testing::RandomLayouts gen(15);
  int compared = 0;
  for (int n = 0; n < 2000; ++n) {
    const RandomCase c = MakeCase(gen);
    SCOPED_TRACE(absl::StrCat("placement ", c.placement.ToString(), " base ",
                              c.base, " reached ", c.reached.ToString()));
    const auto value = NarrowLevel(c.placement, c.base, c.reached);
    LevelBox box;
    Layout placement, adjacent = c.reached;
    const absl::Status status =
        NarrowLevelInto(c.placement, c.base, adjacent, /*write_whole=*/false,
                        &box, &placement, &adjacent);
    ASSERT_EQ(status.ok(), value.ok()) << status;
    if (!value.ok()) {
      EXPECT_EQ(status, value.status());
      continue;
    }
    EXPECT_EQ(box.whole, value->whole);
    EXPECT_EQ(box.start, value->start);
    EXPECT_EQ(box.step, value->step);
    EXPECT_EQ(box.extent, value->extent);
    EXPECT_EQ(box.offset_shift, value->offset_shift);
    if (box.whole) {
      EXPECT_EQ(adjacent, c.reached);  // Not written.
      continue;
    }
    EXPECT_EQ(placement, value->placement);
    EXPECT_EQ(adjacent, value->adjacent);
    ++compared;
  }
  EXPECT_GT(compared, 300);
}

}  // namespace
}  // namespace views_internal
}  // namespace strata
