#include "dtype/block_scale_rule.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dtype/registry.h"
#include "dtype/testing.h"
#include "gtest/gtest.h"
#include "layout/layout.h"
#include "layout/testing.h"
#include "util/errors.h"

namespace strata {
namespace {

using testing::FrozenContext;
using testing::L;

absl::Status Check(const std::string& l0, const std::string& s0) {
  const BlockScaleRule rule(32);
  return rule.Validate(
      FrozenContext(*dtypes::MXFP8E4M3(), {L(l0), L("(4,2):(2,1)")}, {L(s0)}));
}

// The mode BlockedMode names, or -1 where the rule refuses.
int BlockedMode(const std::string& l0, const std::string& s0) {
  const BlockScaleRule rule(32);
  const absl::StatusOr<int> mode = rule.BlockedMode(
      FrozenContext(*dtypes::MXFP8E4M3(), {L(l0), L("(4,2):(2,1)")}, {L(s0)}));
  return mode.ok() ? *mode : -1;
}

TEST(BlockScaleRuleTest, AcceptsOneScalePerAlignedBlock) {
  EXPECT_TRUE(Check("(4,(32,2)):(64,(1,32))", "(4,(32,2)):(1,(0,4))").ok());
  // Permuted modes and a broadcast mode of extent 32 are fine.
  EXPECT_TRUE(Check("((32,2),4):((1,32),64)", "((32,2),4):((0,4),1)").ok());
  EXPECT_TRUE(
      Check("(32,4,(32,2)):(0,64,(1,32))", "(32,4,(32,2)):(0,1,(0,4))").ok());
  // A hierarchical mode that L_0 broadcasts is no block, even where S_0
  // coalesces it to (32,...):(0,...): here only mode 1 counts.
  EXPECT_EQ(BlockedMode("((32,2),(32,2)):((0,0),(1,32))",
                        "((32,2),(32,2)):((0,1),(0,2))"),
            1);
  // Leaves of extent 1 do not stop a broadcast.
  EXPECT_EQ(BlockedMode("((1,32,2),(32,2)):((5,0,0),(1,32))",
                        "((1,32,2),(32,2)):((3,0,1),(0,2))"),
            1);
  // Nor does an integer mode L_0 broadcasts count.
  EXPECT_EQ(
      BlockedMode("(32,4,(32,2)):(0,64,(1,32))", "(32,4,(32,2)):(0,1,(0,4))"),
      2);
}

TEST(BlockScaleRuleTest, RejectsAnythingElseNamingDtypeBlockAndS0) {
  // Blocks of 16: a slice that cut the blocks.
  absl::Status cut = Check("(4,(16,2)):(64,(1,32))", "(4,(16,2)):(1,(0,4))");
  EXPECT_TRUE(IsValueError(cut));
  EXPECT_NE(cut.message().find("mxfp8_e4m3"), absl::string_view::npos) << cut;
  EXPECT_NE(cut.message().find("block of 32"), absl::string_view::npos) << cut;
  EXPECT_NE(cut.message().find("(4,(16,2)):(1,(0,4))"),
            absl::string_view::npos);
  // One scale per value: no stride-0 run.
  EXPECT_TRUE(IsValueError(Check("(4,64):(64,1)", "(4,64):(1,0)")));
  // Two blocked modes.
  EXPECT_TRUE(IsValueError(Check("((32,2),(32,2)):((1,32),(64,2048))",
                                 "((32,2),(32,2)):((0,1),(0,2))")));
  // Two runs share a scale: (32,2):(0,0) coalesces to 64:0.
  EXPECT_TRUE(
      IsValueError(Check("(4,(32,2)):(64,(1,32))", "(4,(32,2)):(1,(0,0))")));
}

TEST(BlockScaleRuleTest, HugeStridesAreCheckedArithmetic) {
  // Coalescing (2,2):(2^62,1) asks whether 1 == 2 * 2^62, which does not fit
  // in int64: the product is checked (ubsan), and the leaves stay apart.
  const absl::Status huge =
      Check("(32,(2,2)):(1,(32,64))", "(32,(2,2)):(0,(4611686018427387904,1))");
  EXPECT_TRUE(huge.ok()) << huge;
}

// A context a rule's caller made by hand, inconsistent on purpose: no level,
// but one adjacent layout.
class NoLevelContext final : public RepresentationValidationContext {
 public:
  explicit NoLevelContext(Layout s0) : adjacent_{s0} {}
  const DType& logical_dtype() const override { return *dtypes::MXFP8E4M3(); }
  absl::Span<const SimpleDType* const> storage_dtypes() const override {
    return {};
  }
  absl::Span<const Layout> placement_layouts() const override { return {}; }
  absl::Span<const Layout> adjacent_layouts() const override {
    return adjacent_;
  }
  absl::Span<const IntTuple> level_shapes() const override { return {}; }

 private:
  std::vector<Layout> adjacent_;
};

TEST(BlockScaleRuleTest, AContextOfNoLevelIsRefusedWithoutReadingL0) {
  // The rule asks num_levels() before it reads L_0 (placement_layout(0) of no
  // level is out of range).
  const BlockScaleRule rule(32);
  const NoLevelContext context(L("(4,(32,2)):(1,(0,4))"));
  const absl::Status status = rule.Validate(context);
  EXPECT_TRUE(IsValueError(status)) << status;
  EXPECT_NE(status.message().find("need a scale level"),
            absl::string_view::npos)
      << status;
  EXPECT_TRUE(IsValueError(rule.BlockedMode(context).status()));
}

// NOTE [ Slices that keep the block-scaling verdict ]: one block of a mode
// whose blocks L_0 broadcasts (each block's values read one index) leaves the
// mode broadcast, which the judgement skips with its block, so the rule
// claims nothing for that slice and refuses it; two blocks keep a moving leaf,
// and one block of values L_0 reads one by one is a constant mode. (The
// replay fuzzer found the wrong claim: a view of a validated Tensor the rule
// refuses.)
TEST(BlockScaleRuleTest, OneBlockOfBlocksThatLZeroBroadcastsIsJudgedAgain) {
  const BlockScaleRule rule(16);
  const auto context = [](const std::string& l0, const std::string& s0,
                          const std::string& l1) {
    return FrozenContext(*dtypes::NVFP4(), {L(l0), L(l1)}, {L(s0)});
  };
  const FrozenContext broadcast =
      context("(4,(16,4)):(64,(0,16))", "(4,(16,4)):(1,(0,4))", "(4,4):(4,1)");
  ASSERT_TRUE(rule.Validate(broadcast).ok()) << rule.Validate(broadcast);
  EXPECT_FALSE(rule.KeepsVerdictWhenSliced(broadcast, {1, 16, 16, 1}));
  const absl::Status one_block = rule.Validate(
      context("(4,(16,1)):(64,(0,0))", "(4,(16,1)):(1,(0,0))", "(4,1):(4,0)"));
  EXPECT_TRUE(IsValueError(one_block)) << one_block;
  EXPECT_TRUE(rule.KeepsVerdictWhenSliced(broadcast, {1, 16, 32, 1}));
  EXPECT_TRUE(rule.Validate(context("(4,(16,2)):(64,(0,16))",
                                    "(4,(16,2)):(1,(0,4))", "(4,2):(4,1)"))
                  .ok());
  const FrozenContext dense =
      context("(4,(16,4)):(64,(1,16))", "(4,(16,4)):(1,(0,4))", "(4,4):(4,1)");
  EXPECT_TRUE(rule.KeepsVerdictWhenSliced(dense, {1, 16, 16, 1}));
  EXPECT_TRUE(rule.Validate(context("(4,(16,1)):(64,(1,0))",
                                    "(4,(16,1)):(1,(0,0))", "(4,1):(4,0)"))
                  .ok());
}

// --- NOTE [ Verdicts that views keep ], as a law
// --------------------------------

// One leaf of a top-level mode of (L_0, S_0): its extent and both strides.
struct ModeLeaf {
  int64_t extent;
  int64_t l0_stride;
  int64_t s0_stride;
};
using RandomModes = std::vector<std::vector<ModeLeaf>>;

// A random context over `rule`'s levels: top-level modes that are blocked
// (b, n):(0, w) in S_0, one scale per value, constant, broadcast by L_0, or
// of extent 1; L_1 compact over the scale grid in a random order, sometimes
// with a merging stride-0 leaf; and, a fifth of the time, an S_0 stride
// replaced at random. Valid and invalid contexts both come out.
struct RandomContext {
  RandomModes modes;
  Layout l1;
};

RandomContext MakeRandomContext(std::mt19937& rng) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int rank = static_cast<int>(uniform(1, 4));
  RandomModes modes(rank);
  std::vector<int64_t> grid;  // The scale coordinates' extents.
  std::vector<int> grid_mode;
  for (int m = 0; m < rank; ++m) {
    switch (uniform(0, 5)) {
      case 0:
      case 1: {  // Blocked: b values share a scale, n scales.
        const int64_t b = int64_t{1} << uniform(1, 3);
        const int64_t n = uniform(1, 3);
        modes[m] = {{b, 1, 0}, {n, 1, -1}};
        grid.push_back(n);
        grid_mode.push_back(m);
        break;
      }
      case 2: {  // One scale per value.
        const int64_t n = uniform(2, 4);
        modes[m] = {{n, 1, -1}};
        grid.push_back(n);
        grid_mode.push_back(m);
        break;
      }
      case 3:  // Constant: one scale along the whole mode.
        modes[m] = {{uniform(2, 8), 1, 0}};
        break;
      case 4:  // Broadcast by L_0; S_0 anything.
        modes[m] = {{uniform(2, 4), 0, uniform(0, 3)}};
        break;
      default:  // Extent 1, any strides.
        modes[m] = {{1, uniform(0, 5), uniform(0, 5)}};
        break;
    }
  }
  // L_1 compact over the grid in a random order; the S_0 strides of the
  // moving leaves are their coordinates' weights in L_1's domain.
  std::vector<int64_t> weights(grid.size());
  int64_t weight = 1;
  for (size_t k = 0; k < grid.size(); ++k) {
    weights[k] = weight;
    weight *= grid[k];
  }
  size_t next = 0;
  for (int m = 0; m < rank; ++m) {
    for (ModeLeaf& leaf : modes[m]) {
      if (leaf.s0_stride == -1) leaf.s0_stride = weights[next++];
    }
  }
  std::vector<int64_t> order(grid.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int64_t> l1_strides(grid.size());
  int64_t packed = 1;
  for (int64_t k : order) {
    l1_strides[k] = packed;
    packed *= grid[k];
  }
  std::vector<int64_t> l1_extents = grid;
  if (!grid.empty() && uniform(0, 3) == 0) {
    // A merging leaf of stride 0 before a random coordinate.
    const size_t at = uniform(0, grid.size() - 1);
    l1_extents.insert(l1_extents.begin() + at, 2);
    l1_strides.insert(l1_strides.begin() + at, 0);
  }
  if (l1_extents.empty()) {
    l1_extents = {1};
    l1_strides = {0};
  }
  if (uniform(0, 4) == 0) {
    ModeLeaf& leaf = modes[uniform(0, rank - 1)].back();
    leaf.s0_stride = uniform(0, std::max<int64_t>(packed - 1, 0));
  }
  return {modes, *Layout::Create(IntTuple::Flat(l1_extents),
                                 IntTuple::Flat(l1_strides))};
}

// L_0 and S_0 of `modes`.
std::pair<Layout, Layout> ValueLayouts(const RandomModes& modes) {
  std::vector<IntTuple> shape, l0, s0;
  for (const auto& mode : modes) {
    std::vector<int64_t> e, d0, ds;
    for (const ModeLeaf& leaf : mode) {
      e.push_back(leaf.extent);
      d0.push_back(leaf.l0_stride);
      ds.push_back(leaf.s0_stride);
    }
    const bool leaf = e.size() == 1;
    shape.push_back(leaf ? IntTuple(e[0]) : IntTuple::Flat(e));
    l0.push_back(leaf ? IntTuple(d0[0]) : IntTuple::Flat(d0));
    s0.push_back(leaf ? IntTuple(ds[0]) : IntTuple::Flat(ds));
  }
  return {*Layout::Create(IntTuple::Tuple(shape), IntTuple::Tuple(l0)),
          *Layout::Create(IntTuple::Tuple(shape), IntTuple::Tuple(s0))};
}

// What the views of NOTE [ Verdicts that views keep ] do to the modes:
// permute them, insert a mode of extent 1 (any strides: a squeeze removes
// such modes), insert a broadcast mode (stride 0 on both), or widen a mode
// of extent 1 to a broadcast one.
RandomModes Rearranged(const RandomModes& modes, std::mt19937& rng) {
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  RandomModes out = modes;
  for (int step = 0, steps = static_cast<int>(uniform(1, 3)); step < steps;
       ++step) {
    switch (uniform(0, 3)) {
      case 0:
        std::shuffle(out.begin(), out.end(), rng);
        break;
      case 1:
        out.insert(out.begin() + uniform(0, out.size()),
                   {{1, uniform(0, 9), uniform(0, 9)}});
        break;
      case 2:
        out.insert(out.begin() + uniform(0, out.size()),
                   {{uniform(2, 5), 0, 0}});
        break;
      default:
        for (auto& mode : out) {
          if (mode.size() == 1 && mode[0].extent == 1) {
            mode[0] = {uniform(2, 5), 0, 0};
            break;
          }
        }
        break;
    }
  }
  return out;
}

absl::Status Judge(const BlockScaleRule& rule, const RandomModes& modes,
                   const Layout& l1) {
  const auto [l0, s0] = ValueLayouts(modes);
  if (!rule.tensor_scale()) {
    return rule.Validate(FrozenContext(*dtypes::MXFP8E4M3(), {l0, l1}, {s0}));
  }
  const Layout s1 = *Layout::Create(
      l1.shape(),
      l1.shape().TransformLeaves([](size_t, int64_t) { return 0; }));
  return rule.Validate(
      FrozenContext(*dtypes::NVFP4TS(), {l0, l1, L("1:0")}, {s0, s1}));
}

// The block-scale rule claims its verdict survives every view that only
// rearranges modes (BlockScaleRule::KeepsVerdictWhenModesRearrange): over
// random contexts, valid and not, of formats of one, two and whole blocks,
// ragged or not, with and without a tensor scale, the rearranged context
// gets the verdict of the original.
TEST(BlockScaleRuleTest, ViewsThatRearrangeModesKeepTheVerdict) {
  const std::vector<BlockScaleRule> rules = {
      BlockScaleRule(4),
      BlockScaleRule(BlockScaling{{2}, 1, false, true}, true),
      BlockScaleRule(BlockScaling{{4, 2}, 1, true, false}, false),
      BlockScaleRule(BlockScaling{{4, 4}, 1, false, false}, false),
      BlockScaleRule(BlockScaling{{kWholeMode}, 1, false, false}, false),
      BlockScaleRule(BlockScaling{{}, kWholeMode, false, false}, false),
      BlockScaleRule(BlockScaling{{8}, 1, true, false}, false),
  };
  for (const BlockScaleRule& rule : rules) {
    EXPECT_TRUE(rule.KeepsVerdictWhenModesRearrange());
  }
  std::mt19937 rng(38);
  int valid = 0, refused = 0;
  for (int n = 0; n < 6000; ++n) {
    const BlockScaleRule& rule = rules[n % rules.size()];
    const RandomContext context = MakeRandomContext(rng);
    const absl::Status before = Judge(rule, context.modes, context.l1);
    (before.ok() ? valid : refused) += 1;
    for (int k = 0; k < 4; ++k) {
      const RandomModes after_modes = Rearranged(context.modes, rng);
      const absl::Status after = Judge(rule, after_modes, context.l1);
      ASSERT_EQ(before.ok(), after.ok())
          << rule.scaling().Describe()
          << "\n  before: " << ValueLayouts(context.modes).second.ToString()
          << " over " << context.l1.ToString() << ": " << before
          << "\n  after:  " << ValueLayouts(after_modes).second.ToString()
          << ": " << after;
    }
  }
  // Both verdicts are common, so the law is tested on each.
  EXPECT_GT(valid, 1000);
  EXPECT_GT(refused, 1000);
}

TEST(BlockScaleRuleTest, BuiltInsCarryTheRule) {
  for (const CompoundDType* d :
       {dtypes::MXFP8E4M3(), dtypes::MXFP4(), dtypes::NVFP4()}) {
    ASSERT_EQ(d->rules().size(), 1u) << d->name();
    const auto* rule = dynamic_cast<const BlockScaleRule*>(d->rules()[0].get());
    ASSERT_NE(rule, nullptr);
    EXPECT_EQ(rule->block_size(), d == dtypes::NVFP4() ? 16 : 32);
  }
}

}  // namespace
}  // namespace strata
