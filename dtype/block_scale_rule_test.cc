#include "dtype/block_scale_rule.h"

#include <string>
#include <vector>

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
