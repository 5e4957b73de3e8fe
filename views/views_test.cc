#include "views/views.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "dtype/representation_rule.h"
#include "gtest/gtest.h"
#include "layout/algebra.h"
#include "layout/random_layouts.h"
#include "tests/test_util.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "views/view_paths.h"

namespace strata {
namespace {

using Coord = std::vector<int64_t>;

using testing::Describe;
using testing::ExpectCreatedBounds;
using testing::ExpectInvariant;
using testing::ForEachCoord;
using testing::L;
using testing::Reached;
using testing::RowMajorDecode;

Tensor Plain(const std::string& layout, int64_t offset = 0) {
  const Layout l = L(layout);
  auto carrier =
      *HostCarrier::Create(*dtypes::Float32(), offset + l.cosize() + 3);
  return *Tensor::Create(carrier, offset, l);
}

// An mxfp8-shaped Tensor: values (rows, cols) row-major, one scale per `block`
// values of the last mode, scales (rows, cols/block) row-major.
Tensor BlockScaled(int64_t rows, int64_t cols, int64_t block) {
  const int64_t nb = cols / block;
  auto values = *HostCarrier::Create(*dtypes::Float8E4M3FN(), rows * cols);
  auto scales = *HostCarrier::Create(*dtypes::Float8E8M0FNU(), rows * nb);
  const IntTuple shape = IntTuple::Tuple({rows, IntTuple::Tuple({block, nb})});
  auto rep = Representation::Create(
      dtypes::MXFP8E4M3(),
      {{dtypes::Float8E4M3FN(), values, 0,
        *Layout::Create(shape,
                        IntTuple::Tuple({cols, IntTuple::Tuple({1, block})}))},
       {dtypes::Float8E8M0FNU(), scales, 0,
        *Layout::RowMajor(IntTuple::Tuple({rows, nb}))}},
      {*Layout::Create(shape,
                       IntTuple::Tuple({1, IntTuple::Tuple({0, rows})}))});
  EXPECT_TRUE(rep.ok()) << rep.status();
  return MakeTensor(*rep);
}

int64_t RowMajorIndex(const Coord& c, const std::vector<int64_t>& extents) {
  int64_t index = 0;
  for (size_t k = 0; k < c.size(); ++k) index = index * extents[k] + c[k];
  return index;
}

// A two-level compound without rules, for blocks of any size.
const CompoundDType* TestBlocked() {
  static const CompoundDType* dtype = *CompoundDType::Create(
      "test_blocked", {dtypes::Float8E4M3FN(), dtypes::Float8E8M0FNU()});
  return dtype;
}

// A TestBlocked Tensor of (l0, l1, s0) at random offsets in fresh carriers.
Tensor TwoLevelAtRandomOffsets(testing::RandomLayouts& gen, const Layout& l0,
                               const Layout& l1, const Layout& s0) {
  const int64_t off0 = gen.Uniform(0, 3);
  const int64_t off1 = gen.Uniform(0, 3);
  auto values =
      *HostCarrier::Create(*dtypes::Float8E4M3FN(), off0 + l0.cosize());
  auto scales =
      *HostCarrier::Create(*dtypes::Float8E8M0FNU(), off1 + l1.cosize());
  auto rep =
      Representation::Create(TestBlocked(),
                             {{dtypes::Float8E4M3FN(), values, off0, l0},
                              {dtypes::Float8E8M0FNU(), scales, off1, l1}},
                             {s0});
  EXPECT_TRUE(rep.ok()) << rep.status();
  return MakeTensor(*rep);
}

// Random one- and two-level tensors of at most 512 elements.
Tensor RandomTensor(testing::RandomLayouts& gen, bool two_level) {
  if (!two_level) {
    const Layout l = gen.Injective(4, 4, 2);
    const int64_t offset = gen.Uniform(0, 5);
    auto carrier = *HostCarrier::Create(*dtypes::Int32(), offset + l.cosize());
    return *Tensor::Create(carrier, offset, l);
  }
  // Values: random modes plus a blocked mode (B, nb); one scale per block.
  const int rank = gen.Uniform(1, 3);
  const int blocked = gen.Uniform(0, rank - 1);
  const int64_t block = gen.Uniform(1, 2) * 2;
  std::vector<IntTuple> value_modes;
  std::vector<int64_t> scale_extents;
  for (int i = 0; i < rank; ++i) {
    const int64_t e = gen.Uniform(1, 4);
    if (i == blocked) {
      value_modes.push_back(IntTuple::Tuple({block, e}));
    } else {
      value_modes.push_back(e);
    }
    scale_extents.push_back(e);
  }
  const IntTuple shape = IntTuple::Tuple(value_modes);
  // Values compact in a random leaf order; scales in a random injective order.
  (void)gen.Injective(8, 1, 0);  // Only used for its RNG draws.
  const Layout l0 = gen.CompactInRandomOrder(shape);
  const IntTuple scale_shape = IntTuple::Flat(scale_extents);
  const Layout l1 = gen.Uniform(0, 1) ? *Layout::RowMajor(scale_shape)
                                      : *Layout::ColumnMajor(scale_shape);
  // S_0: block leaf -> 0, every other leaf -> its scale coordinate's colex
  // weight.
  std::vector<int64_t> weights(rank);
  int64_t running = 1;
  for (int i = 0; i < rank; ++i) {
    weights[i] = running;
    running *= scale_extents[i];
  }
  std::vector<int64_t> s_strides;
  for (int i = 0; i < rank; ++i) {
    if (i == blocked) s_strides.push_back(0);
    s_strides.push_back(weights[i]);
  }
  const Layout s0 = *Layout::Create(
      shape,
      shape.TransformLeaves([&](size_t k, int64_t) { return s_strides[k]; }));
  return TwoLevelAtRandomOffsets(gen, l0, l1, s0);
}

// --- Hand cases --------------------------------------------------------------

TEST(ViewsTest, PermuteSwapsModes) {
  const Tensor t = Plain("(4,8):(8,1)");
  auto v = Permute(t, {1, 0});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->layout().ToString(), "(8,4):(1,8)");
  EXPECT_EQ(v->carrier(), t.carrier());
  ExpectInvariant(t, *v, [](const Coord& c) { return Coord{c[1], c[0]}; });
}

TEST(ViewsTest, SliceMovesTheOffset) {
  const Tensor t = Plain("(4,8):(8,1)");
  auto v = Slice(t, 1, 2, 8, 3);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->layout().ToString(), "(4,2):(8,3)");
  EXPECT_EQ(v->offset(), 2);
  EXPECT_EQ(v->shape(), (std::vector<int64_t>{4, 2}));
}

TEST(ViewsTest, ReshapeMergesModesPyTorchCannot) {
  // The architecture's example: (2,3,4):(1,2,6) viewed as (6,4).
  const Tensor t = Plain("(2,3,4):(1,2,6)");
  auto v = Reshape(t, {6, 4});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->layout().ToString(), "((3,2),4):((2,1),6)");
  const std::vector<int64_t> old_shape = {2, 3, 4};
  ExpectInvariant(t, *v, [&](const Coord& c) {
    return RowMajorDecode(RowMajorIndex(c, {6, 4}), old_shape);
  });
}

TEST(ViewsTest, ReshapeThatNeedsACopyNamesTheModes) {
  const Tensor t = Plain("(2,3):(1,10)");
  auto v = Reshape(t, {3, 2});
  EXPECT_TRUE(IsValueError(v.status()));
  EXPECT_NE(v.status().message().find("is not a view"), absl::string_view::npos)
      << v.status();
  EXPECT_TRUE(IsValueError(Reshape(t, {4, 2}).status()));
}

TEST(ViewsTest, BroadcastsUseStrideZero) {
  const Tensor t = Plain("(1,8):(0,1)");
  auto v = BroadcastTo(t, {3, 4, 8});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->layout().ToString(), "(3,4,8):(0,0,1)");
  auto w = BroadcastInDim(Plain("8:1"), {2, 8, 3}, {1});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->layout().ToString(), "(2,8,3):(0,1,0)");
}

TEST(ViewsTest, SqueezeAndUnsqueeze) {
  const Tensor t = Plain("(1,8,1):(0,1,0)");
  EXPECT_EQ(Squeeze(t)->layout().ToString(), "8:1");
  EXPECT_EQ(Squeeze(t, 2)->layout().ToString(), "(1,8):(0,1)");
  EXPECT_EQ(Unsqueeze(Plain("8:1"), 1)->layout().ToString(), "(8,1):(1,0)");
  EXPECT_EQ(Unsqueeze(Plain("8:1"), 0)->layout().ToString(), "(1,8):(0,1)");
}

TEST(ViewsTest, AsStridedIsStorageRelative) {
  const Tensor t = Plain("(4,8):(8,1)", 5);
  auto v = AsStrided(t, L("(2,2):(1,8)"), 3);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->offset(), 3);
  EXPECT_EQ(v->layout().ToString(), "(2,2):(1,8)");
  EXPECT_TRUE(IsValueError(AsStrided(t, L("100:1"), 0).status()));
}

TEST(ViewsTest, PublicPropertiesComeFromTheNewRepresentation) {
  const Tensor t = Plain("(4,8):(8,1)");
  auto v = Slice(t, 0, 1, 3);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->size(), 16);
  EXPECT_EQ(v->offset(), 8);
  EXPECT_EQ(t.size(), 32);
  EXPECT_EQ(t.offset(), 0);
}

TEST(ViewsTest, BadArgumentsAreValueErrors) {
  const Tensor t = Plain("(4,8):(8,1)");
  struct Case {
    const char* name;
    absl::Status status;
  } cases[] = {
      {"repeated axis", Permute(t, {0, 0}).status()},
      {"missing axis", Permute(t, {0}).status()},
      {"axis out of range", Permute(t, {0, 2}).status()},
      {"dim out of range", Slice(t, 2, 0, 1).status()},
      {"step 0", Slice(t, 0, 0, 4, 0).status()},
      {"negative step", Slice(t, 0, 0, 4, -1).status()},
      {"start > stop", Slice(t, 0, 3, 2).status()},
      {"stop beyond", Slice(t, 0, 0, 5).status()},
      {"broadcast non-1", BroadcastTo(t, {4, 9}).status()},
      {"broadcast fewer modes", BroadcastTo(t, {8}).status()},
      {"broadcast negative", BroadcastTo(t, {-1, 4, 8}).status()},
      {"in_dim not increasing", BroadcastInDim(t, {4, 8, 2}, {1, 0}).status()},
      {"in_dim mismatch", BroadcastInDim(t, {4, 7}, {0, 1}).status()},
      {"squeeze non-1", Squeeze(t, 0).status()},
      {"squeeze out of range", Squeeze(t, 5).status()},
      {"unsqueeze out of range", Unsqueeze(t, 3).status()},
      {"negative as_strided offset", AsStrided(t, L("4:1"), -1).status()},
      {"overflowing shape", Reshape(t, {int64_t{1} << 62, 8}).status()},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(IsValueError(c.status)) << c.name << ": " << c.status;
  }
}

// --- Multi-subtensor views ---------------------------------------------------

TEST(BlockScaledViewsTest, PermuteMovesScalesWithValues) {
  const Tensor t = BlockScaled(4, 64, 32);
  auto v = Permute(t, {1, 0});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(TensorAccess::representation(*v).adjacent_layouts()[0].ToString(),
            "((32,2),4):((0,4),1)");
  ExpectInvariant(t, *v, [](const Coord& c) { return Coord{c[1], c[0]}; });
}

TEST(BlockScaledViewsTest, SliceNarrowsTheScaleLevel) {
  const Tensor t = BlockScaled(4, 64, 32);
  auto v = Slice(t, 0, 1, 3);
  ASSERT_TRUE(v.ok()) << v.status();
  const Representation& rep = TensorAccess::representation(*v);
  EXPECT_EQ(rep.subtensor(1).offset, 2) << "row 1's scales start at index 2";
  EXPECT_EQ(rep.subtensor(1).placement.size(), 4);
  ExpectInvariant(t, *v, [](const Coord& c) { return Coord{c[0] + 1, c[1]}; });
  auto blocks = Slice(t, 1, 32, 64);
  ASSERT_TRUE(blocks.ok()) << blocks.status();
  ExpectInvariant(t, *blocks, [](const Coord& c) {
    return Coord{c[0], c[1] + 32};
  });
}

TEST(BlockScaledViewsTest, ASliceThatCutsBlocksFailsTheDtypeRule) {
  const Tensor t = BlockScaled(4, 64, 32);
  auto v = Slice(t, 1, 0, 16);
  EXPECT_TRUE(IsValueError(v.status()));
  EXPECT_NE(v.status().message().find(
                "mxfp8_e4m3 needs one scale per aligned block of 32"),
            absl::string_view::npos)
      << v.status();
  EXPECT_TRUE(Slice(t, 1, 32, 64).ok());
  EXPECT_TRUE(Slice(t, 1, 0, 64, 2).status().message().find("block") !=
              absl::string_view::npos);
}

TEST(BlockScaledViewsTest, ASliceThatWrapsABlockFails) {
  // Elements 16..47 of the (32,2) mode: not a layout of the hierarchical mode.
  const Tensor t = BlockScaled(4, 64, 32);
  auto v = Slice(t, 1, 16, 48);
  EXPECT_TRUE(IsValueError(v.status())) << v.status();
}

TEST(BlockScaledViewsTest, ChainsKeepTheInvariant) {
  const Tensor t = BlockScaled(4, 64, 32);
  auto a = Permute(t, {1, 0});
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = Slice(*a, 1, 1, 4, 2);
  ASSERT_TRUE(b.ok()) << b.status();
  auto c = Unsqueeze(*b, 0);
  ASSERT_TRUE(c.ok()) << c.status();
  auto d = BroadcastTo(*c, {3, 64, 2});
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectInvariant(t, *d, [](const Coord& k) {
    return Coord{1 + 2 * k[2], k[1]};
  });
  auto e = Reshape(t, {2, 128});
  ASSERT_TRUE(e.ok()) << e.status();
  ExpectInvariant(t, *e, [](const Coord& k) {
    return RowMajorDecode(RowMajorIndex(k, {2, 128}), {4, 64});
  });
}

TEST(BlockScaledViewsTest, AsStridedGoesThroughTheInverse) {
  const Tensor t = BlockScaled(4, 64, 32);
  // Rows 2..3, columns 32..63, as a storage-relative layout.
  auto v = AsStrided(t, L("(2,32):(64,1)"), 2 * 64 + 32);
  ASSERT_TRUE(v.ok()) << v.status();
  ExpectInvariant(t, *v, [](const Coord& k) {
    return Coord{2 + k[0], 32 + k[1]};
  });
  // An integer layout keeps the view's rank, though S_0's image refines it.
  auto flat = AsStrided(t, L("32:1"), 64 + 32);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ(flat->shape(), (std::vector<int64_t>{32}));
  ExpectInvariant(t, *flat, [](const Coord& k) { return Coord{1, 32 + k[0]}; });
  // Reaching past the values level 0 holds is refused.
  EXPECT_TRUE(IsValueError(AsStrided(t, L("(2,32):(64,1)"), 4 * 64).status()));
}

// --- Swizzled 128x4 scale layouts (representation-cli.md, "Scale layouts") --

// An mxfp8_e4m3 Tensor whose scales are in the 128x4 swizzle: batches x rows x
// cols with blocks along cols (blocks_on_rows = false), or batches x cols x
// rows with blocks along the second-to-last mode (MN-major). Rows pad to
// 128, blocks to 4.
Tensor Swizzled(int64_t batches, int64_t rows, int64_t cols,
                bool blocks_on_rows = false) {
  const int64_t nb = cols / 32;
  const int64_t rp = (rows + 127) / 128 * 128, bp = (nb + 3) / 4 * 4;
  auto values =
      *HostCarrier::Create(*dtypes::Float8E4M3FN(), batches * rows * cols);
  auto scales =
      *HostCarrier::Create(*dtypes::Float8E8M0FNU(), batches * rp * bp);
  const IntTuple row_leaves = IntTuple::Tuple({32, 4, rp / 128});
  const IntTuple row_strides = IntTuple::Tuple({16, 4, 128 * bp});
  const IntTuple block_leaves = IntTuple::Tuple({4, bp / 4});
  const IntTuple block_strides = IntTuple::Tuple({1, 512});
  const IntTuple blocked = IntTuple::Tuple({32, nb});
  std::vector<IntTuple> shape, l0_stride, l1_shape, l1_stride, s0_stride;
  if (batches > 1) {
    shape.push_back(batches);
    l0_stride.push_back(rows * cols);
    l1_shape.push_back(batches);
    l1_stride.push_back(rp * bp);
    s0_stride.push_back(1);
  }
  const int64_t b = batches;  // Colex weights of the level-1 domain.
  if (!blocks_on_rows) {      // (rows, cols): level 1 is (rows, blocks).
    shape.insert(shape.end(), {rows, blocked});
    l0_stride.insert(l0_stride.end(), {cols, IntTuple::Tuple({1, 32})});
    l1_shape.insert(l1_shape.end(), {row_leaves, block_leaves});
    l1_stride.insert(l1_stride.end(), {row_strides, block_strides});
    s0_stride.insert(s0_stride.end(), {b, IntTuple::Tuple({0, b * rp})});
  } else {  // (cols, rows): level 1 is (blocks, rows).
    shape.insert(shape.end(), {blocked, rows});
    l0_stride.insert(l0_stride.end(), {IntTuple::Tuple({rows, 32 * rows}), 1});
    l1_shape.insert(l1_shape.end(), {block_leaves, row_leaves});
    l1_stride.insert(l1_stride.end(), {block_strides, row_strides});
    s0_stride.insert(s0_stride.end(), {IntTuple::Tuple({0, b}), b * bp});
  }
  const IntTuple s = IntTuple::Tuple(shape);
  auto rep =
      Representation::Create(dtypes::MXFP8E4M3(),
                             {{dtypes::Float8E4M3FN(), values, 0,
                               *Layout::Create(s, IntTuple::Tuple(l0_stride))},
                              {dtypes::Float8E8M0FNU(), scales, 0,
                               *Layout::Create(IntTuple::Tuple(l1_shape),
                                               IntTuple::Tuple(l1_stride))}},
                             {*Layout::Create(s, IntTuple::Tuple(s0_stride))});
  EXPECT_TRUE(rep.ok()) << rep.status();
  return MakeTensor(*rep);
}

// The carrier index of the scale of (batch, r, b), by the published formula.
int64_t SwizzledIndex(int64_t batch, int64_t r, int64_t b, int64_t rows,
                      int64_t nb) {
  const int64_t rp = (rows + 127) / 128 * 128, bp = (nb + 3) / 4 * 4;
  return batch * rp * bp + (r / 128) * (bp / 4) * 512 + (b / 4) * 512 +
         (r % 32) * 16 + ((r / 32) % 4) * 4 + b % 4;
}

TEST(SwizzledViewsTest, TheRepresentationIsThePublishedFormula) {
  const Tensor t = Swizzled(1, 200, 160);
  ForEachCoord(t.shape(), [&](const Coord& c) {
    ASSERT_EQ(Reached(t, c)[1], SwizzledIndex(0, c[0], c[1] / 32, 200, 5));
  });
  const Tensor mn = Swizzled(2, 130, 64, true);
  ForEachCoord(mn.shape(), [&](const Coord& c) {
    ASSERT_EQ(Reached(mn, c)[1], SwizzledIndex(c[0], c[2], c[1] / 32, 130, 2));
  });
}

// Each [start, stop) of dim 0 is a view that keeps the invariant.
void ExpectRowShardsAreViews(
    const Tensor& t, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  for (const std::pair<int64_t, int64_t>& range : ranges) {
    const int64_t start = range.first;
    auto v = Slice(t, 0, start, range.second);
    ASSERT_TRUE(v.ok()) << start << ".." << range.second << ": " << v.status();
    ExpectInvariant(t, *v, [&](const Coord& c) {
      return Coord{start + c[0], c[1]};
    });
  }
}

TEST(SwizzledViewsTest, ATensorParallelShardIsAView) {
  // `strata view FILE slice 0 128 256 1` of a 256x256 mxfp8 Tensor.
  const Tensor t = Swizzled(1, 256, 256);
  auto shard = Slice(t, 0, 128, 256);
  ASSERT_TRUE(shard.ok()) << shard.status();
  const Representation& rep = TensorAccess::representation(*shard);
  EXPECT_EQ(rep.subtensor(1).offset, 1024);
  EXPECT_EQ(rep.subtensor(1).placement.ToString(),
            "((32,4,1),(4,2)):((16,4,1024),(1,512))");
  ExpectInvariant(t, *shard, [](const Coord& c) {
    return Coord{128 + c[0], c[1]};
  });
  // Column shards of whole 4-block atoms (128 columns) are views too.
  auto columns = Slice(t, 1, 128, 256);
  ASSERT_TRUE(columns.ok()) << columns.status();
  ExpectInvariant(t, *columns, [](const Coord& c) {
    return Coord{c[0], 128 + c[1]};
  });
  // A shard of a shard.
  auto quarter = Slice(*shard, 1, 0, 128);
  ASSERT_TRUE(quarter.ok()) << quarter.status();
  ExpectInvariant(t, *quarter, [](const Coord& c) {
    return Coord{128 + c[0], c[1]};
  });
}

TEST(SwizzledViewsTest, ShardsThatCrossATileOrCutABlockAreRefused) {
  const Tensor t = Swizzled(1, 256, 256);
  // Rows 64..191 start inside tile 0 and end in tile 1.
  auto rows = Slice(t, 0, 64, 192);
  ASSERT_TRUE(IsValueError(rows.status())) << rows.status();
  EXPECT_NE(rows.status().message().find("level 1 cannot be narrowed exactly"),
            absl::string_view::npos)
      << rows.status();
  EXPECT_NE(
      rows.status().message().find("wrap around leaf 1 (extent 4, in mode 0)"),
      absl::string_view::npos)
      << rows.status();
  // Blocks 2..5 cross the 4-block atom.
  EXPECT_TRUE(IsValueError(Slice(t, 1, 64, 192).status()));
  // Columns 16..47 cut a block: the dtype rule refuses.
  auto cut = Slice(t, 1, 16, 48);
  ASSERT_TRUE(IsValueError(cut.status()));
  // Shards inside one tile are views: rows 32..63 and rows 0..99 (the box
  // keeps the unreached rows of the tile as padding). Rows 130..255 start at
  // row 2 of a 32-row group and carry out of it: no box starts there.
  EXPECT_TRUE(IsValueError(Slice(t, 0, 130, 256).status()));
  ExpectRowShardsAreViews(t, {{32, 64}, {0, 100}, {160, 256}, {128, 129}});
}

TEST(SwizzledViewsTest, PaddedBatchedAndMnMajorShards) {
  // 200 rows pad to 256 and 5 blocks to 8.
  const Tensor padded = Swizzled(1, 200, 160);
  ExpectRowShardsAreViews(padded, {{128, 200}, {0, 128}, {0, 100}, {160, 170}});
  auto last_blocks = Slice(padded, 1, 128, 160);
  ASSERT_TRUE(last_blocks.ok()) << last_blocks.status();
  ExpectInvariant(padded, *last_blocks, [](const Coord& c) {
    return Coord{c[0], 128 + c[1]};
  });
  // One expert of three, then its second tile.
  const Tensor experts = Swizzled(3, 256, 64);
  auto expert = Slice(experts, 0, 1, 2);
  ASSERT_TRUE(expert.ok()) << expert.status();
  auto tile = Slice(*expert, 1, 128, 256);
  ASSERT_TRUE(tile.ok()) << tile.status();
  ExpectInvariant(experts, *tile, [](const Coord& c) {
    return Coord{1, 128 + c[1], c[2]};
  });
  EXPECT_TRUE(IsValueError(Slice(*expert, 1, 100, 200).status()));
  // MN-major: (K, N) blocked along K; a shard of N is a view.
  const Tensor mn = Swizzled(1, 256, 64, true);
  auto n_shard = Slice(mn, 1, 128, 256);
  ASSERT_TRUE(n_shard.ok()) << n_shard.status();
  ExpectInvariant(mn, *n_shard, [](const Coord& c) {
    return Coord{c[0], 128 + c[1]};
  });
  EXPECT_TRUE(IsValueError(Slice(mn, 1, 64, 192).status()));
}

TEST(SwizzledViewsTest, StridedTransposedReshapedAndBroadcastShards) {
  const Tensor t = Swizzled(1, 256, 128);
  // Every other row: steps of 2 along leaf 0 of extent 32, seamlessly.
  for (int64_t start : {0, 1}) {
    auto v = Slice(t, 0, start, 256, 2);
    ASSERT_TRUE(v.ok()) << v.status();
    ExpectInvariant(t, *v, [&](const Coord& c) {
      return Coord{start + 2 * c[0], c[1]};
    });
  }
  // Transpose, then shard the (former) rows.
  auto tr = Permute(t, {1, 0});
  ASSERT_TRUE(tr.ok()) << tr.status();
  auto tr_shard = Slice(*tr, 1, 128, 256);
  ASSERT_TRUE(tr_shard.ok()) << tr_shard.status();
  ExpectInvariant(t, *tr_shard, [](const Coord& c) {
    return Coord{128 + c[1], c[0]};
  });
  EXPECT_TRUE(IsValueError(Slice(*tr, 1, 96, 160).status()));
  // Reshape the rows into (2, 128) tiles, then take tile 1.
  auto tiles = Reshape(t, {2, 128, 128});
  ASSERT_TRUE(tiles.ok()) << tiles.status();
  auto tile = Slice(*tiles, 0, 1, 2);
  ASSERT_TRUE(tile.ok()) << tile.status();
  ExpectInvariant(t, *tile, [](const Coord& c) {
    return Coord{128 + c[1], c[2]};
  });
  // Broadcast a new leading mode, then shard the rows.
  auto wide = BroadcastTo(t, {3, 256, 128});
  ASSERT_TRUE(wide.ok()) << wide.status();
  auto wide_shard = Slice(*wide, 1, 128, 256);
  ASSERT_TRUE(wide_shard.ok()) << wide_shard.status();
  ExpectInvariant(t, *wide_shard, [](const Coord& c) {
    return Coord{128 + c[1], c[2]};
  });
  // AsStrided of the second tile, storage-relative.
  auto strided = AsStrided(t, L("(128,128):(128,1)"), 128 * 128);
  ASSERT_TRUE(strided.ok()) << strided.status();
  ExpectInvariant(t, *strided, [](const Coord& c) {
    return Coord{128 + c[0], c[1]};
  });
  EXPECT_TRUE(
      IsValueError(AsStrided(t, L("(128,128):(128,1)"), 64 * 128).status()));
}

// --- Property tests over random tensors --------------------------------------

class RandomViewsTest : public ::testing::TestWithParam<bool> {};

TEST_P(RandomViewsTest, EveryViewKeepsTheInvariant) {
  const bool two_level = GetParam();
  testing::RandomLayouts gen(two_level ? 21 : 20);
  int admitted = 0;
  for (int n = 0; n < 400; ++n) {
    const Tensor t = RandomTensor(gen, two_level);
    const std::vector<int64_t> shape = t.shape();
    const int64_t rank = shape.size();
    SCOPED_TRACE(t.layout().ToString());
    // permute
    SCOPED_TRACE("permute");
    std::vector<int64_t> perm(rank);
    for (int64_t i = 0; i < rank; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), gen.engine());
    if (auto v = Permute(t, perm); v.ok()) {
      ++admitted;
      ExpectInvariant(t, *v, [&](const Coord& c) {
        Coord old(rank);
        for (int64_t i = 0; i < rank; ++i) old[perm[i]] = c[i];
        return old;
      });
    } else {
      ADD_FAILURE() << v.status();
    }
    // slice
    SCOPED_TRACE("slice");
    const int64_t dim = gen.Uniform(0, rank - 1);
    const int64_t start = gen.Uniform(0, shape[dim]);
    const int64_t stop = gen.Uniform(start, shape[dim]);
    const int64_t step = gen.Uniform(1, 3);
    if (auto v = Slice(t, dim, start, stop, step); v.ok()) {
      ++admitted;
      ExpectInvariant(t, *v, [&](const Coord& c) {
        Coord old = c;
        old[dim] = start + step * c[dim];
        return old;
      });
    } else {
      ASSERT_TRUE(IsValueError(v.status())) << v.status();
    }
    // unsqueeze, then broadcast the new mode, then squeeze it again
    SCOPED_TRACE(
        "unsqueeze, then broadcast the new mode, then squeeze it again");
    const int64_t pos = gen.Uniform(0, rank);
    auto u = Unsqueeze(t, pos);
    ASSERT_TRUE(u.ok()) << u.status();
    ExpectInvariant(t, *u, [&](const Coord& c) {
      Coord old = c;
      old.erase(old.begin() + pos);
      return old;
    });
    std::vector<int64_t> wide = u->shape();
    wide[pos] = 3;
    auto b = BroadcastTo(*u, wide);
    ASSERT_TRUE(b.ok()) << b.status();
    ExpectInvariant(t, *b, [&](const Coord& c) {
      Coord old = c;
      old.erase(old.begin() + pos);
      return old;
    });
    auto s = Squeeze(*u, pos);
    ASSERT_TRUE(s.ok()) << s.status();
    ExpectInvariant(t, *s, [](const Coord& c) { return c; });
    // broadcast_in_dim into a rank+1 shape
    SCOPED_TRACE("broadcast_in_dim into a rank+1 shape");
    std::vector<int64_t> dims(rank);
    std::vector<int64_t> target;
    const int64_t extra = gen.Uniform(0, rank);
    for (int64_t i = 0, k = 0; i <= rank; ++i) {
      if (i == extra) {
        target.push_back(2);
      } else {
        dims[k++] = target.size();
        target.push_back(shape[k - 1]);
      }
    }
    auto bid = BroadcastInDim(t, target, dims);
    ASSERT_TRUE(bid.ok()) << bid.status();
    ExpectInvariant(t, *bid, [&](const Coord& c) {
      Coord old(rank);
      for (int64_t i = 0; i < rank; ++i) old[i] = c[dims[i]];
      return old;
    });
    // reshape to the flat size, and to a random factorisation
    SCOPED_TRACE("reshape to the flat size, and to a random factorisation");
    const int64_t size = t.size();
    const int64_t f = gen.Uniform(1, size);
    const std::vector<int64_t> new_extents =
        size % f == 0 ? std::vector<int64_t>{f, size / f}
                      : std::vector<int64_t>{size};
    if (auto v = Reshape(t, new_extents); v.ok()) {
      ++admitted;
      ExpectInvariant(t, *v, [&](const Coord& c) {
        return RowMajorDecode(RowMajorIndex(c, new_extents), shape);
      });
    } else {
      ASSERT_TRUE(IsValueError(v.status())) << v.status();
    }
  }
  EXPECT_GT(admitted, 600);
}

INSTANTIATE_TEST_SUITE_P(Levels, RandomViewsTest, ::testing::Bool());

// A two-level Tensor whose level 1 is hierarchical: 1-3 modes of 2-4 leaves
// each, in a random compact order, and a random S_0 whose strides are mostly
// multiples of level 1's leaf weights, so that views reach boxes, wrap
// leaves, cross them seamlessly and diagonally.
Tensor RandomHierarchicalTensor(testing::RandomLayouts& gen) {
  for (;;) {
    // Values as in RandomTensor: random modes plus a blocked mode (B, nb).
    const int rank = gen.Uniform(1, 3);
    const int blocked = gen.Uniform(0, rank - 1);
    std::vector<IntTuple> value_modes;
    for (int i = 0; i < rank; ++i) {
      const int64_t e = gen.Uniform(1, 6);
      value_modes.push_back(i == blocked
                                ? IntTuple::Tuple({gen.Uniform(1, 2) * 2, e})
                                : IntTuple(e));
    }
    const IntTuple shape = IntTuple::Tuple(value_modes);
    // Level 1: 2-4 leaves per mode.
    std::vector<IntTuple> level_modes;
    const int level_rank = gen.Uniform(1, 3);
    for (int i = 0; i < level_rank; ++i) {
      std::vector<int64_t> leaves(gen.Uniform(2, 4));
      for (int64_t& e : leaves) e = gen.Uniform(1, 4);
      level_modes.push_back(IntTuple::Flat(leaves));
    }
    const IntTuple level_shape = IntTuple::Tuple(level_modes);
    const auto level_leaves = level_shape.leaves();
    std::vector<int64_t> weights;
    int64_t level_size = 1;
    for (int64_t e : level_leaves) {
      weights.push_back(level_size);
      level_size *= e;
    }
    if (level_size > 512 || level_size < 2) continue;
    const Layout l0 = gen.CompactInRandomOrder(shape);
    const Layout l1 = gen.CompactInRandomOrder(level_shape);
    const Layout s0 = *Layout::Create(
        shape, shape.TransformLeaves([&](size_t, int64_t) -> int64_t {
          switch (gen.Uniform(0, 5)) {
            case 0:
              return 0;
            case 1:
              return gen.Uniform(0, level_size - 1);
            case 2:
              return weights[gen.Uniform(0, weights.size() - 1)] *
                     gen.Uniform(1, 3);
            default:
              return weights[gen.Uniform(0, weights.size() - 1)];
          }
        }));
    if (s0.max_index() >= level_size) continue;
    return TwoLevelAtRandomOffsets(gen, l0, l1, s0);
  }
}

TEST(HierarchicalViewsTest, EveryAdmittedViewKeepsTheInvariantAtEveryLevel) {
  testing::RandomLayouts gen(14);
  int admitted = 0, refused = 0;
  auto check = [&](const Tensor& source, const absl::StatusOr<Tensor>& view,
                   const std::function<Coord(const Coord&)>& sigma) {
    if (!view.ok()) {
      ++refused;
      ASSERT_TRUE(IsValueError(view.status())) << view.status();
      return;
    }
    ++admitted;
    ExpectInvariant(source, *view, sigma);
  };
  for (int n = 0; n < 600; ++n) {
    const Tensor t = RandomHierarchicalTensor(gen);
    SCOPED_TRACE(Describe(t));
    const std::vector<int64_t> shape = t.shape();
    const int64_t rank = shape.size();
    // A slice, and a slice of it along another random dim.
    const int64_t dim = gen.Uniform(0, rank - 1);
    const int64_t start = gen.Uniform(0, shape[dim]);
    const int64_t stop = gen.Uniform(start, shape[dim]);
    const int64_t step = gen.Uniform(1, 3);
    auto once = [&](const Coord& c) {
      Coord old = c;
      old[dim] = start + step * c[dim];
      return old;
    };
    auto v = Slice(t, dim, start, stop, step);
    check(t, v, once);
    if (v.ok()) {
      const int64_t dim2 = gen.Uniform(0, rank - 1);
      const int64_t extent2 = v->shape()[dim2];
      const int64_t start2 = gen.Uniform(0, extent2);
      const int64_t stop2 = gen.Uniform(start2, extent2);
      check(t, Slice(*v, dim2, start2, stop2), [&](const Coord& c) {
        Coord inner = c;
        inner[dim2] = start2 + c[dim2];
        return once(inner);
      });
    }
    // The same box of level 0 as a storage-relative AsStrided: what a
    // one-level Tensor with L_0 gives for that slice.
    const Representation& rep = TensorAccess::representation(t);
    auto plain = Tensor::Create(rep.subtensor(0).carrier,
                                rep.subtensor(0).offset, t.layout());
    ASSERT_TRUE(plain.ok()) << plain.status();
    // (Its coordinates are the slice's where the one-level slice keeps the
    // rank: one hierarchical mode may come back as its leaves.)
    if (auto box = Slice(*plain, dim, start, stop, step);
        box.ok() && box->shape().size() == shape.size()) {
      check(t, AsStrided(t, box->layout(), box->offset()), once);
    }
  }
  EXPECT_GT(admitted, 400);
  EXPECT_GT(refused, 100);
}

// --- Issue 16, item 4: extreme integers are ValueErrors, never UB ------------

constexpr int64_t kMax = INT64_MAX;
constexpr int64_t kMin = INT64_MIN;
constexpr int64_t kExtremes[] = {kMax, kMin,     -1,       0,
                                 1,    kMax - 1, kMin + 1, kMax / 2 + 1};

bool OkOrValueError(const absl::Status& status) {
  return status.ok() || IsValueError(status);
}

TEST(ViewsIssue16, SliceWithStepInt64MaxHasExtentOne) {
  // NumPy: np.empty((4, 8))[:, 0:8:2**63-1].shape == (4, 1); PyTorch alike.
  const Tensor t = Plain("(4,8):(8,1)");
  auto v = Slice(t, 1, 0, 8, kMax);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->shape(), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(v->offset(), 0);
  ExpectInvariant(t, *v, [](const Coord& c) { return Coord{c[0], 0}; });
  auto from3 = Slice(t, 1, 3, 8, kMax);
  ASSERT_TRUE(from3.ok()) << from3.status();
  EXPECT_EQ(from3->shape(), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(from3->offset(), 3);
  auto rows = Slice(t, 0, 1, 4, kMax - 1);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->shape(), (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(rows->offset(), 8);
  // A hierarchical mode: one element of (32,2) is a layout whatever the step.
  const Tensor bs = BlockScaled(4, 64, 32);
  auto scaled_rows = Slice(bs, 0, 2, 4, kMax);
  ASSERT_TRUE(scaled_rows.ok()) << scaled_rows.status();
  ExpectInvariant(bs, *scaled_rows, [](const Coord& c) {
    return Coord{2, c[1]};
  });
  auto hier = Slice(Plain("(2,(32,2)):(64,(1,32))"), 1, 5, 64, kMax);
  ASSERT_TRUE(hier.ok()) << hier.status();
  EXPECT_EQ(hier->shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(hier->offset(), 5);
}

TEST(ViewsIssue16, SliceWithExtremeArgumentsIsCheckedArithmetic) {
  const Tensor t = Plain("(4,8):(8,1)");
  const Tensor bs = BlockScaled(4, 64, 32);
  for (const Tensor* tensor : {&t, &bs}) {
    const std::vector<int64_t> shape = tensor->shape();
    for (int64_t dim : {int64_t{0}, int64_t{1}, kMax, kMin, int64_t{-1}}) {
      for (int64_t start : kExtremes) {
        for (int64_t stop : kExtremes) {
          for (int64_t step : kExtremes) {
            auto v = Slice(*tensor, dim, start, stop, step);
            ASSERT_TRUE(OkOrValueError(v.status())) << v.status();
            if (!v.ok()) continue;
            // Admitted only in range, with ceil((stop - start) / step) items.
            ASSERT_TRUE(dim == 0 || dim == 1);
            ASSERT_TRUE(0 <= start && start <= stop && stop <= shape[dim]);
            const int64_t count =
                (stop - start) / step + ((stop - start) % step != 0);
            ASSERT_EQ(v->shape()[dim], count);
            ExpectInvariant(*tensor, *v, [&](const Coord& c) {
              Coord old = c;
              old[dim] = start + c[dim];  // count <= 1 here: c[dim] == 0.
              return old;
            });
          }
        }
      }
    }
  }
}

TEST(ViewsIssue16, AsStridedWithExtremeArgumentsIsAValueError) {
  const Tensor t = Plain("(4,8):(8,1)");
  const Tensor bs = BlockScaled(4, 64, 32);
  for (int64_t x : kExtremes) {
    for (int64_t y : kExtremes) {
      for (const Tensor* tensor : {&t, &bs}) {
        for (const char* text : {"2:1", "(2,2):(1,2)", "1:1"}) {
          EXPECT_TRUE(OkOrValueError(AsStrided(*tensor, L(text), x).status()));
        }
        // Strides and extents at the limits (2:INT64_MAX reached the factory's
        // cosize() + offset with an overflowing cosize).
        for (const auto& [shape, stride] :
             {std::pair<IntTuple, IntTuple>{IntTuple::Flat({2, 2}),
                                            IntTuple::Flat({x, y})},
              {IntTuple(2), IntTuple(x)},
              {IntTuple::Flat({x, 1}), IntTuple::Flat({1, y})}}) {
          auto layout = Layout::Create(shape, stride);
          if (!layout.ok()) {
            EXPECT_TRUE(IsValueError(layout.status())) << layout.status();
            continue;
          }
          for (int64_t offset : {int64_t{0}, int64_t{100}, kMax, y}) {
            auto v = AsStrided(*tensor, *layout, offset);
            EXPECT_TRUE(OkOrValueError(v.status())) << v.status();
          }
        }
      }
    }
  }
  EXPECT_TRUE(IsValueError(Layout::Create(2, kMax).status()));
}

TEST(ViewsIssue16, BroadcastsWithExtremeExtentsAreValueErrors) {
  const Tensor t = Plain("(4,8):(8,1)");
  const Tensor ones = Plain("(1,8):(0,1)");
  const Tensor bs = BlockScaled(4, 64, 32);
  for (int64_t x : kExtremes) {
    for (int64_t y : kExtremes) {
      for (const Tensor* tensor : {&t, &ones, &bs}) {
        const int64_t last = tensor->shape().back();
        EXPECT_TRUE(
            OkOrValueError(BroadcastTo(*tensor, {x, y, last}).status()));
        EXPECT_TRUE(OkOrValueError(BroadcastTo(*tensor, {x, y}).status()));
        EXPECT_TRUE(OkOrValueError(
            BroadcastInDim(*tensor, {x, y, last}, {0, 2}).status()));
        EXPECT_TRUE(OkOrValueError(
            BroadcastInDim(*tensor, {4, last, y}, {x, 1}).status()));
        EXPECT_TRUE(OkOrValueError(
            BroadcastInDim(*tensor, {4, last}, {x, y}).status()));
      }
    }
  }
  auto huge = BroadcastTo(ones, {kMax, 8});
  EXPECT_TRUE(IsValueError(huge.status())) << huge.status();
  auto wide = BroadcastTo(ones, {kMax / 8, 8});
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->shape(), (std::vector<int64_t>{kMax / 8, 8}));
}

TEST(ViewsIssue16, ReshapeWithExtremeExtentsIsAValueError) {
  const Tensor t = Plain("(4,8):(8,1)");
  const Tensor bs = BlockScaled(4, 64, 32);
  for (int64_t x : kExtremes) {
    for (int64_t y : kExtremes) {
      for (const Tensor* tensor : {&t, &bs}) {
        for (const std::vector<int64_t>& shape :
             std::vector<std::vector<int64_t>>{
                 {x, y}, {x, y, 0}, {0, x, y}, {x}, {x, y, 2}}) {
          auto v = Reshape(*tensor, shape);
          EXPECT_TRUE(OkOrValueError(v.status())) << v.status();
          if (v.ok()) {
            EXPECT_EQ(v->size(), tensor->size());
          }
        }
      }
    }
  }
}

TEST(ViewsIssue16, SqueezeUnsqueezePermuteWithExtremeArgumentsAreValueErrors) {
  const Tensor t = Plain("(1,8):(0,1)");
  const Tensor bs = BlockScaled(4, 64, 32);
  for (const Tensor* tensor : {&t, &bs}) {
    for (int64_t x : kExtremes) {
      EXPECT_TRUE(OkOrValueError(Squeeze(*tensor, x).status()));
      EXPECT_TRUE(OkOrValueError(Unsqueeze(*tensor, x).status()));
      for (int64_t y : kExtremes) {
        EXPECT_TRUE(OkOrValueError(Permute(*tensor, {x, y}).status()));
      }
    }
    EXPECT_TRUE(IsValueError(Squeeze(*tensor, kMin).status()));
    EXPECT_TRUE(IsValueError(Unsqueeze(*tensor, kMax).status()));
    EXPECT_TRUE(IsValueError(Permute(*tensor, {-1, 0}).status()));
  }
}

TEST(ViewsIssue16, ViewsOfAnEmptyTensorWithHugeModesStayChecked) {
  // Every mode of a valid layout is valid, also beside an extent 0: this
  // layout used to be admitted, and TopLevelModes then died on its mode 1.
  EXPECT_TRUE(
      IsValueError(ParseLayout("(0,3):(1,9223372036854775807)").status()));
  EXPECT_TRUE(IsValueError(
      ParseLayout("(0,(4294967296,4294967296)):(1,(1,1))").status()));
  const Layout l = L("(0,(2147483648,2147483648)):(1,(1,2147483648))");
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), 1);
  auto t = Tensor::Create(carrier, 0, l);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{0, int64_t{1} << 62}));
  for (int64_t x : kExtremes) {
    EXPECT_TRUE(OkOrValueError(Slice(*t, 1, 0, x).status()));
    EXPECT_TRUE(OkOrValueError(Slice(*t, 1, 0, int64_t{1} << 62, x).status()));
    EXPECT_TRUE(OkOrValueError(Reshape(*t, {x, 0}).status()));
    EXPECT_TRUE(OkOrValueError(BroadcastTo(*t, {x, 0, 1}).status()));
  }
  auto s = Slice(*t, 1, 0, int64_t{1} << 62, kMax);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->shape(), (std::vector<int64_t>{0, 1}));
}

// The views that copy or derive bounds instead of computing them (Permute,
// Squeeze, Unsqueeze, BroadcastTo, BroadcastInDim, Reshape by merging, Slice
// with a step) must give the bounds Layout::Create computes, on any layout:
// negative and zero strides, extent-1 and empty modes.
TEST(ViewFastPathsTest, ViewsThatKeepTheirReachHaveTheBoundsCreateComputes) {
  testing::RandomLayouts gen(31);
  int checked = 0;
  for (int n = 0; n < 3000; ++n) {
    Layout l = gen.WithDegenerateModes(gen.Any(5, 4, 6), 3, 5);
    if (gen.Uniform(0, 7) == 0) {  // An empty mode.
      l = *Layout::Create(
          l.shape().TransformLeaves(
              [&, zero = gen.Uniform(0, l.shape().num_leaves() - 1)](
                  size_t k, int64_t e) {
                return static_cast<int64_t>(k) == zero ? int64_t{0} : e;
              }),
          l.stride());
    }
    SCOPED_TRACE(l.ToString());
    const int64_t offset = l.min_index() < 0 ? -l.min_index() : 0;
    const Tensor t = *Tensor::Create(
        *HostCarrier::Create(*dtypes::Int32(), offset + l.cosize()), offset, l);
    const std::vector<int64_t> shape = t.shape();
    const int64_t rank = shape.size();
    std::vector<absl::StatusOr<Tensor>> views;
    std::vector<int64_t> perm(rank);
    for (int64_t i = 0; i < rank; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), gen.engine());
    views.push_back(Permute(t, perm));
    const int64_t pos = gen.Uniform(0, rank);
    views.push_back(Unsqueeze(t, pos));
    for (int64_t d = 0; d < rank; ++d) {
      if (shape[d] == 1) views.push_back(Squeeze(t, d));
    }
    std::vector<int64_t> wide = {gen.Uniform(0, 3)};
    for (int64_t e : shape) wide.push_back(e == 1 ? gen.Uniform(0, 3) : e);
    views.push_back(BroadcastTo(t, wide));
    std::vector<int64_t> dims(rank);
    for (int64_t i = 0; i < rank; ++i) dims[i] = i + 1;
    views.push_back(BroadcastInDim(t, wide, dims));
    views.push_back(Reshape(t, {t.size()}));
    if (rank > 0) {
      const int64_t dim = gen.Uniform(0, rank - 1);
      const int64_t first = gen.Uniform(0, shape[dim]);
      views.push_back(Slice(t, dim, first, gen.Uniform(first, shape[dim]),
                            gen.Uniform(1, 3)));
    }
    for (const auto& v : views) {
      if (!v.ok()) {
        EXPECT_TRUE(IsValueError(v.status())) << v.status();
        continue;
      }
      ExpectCreatedBounds(v->layout());
      ++checked;
    }
  }
  EXPECT_GT(checked, 15000);
  // Two levels: S_0's bounds are copied or derived as L_0's are.
  int checked_two_level = 0;
  for (int n = 0; n < 500; ++n) {
    const Tensor t = RandomTensor(gen, /*two_level=*/true);
    const std::vector<int64_t> shape = t.shape();
    const int64_t rank = shape.size();
    std::vector<absl::StatusOr<Tensor>> views;
    std::vector<int64_t> perm(rank);
    for (int64_t i = 0; i < rank; ++i) perm[i] = rank - 1 - i;
    views.push_back(Permute(t, perm));
    views.push_back(Unsqueeze(t, gen.Uniform(0, rank)));
    std::vector<int64_t> wide = {gen.Uniform(0, 3)};
    wide.insert(wide.end(), shape.begin(), shape.end());
    views.push_back(BroadcastTo(t, wide));
    const int64_t dim = gen.Uniform(0, rank - 1);
    const int64_t first = gen.Uniform(0, shape[dim]);
    views.push_back(Slice(t, dim, first, gen.Uniform(first, shape[dim]),
                          gen.Uniform(1, 3)));
    for (const auto& v : views) {
      if (!v.ok()) continue;  // The block rule may refuse a slice.
      const Representation& rep = TensorAccess::representation(*v);
      ExpectCreatedBounds(rep.subtensor(0).placement);
      ExpectCreatedBounds(rep.adjacent_layouts()[0]);
      ++checked_two_level;
    }
  }
  EXPECT_GT(checked_two_level, 1500);
  // Extreme strides and extents: parts near INT64_MAX, of either sign.
  const int64_t big = int64_t{1} << 61;
  for (const char* text : {"(2,2305843009213693952):(2305843009213693952,1)",
                           "(2,2305843009213693952):(-2305843009213693952,1)",
                           "(2305843009213693952,2):(1,-2305843009213693952)",
                           "(3,1,3074457345618258602):(-3074457345618258602,7,"
                           "1)"}) {
    SCOPED_TRACE(text);
    const Layout l = L(text);
    const int64_t offset = -l.min_index();
    const Tensor t = *Tensor::Create(
        RecordedCarrier::Create(*dtypes::Int32(), offset + l.cosize()), offset,
        l);
    std::vector<absl::StatusOr<Tensor>> views;
    const std::vector<int64_t> shape = t.shape();
    views.push_back(Slice(t, 0, 1, shape[0], 1));
    views.push_back(Slice(t, 1, 0, shape[1], 3));
    views.push_back(Slice(t, 1, 1, shape[1], big / 2));
    views.push_back(Permute(t, {1, 0}));
    views.push_back(Squeeze(t));
    views.push_back(BroadcastTo(t, {3, shape[0], shape[1]}));
    views.push_back(BroadcastTo(t, {1, shape[0], shape[1]}));
    for (const auto& v : views) {
      if (!v.ok()) {
        EXPECT_TRUE(IsValueError(v.status())) << v.status();
        continue;
      }
      ExpectCreatedBounds(v->layout());
    }
  }
  // Beside an empty mode, a broadcast must still refuse a size that
  // overflows, as Layout::Create does: the leaves of the empty mode count.
  const Tensor empty =
      *Tensor::Create(*HostCarrier::Create(*dtypes::Int32(), 1), 0,
                      L("((0,1099511627776)):((1,1))"));
  auto over = BroadcastTo(empty, {int64_t{1} << 40, 0});
  EXPECT_TRUE(IsValueError(over.status())) << over.status();
  auto fits = BroadcastTo(empty, {int64_t{1} << 20, 0});
  ASSERT_TRUE(fits.ok()) << fits.status();
  ExpectCreatedBounds(fits->layout());
}

// A two-level Tensor whose values are placed by `l0`, with one scale.
Tensor OneScale(const std::string& l0) {
  const Layout values_layout = L(l0);
  auto values =
      *HostCarrier::Create(*dtypes::Float8E4M3FN(), values_layout.cosize());
  auto scales = *HostCarrier::Create(*dtypes::Float8E8M0FNU(), 1);
  auto rep = Representation::Create(
      TestBlocked(),
      {{dtypes::Float8E4M3FN(), values, 0, values_layout},
       {dtypes::Float8E8M0FNU(), scales, 0, L("1:0")}},
      {*Layout::Create(values_layout.shape(),
                       values_layout.shape().TransformLeaves(
                           [](size_t, int64_t) { return int64_t{0}; }))});
  EXPECT_TRUE(rep.ok()) << rep.status();
  return MakeTensor(*rep);
}

TEST(ViewsIssue16, AsStridedRefusesIndicesOutsideLevelZerosImage) {
  // L_0 = (2,2):(4,1) reaches {0,1,4,5}. Its left inverse sends index 2 to
  // coordinate 4, which composition extends back to index 2: 3:1 (indices
  // 0, 1, 2) used to be admitted.
  const Tensor t = OneScale("(2,2):(4,1)");
  auto v = AsStrided(t, L("3:1"), 0);
  EXPECT_TRUE(IsValueError(v.status())) << Describe(*v);
  auto ok = AsStrided(t, L("(2,2):(1,4)"), 0);
  ASSERT_TRUE(ok.ok()) << ok.status();
  ExpectInvariant(t, *ok, [](const Coord& c) { return Coord{c[1], c[0]}; });
  // L_0 with a stride-0 mode is still refused: a carrier index would name
  // several source coordinates.
  auto broadcast = AsStrided(OneScale("(2,3):(0,1)"), L("3:1"), 0);
  EXPECT_TRUE(IsValueError(broadcast.status()));
  EXPECT_NE(broadcast.status().message().find("injective"),
            absl::string_view::npos)
      << broadcast.status();
}

// An empty multi-level Tensor reaches no carrier index, so AsStrided gives it
// no view with elements (the API fuzzer found one admitted: the leaf-wise path
// read the digits of L_0's leaves of positive extent and placed them,
// (0,(1,129),64):(0,(64,64),1) viewed as 3:1). An empty view stays a view.
TEST(ViewsIssue16, AsStridedOfAnEmptyMultiLevelTensorReachesNothing) {
  const Tensor t = OneScale("(2,3):(3,1)");
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{0, 2, 3}, {2, 0}}) {
    SCOPED_TRACE(shape.size());
    auto empty = shape.size() == 3 ? BroadcastTo(t, shape) : Slice(t, 1, 0, 0);
    ASSERT_TRUE(empty.ok()) << empty.status();
    ASSERT_EQ(empty->size(), 0);
    for (const char* layout : {"3:1", "(2,3):(3,1)", "1:0"}) {
      auto v = AsStrided(*empty, L(layout), 0);
      EXPECT_TRUE(IsValueError(v.status())) << layout << ": " << Describe(*v);
      EXPECT_NE(v.status().message().find("is empty and reaches no carrier"),
                absl::string_view::npos)
          << v.status();
    }
    auto still_empty = AsStrided(*empty, L("(0,3):(3,1)"), 0);
    ASSERT_TRUE(still_empty.ok()) << still_empty.status();
    EXPECT_EQ(still_empty->size(), 0);
  }
}

// NOTE [ Reshape by merging modes ]: the fast paths of Reshape and Slice give
// exactly what composition gives (or both fail), on one- and two-level
// Tensors, over random layouts and arguments.
void ExpectSameRepresentation(const absl::StatusOr<Tensor>& fast,
                              const absl::StatusOr<Tensor>& general,
                              const std::string& what) {
  ASSERT_EQ(fast.ok(), general.ok())
      << what << ": " << fast.status() << " vs " << general.status();
  if (!fast.ok()) return;
  const Representation& a = TensorAccess::representation(*fast);
  const Representation& b = TensorAccess::representation(*general);
  ASSERT_EQ(a.num_levels(), b.num_levels()) << what;
  for (int i = 0; i < a.num_levels(); ++i) {
    EXPECT_EQ(a.subtensor(i).placement, b.subtensor(i).placement)
        << what << " level " << i << ": " << a.subtensor(i).placement.ToString()
        << " vs " << b.subtensor(i).placement.ToString();
    EXPECT_EQ(a.subtensor(i).offset, b.subtensor(i).offset) << what;
  }
  for (int i = 0; i + 1 < a.num_levels(); ++i) {
    EXPECT_EQ(a.adjacent_layouts()[i], b.adjacent_layouts()[i])
        << what << " S_" << i << ": " << a.adjacent_layouts()[i].ToString()
        << " vs " << b.adjacent_layouts()[i].ToString();
  }
}

TEST(ViewFastPathsTest, ReshapeAndSliceFastPathsEqualComposition) {
  std::mt19937_64 rng(17);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % n); };
  for (int round = 0; round < 3000; ++round) {
    const std::string seed = absl::StrCat("round ", round);
    Tensor t = Plain("1:1");
    if (round % 3 == 0) {
      // An mxfp8-shaped Tensor, maybe permuted.
      t = BlockScaled(1 + pick(4), 32 * (1 + pick(3)), 32);
      if (pick(2)) t = *Permute(t, {1, 0});
    } else {
      // A row-major layout with gaps, its modes permuted.
      const int rank = 1 + pick(4);
      std::vector<int64_t> extents(rank), strides(rank);
      int64_t running = 1;
      for (int k = rank; k-- > 0;) {
        extents[k] = 1 + pick(4);
        running *= 1 + pick(2);
        strides[k] = running;
        running *= extents[k];
      }
      std::vector<int64_t> perm(rank);
      for (int k = 0; k < rank; ++k) perm[k] = k;
      if (pick(2)) std::shuffle(perm.begin(), perm.end(), rng);
      t = *Permute(Plain(absl::StrCat(IntTuple::Flat(extents).ToString(), ":",
                                      IntTuple::Flat(strides).ToString())),
                   perm);
    }
    const std::vector<int64_t> shape = t.shape();
    // Reshape: merge random runs of modes, sometimes split one.
    std::vector<int64_t> target;
    for (size_t k = 0; k < shape.size(); ++k) {
      if (!target.empty() && pick(2)) {
        target.back() *= shape[k];
      } else {
        target.push_back(shape[k]);
      }
    }
    if (pick(4) == 0 && !target.empty() && target[0] % 2 == 0) {
      target[0] /= 2;
      target.insert(target.begin(), 2);
    }
    ExpectSameRepresentation(
        Reshape(t, target), views_internal::ReshapeByComposition(t, target),
        absl::StrCat(seed, " reshape of ", t.layout().ToString()));
    // Slice of a random mode.
    const int64_t dim = pick(shape.size());
    const int64_t start = pick(shape[dim] + 1);
    const int64_t stop = start + pick(shape[dim] - start + 1);
    const int64_t step = 1 + pick(3);
    const auto fast = Slice(t, dim, start, stop, step);
    const auto general = views_internal::SliceByComposition(
        t, dim, start, CeilDiv(stop - start, step), step);
    // The general path's errors lack the public prefix (Named adds it).
    ASSERT_EQ(fast.ok(), general.ok()) << seed << fast.status();
    if (fast.ok()) {
      ExpectSameRepresentation(
          fast, general,
          absl::StrCat(seed, " slice of ", t.layout().ToString()));
    }
  }
}

// NOTE [ One-level flat views ] in core/representation.cc: views of one-level
// Tensors whose modes are leaves build their block directly. Over random
// flat layouts of rank 0 to 10 (past the 8 modes the direct path takes, so
// both paths run), with extents 0, 1 and more and strides of any sign, each
// view gives exactly the layout Layout::Create builds from the modes the view
// names (an integer layout for one mode), with Create's bounds, the moved
// offset, and the source's carrier and dtype.
TEST(ViewFastPathsTest, OneLevelFlatViewsWriteTheLayoutCreateBuilds) {
  std::mt19937_64 rng(23);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % (hi - lo + 1));
  };
  auto expected = [](const std::vector<int64_t>& extents,
                     const std::vector<int64_t>& strides) {
    return extents.size() == 1 ? *Layout::Create(extents[0], strides[0])
                               : *Layout::Create(IntTuple::Flat(extents),
                                                 IntTuple::Flat(strides));
  };
  int checked = 0;
  for (int round = 0; round < 2000; ++round) {
    const int rank = static_cast<int>(pick(0, 10));
    std::vector<int64_t> e(rank), s(rank);
    for (int k = 0; k < rank; ++k) {
      e[k] = pick(0, 6) == 0 ? pick(0, 1) : pick(2, 4);
      s[k] = pick(-9, 9);
    }
    if (rank > 0 && pick(0, 3) > 0) {
      for (int k = 0; k < rank; ++k) e[k] = std::max<int64_t>(e[k], 1);
    }
    const Layout l = expected(e, s);
    const int64_t offset = -l.min_index() + pick(0, 2);
    auto carrier = *HostCarrier::Create(*dtypes::Int16(),
                                        offset + l.cosize() + pick(0, 2));
    const Tensor t = *Tensor::Create(carrier, offset, l);
    const std::string what = absl::StrCat("round ", round, ": ", l.ToString());
    auto expect = [&](const absl::StatusOr<Tensor>& view,
                      const std::vector<int64_t>& extents,
                      const std::vector<int64_t>& strides, int64_t view_offset,
                      const std::string& name) {
      ASSERT_TRUE(view.ok()) << what << " " << name << ": " << view.status();
      const Layout want = expected(extents, strides);
      EXPECT_EQ(view->layout(), want)
          << what << " " << name << ": " << view->layout().ToString();
      EXPECT_EQ(view->layout().size(), want.size()) << what << " " << name;
      EXPECT_EQ(view->layout().max_index(), want.max_index())
          << what << " " << name;
      EXPECT_EQ(view->layout().min_index(), want.min_index())
          << what << " " << name;
      EXPECT_EQ(view->offset(), view_offset) << what << " " << name;
      EXPECT_EQ(view->carrier(), carrier) << what << " " << name;
      EXPECT_EQ(&view->dtype(), &t.dtype()) << what << " " << name;
      ++checked;
    };
    // Permute.
    std::vector<int64_t> perm(rank);
    for (int k = 0; k < rank; ++k) perm[k] = k;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<int64_t> pe(rank), ps(rank);
    for (int k = 0; k < rank; ++k) {
      pe[k] = e[perm[k]];
      ps[k] = s[perm[k]];
    }
    expect(Permute(t, perm), pe, ps, offset, "permute");
    // Unsqueeze.
    const int64_t pos = pick(0, rank);
    std::vector<int64_t> ue = e, us = s;
    ue.insert(ue.begin() + pos, 1);
    us.insert(us.begin() + pos, 0);
    expect(Unsqueeze(t, pos), ue, us, offset, "unsqueeze");
    // Squeeze of one dim of extent 1.
    for (int d = 0; d < rank; ++d) {
      if (e[d] != 1) continue;
      std::vector<int64_t> se = e, ss = s;
      se.erase(se.begin() + d);
      ss.erase(ss.begin() + d);
      expect(Squeeze(t, d), se, ss, offset, "squeeze");
      break;
    }
    // BroadcastTo: a new leading dim, dims of extent 1 widened or kept.
    std::vector<int64_t> be = {pick(0, 3)}, bs = {0};
    for (int k = 0; k < rank; ++k) {
      const int64_t target = e[k] == 1 ? pick(0, 3) : e[k];
      be.push_back(target);
      bs.push_back(e[k] == 1 && target != 1 ? 0 : s[k]);
    }
    expect(BroadcastTo(t, be), be, bs, offset, "broadcast_to");
    // BroadcastInDim to the same modes, the source's dims after the first.
    std::vector<int64_t> dims(rank);
    for (int k = 0; k < rank; ++k) dims[k] = k + 1;
    expect(BroadcastInDim(t, be, dims), be, bs, offset, "broadcast_in_dim");
    // Squeeze of every dim of extent 1.
    std::vector<int64_t> qe, qs;
    for (int k = 0; k < rank; ++k) {
      if (e[k] == 1) continue;
      qe.push_back(e[k]);
      qs.push_back(s[k]);
    }
    expect(Squeeze(t), qe, qs, offset, "squeeze all");
    // Reshape merging runs of modes whose strides chain (a row-major
    // source's), compared with composition.
    if (l.size() > 0 && rank > 0) {
      std::vector<int64_t> chained(rank);
      int64_t running = 1;
      for (int k = rank; k-- > 0;) {
        chained[k] = running;
        running *= std::max<int64_t>(e[k], 1);
      }
      const Layout row_major = expected(e, chained);
      auto rc = *HostCarrier::Create(*dtypes::Int16(), row_major.cosize());
      const Tensor r = *Tensor::Create(rc, 0, row_major);
      std::vector<int64_t> target;
      for (int k = 0; k < rank; ++k) {
        if (!target.empty() && pick(0, 1)) {
          target.back() *= e[k];
        } else {
          target.push_back(e[k]);
        }
      }
      ExpectSameRepresentation(Reshape(r, target),
                               views_internal::ReshapeByComposition(r, target),
                               what + " reshape of " + row_major.ToString());
    }
    // Slice of at least two elements with a step (of a Tensor that is not
    // empty: an empty one's moved offset may leave its carrier, which the
    // spec refuses).
    for (int d = 0; d < rank && l.size() > 0; ++d) {
      if (e[d] < 2) continue;
      const int64_t start = pick(0, e[d] - 2);
      const int64_t step = pick(1, 2);
      const int64_t stop = std::min(e[d], start + step + 1 + pick(0, 2));
      const int64_t count = CeilDiv(stop - start, step);
      if (count < 2) continue;
      std::vector<int64_t> ce = e, cs = s;
      ce[d] = count;
      cs[d] = step * s[d];
      expect(Slice(t, d, start, stop, step), ce, cs, offset + start * s[d],
             "slice");
      break;
    }
    // AsStrided with the same modes, one value further along where it fits.
    const int64_t shift = offset + l.cosize() < carrier->size() ? 1 : 0;
    expect(AsStrided(t, l, offset + shift), e, s, offset + shift, "as_strided");
  }
  EXPECT_GT(checked, 10000);
}

// BroadcastTo's one pass over a flat one-level Tensor (NOTE [ A flat
// broadcast in one pass ] in views/broadcast_views.cc) refuses nothing
// itself: every refusal, alone or beside another, is MapModes' error, in its
// order, as for the same modes nested one level deeper (which that path
// takes). Each case names its target.
TEST(ViewFastPathsTest, FlatBroadcastsFailAsTheSpecsPath) {
  const Tensor flat = Plain("(4,1,8):(8,8,1)");
  const Tensor nested = Plain("((4),(1),(8)):((8),(8),(1))");
  const std::vector<std::vector<int64_t>> targets = {
      {4, 9, 9},      // 8 cannot broadcast to 9
      {8},            // fewer modes
      {-1, 4, 1, 8},  // a negative new extent
      {4, -1, 8},     // a negative widened extent
      {4, 3, 9},      // widened, then 8 to 9
      {-2, 4, 3, 9},  // negative before a refused mode: negative first
      {2, 5, 3, 8},   // 4 cannot broadcast to 5
  };
  for (const std::vector<int64_t>& target : targets) {
    const std::string what = absl::StrJoin(target, ",");
    auto from_flat = BroadcastTo(flat, target);
    auto from_nested = BroadcastTo(nested, target);
    ASSERT_FALSE(from_flat.ok()) << what;
    EXPECT_TRUE(IsValueError(from_flat.status())) << what;
    EXPECT_TRUE(absl::StartsWith(from_flat.status().message(), "BroadcastTo: "))
        << what << ": " << from_flat.status();
    EXPECT_EQ(from_flat.status(), from_nested.status()) << what;
  }
  // A size that overflows: Layout::Create's error, as the specs path reports
  // it (the nested Tensor's names its nested modes).
  auto over = BroadcastTo(flat, {int64_t{1} << 62, 4, 4, 8});
  EXPECT_TRUE(IsValueError(over.status())) << over.status();
  EXPECT_EQ(over.status().message(),
            "BroadcastTo: layout (4611686018427387904,4,4,8):(0,8,0,1): the "
            "size overflows int64 at leaf 1 (extent 4)");
  // And the successes the one pass admits: a new mode, 1 widened, 1 kept.
  auto wide = BroadcastTo(flat, {2, 4, 3, 8});
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->layout(), L("(2,4,3,8):(0,8,0,1)"));
  auto kept = BroadcastTo(flat, {4, 1, 8});
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->layout(), L("(4,1,8):(8,8,1)"));
}

// The one-level flat path hands back to the specs path where a broadcast's
// size overflows, which then fails as Layout::Create does, also beside an
// empty mode of a flat layout.
TEST(ViewFastPathsTest, OneLevelFlatBroadcastsThatOverflowFailAsCreate) {
  const int64_t big = int64_t{1} << 40;
  const Tensor empty =
      *Tensor::Create(*HostCarrier::Create(*dtypes::Int32(), 1), 0,
                      L("(0,1099511627776):(1,1)"));
  auto over = BroadcastTo(empty, {big, 0, big});
  EXPECT_TRUE(IsValueError(over.status())) << over.status();
  EXPECT_TRUE(absl::StartsWith(over.status().message(), "BroadcastTo: "))
      << over.status();
  auto over_in_dim = BroadcastInDim(empty, {big, 0, big}, {1, 2});
  EXPECT_TRUE(IsValueError(over_in_dim.status())) << over_in_dim.status();
  auto fits = BroadcastTo(empty, {int64_t{1} << 20, 0, big});
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(fits->layout().size(), 0);
  ExpectCreatedBounds(fits->layout());
}

// A rule that refuses every placement wider than 4 values, and records the
// placement it saw.
class AtMostFourRule : public RepresentationRule {
 public:
  absl::string_view name() const override { return "at_most_four"; }
  absl::Status Validate(
      const RepresentationValidationContext& context) const override {
    seen_ = context.placement_layout(0).ToString();
    if (context.placement_layout(0).size() > 4) {
      return ValueError("at_most_four: more than 4 values");
    }
    return absl::OkStatus();
  }
  mutable std::string seen_;
};

// A one-level Tensor whose logical dtype is a compound with a rule: the
// one-level paths run the rule on the new placement and return its error,
// named by the view, with no Tensor.
TEST(ViewFastPathsTest, OneLevelViewsRunTheRulesOfACompoundDType) {
  auto rule = std::make_shared<AtMostFourRule>();
  const CompoundDType* wrapped =
      *CompoundDType::Create("at_most_four_f32", {dtypes::Float32()}, {rule});
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), 8);
  std::vector<SubtensorCandidate> levels(1);
  levels[0].storage_dtype = dtypes::Float32();
  levels[0].carrier = carrier;
  levels[0].placement = L("(2,2):(2,1)");
  const Tensor t = MakeTensor(*Representation::Create(wrapped, levels, {}));
  auto permuted = Permute(t, {1, 0});
  ASSERT_TRUE(permuted.ok()) << permuted.status();
  EXPECT_EQ(rule->seen_, "(2,2):(1,2)");
  EXPECT_EQ(&permuted->dtype(), wrapped);
  auto wide = BroadcastTo(t, {2, 2, 2});
  EXPECT_TRUE(IsValueError(wide.status())) << wide.status();
  EXPECT_EQ(wide.status().message(),
            "BroadcastTo: at_most_four: more than 4 values")
      << wide.status();
  EXPECT_EQ(rule->seen_, "(2,2,2):(0,2,1)");
  auto strided = AsStrided(t, L("8:1"), 0);
  EXPECT_TRUE(IsValueError(strided.status())) << strided.status();
  EXPECT_EQ(rule->seen_, "8:1");
  auto sliced = Slice(t, 1, 0, 2);
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  auto reshaped = Reshape(t, {4});
  ASSERT_TRUE(reshaped.ok()) << reshaped.status();
  EXPECT_EQ(rule->seen_, "4:1");
  // The refused views keep no reference: carrier, levels, t, permuted,
  // sliced and reshaped hold one each.
  EXPECT_EQ(carrier.use_count(), 6);
}

// A rule on two levels that refuses every L_0 whose first mode is not of
// extent 2 -- a rule that reads positions -- and says (`claims`) or not that
// views rearranging modes keep its verdict; it counts its runs.
class FirstModeOfTwoRule : public RepresentationRule {
 public:
  explicit FirstModeOfTwoRule(bool claims, bool claims_slices = false)
      : claims_(claims), claims_slices_(claims_slices) {}
  absl::string_view name() const override { return "first_mode_of_two"; }
  absl::Status Validate(
      const RepresentationValidationContext& context) const override {
    ++runs_;
    const Layout& l0 = context.placement_layout(0);
    if (l0.shape().is_leaf() || l0.mode(0).size() != 2) {
      return ValueError("first_mode_of_two: mode 0 is not of extent 2");
    }
    return absl::OkStatus();
  }
  bool KeepsVerdictWhenModesRearrange() const override { return claims_; }
  bool KeepsVerdictWhenSliced(const RepresentationValidationContext&,
                              const ModeSlice&) const override {
    return claims_slices_;
  }
  mutable int runs_ = 0;

 private:
  bool claims_;
  bool claims_slices_;
};

// A (2,3) two-level Tensor, one scale per row, of a new compound dtype named
// `name` whose one rule is `rule`.
Tensor FirstModeOfTwoTensor(std::shared_ptr<FirstModeOfTwoRule> rule,
                            const std::string& name) {
  const CompoundDType* dtype = *CompoundDType::Create(
      name, {dtypes::Float8E4M3FN(), dtypes::Float8E8M0FNU()}, {rule});
  auto values = *HostCarrier::Create(*dtypes::Float8E4M3FN(), 6);
  auto scales = *HostCarrier::Create(*dtypes::Float8E8M0FNU(), 2);
  return MakeTensor(*Representation::Create(
      dtype,
      {{dtypes::Float8E4M3FN(), values, 0, L("(2,3):(3,1)")},
       {dtypes::Float8E8M0FNU(), scales, 0, L("2:1")}},
      {L("(2,3):(1,0)")}));
}

// NOTE [ Verdicts that views keep ]: a rule that does not claim its verdict
// is judged again on every view; one that claims it is not run on views that
// rearrange modes in release builds, and where the claim is wrong, builds
// without NDEBUG (these tests') say so with an internal error.
TEST(ViewFastPathsTest, RulesThatKeepTheirVerdictAreTrustedAndChecked) {
  for (const bool claims : {false, true}) {
    SCOPED_TRACE(claims ? "claims" : "does not claim");
    auto rule = std::make_shared<FirstModeOfTwoRule>(claims);
    const Tensor t =
        FirstModeOfTwoTensor(rule, absl::StrCat("first_mode_of_two_", claims));
    const int runs = rule->runs_;
    // Unsqueeze at 1 keeps mode 0 first: the rule passes either way.
    auto unsqueezed = Unsqueeze(t, 1);
    ASSERT_TRUE(unsqueezed.ok()) << unsqueezed.status();
    auto permuted = Permute(t, {1, 0});
#ifdef NDEBUG
    const bool judged = !claims;
#else
    const bool judged = true;
#endif
    EXPECT_EQ(rule->runs_ - runs, judged ? 2 : 0);
    if (!claims) {
      EXPECT_TRUE(IsValueError(permuted.status())) << permuted.status();
      EXPECT_EQ(permuted.status().message(),
                "Permute: first_mode_of_two: mode 0 is not of extent 2");
      continue;
    }
#ifdef NDEBUG
    EXPECT_TRUE(permuted.ok()) << permuted.status();
#else
    EXPECT_EQ(permuted.status().code(), absl::StatusCode::kInternal)
        << permuted.status();
    EXPECT_NE(permuted.status().message().find(
                  "rule first_mode_of_two keeps its verdict when a view "
                  "rearranges modes, yet refuses"),
              std::string::npos)
        << permuted.status();
#endif
    // Views that do not only rearrange modes judge every rule again.
    const int before_slice = rule->runs_;
    auto sliced = Slice(t, 1, 0, 2);
    ASSERT_TRUE(sliced.ok()) << sliced.status();
    EXPECT_EQ(rule->runs_ - before_slice, 1);
  }
}

// NOTE [ Verdicts that slices keep ]: a rule that claims its verdict on a
// slice is not run on it in release builds; builds without NDEBUG run it,
// and a wrong claim is an internal error that names the rule and the slice.
TEST(ViewFastPathsTest, RulesThatKeepTheirVerdictOnSlicesAreTrustedAndChecked) {
  for (const bool claims : {false, true}) {
    SCOPED_TRACE(claims ? "claims" : "does not claim");
    auto rule = std::make_shared<FirstModeOfTwoRule>(false, claims);
    const Tensor t = FirstModeOfTwoTensor(
        rule, absl::StrCat("first_mode_of_two_slices_", claims));
#ifdef NDEBUG
    const bool judged = !claims;
#else
    const bool judged = true;
#endif
    // Mode 1 sliced: mode 0 keeps its extent 2, and the rule passes.
    int runs = rule->runs_;
    auto columns = Slice(t, 1, 0, 3, 2);
    ASSERT_TRUE(columns.ok()) << columns.status();
    EXPECT_EQ(rule->runs_ - runs, judged ? 1 : 0);
    // Mode 0 cut to 1: the rule refuses.
    runs = rule->runs_;
    auto row = Slice(t, 0, 1, 2);
    EXPECT_EQ(rule->runs_ - runs, judged ? 1 : 0);
    if (!claims) {
      EXPECT_TRUE(IsValueError(row.status())) << row.status();
      EXPECT_EQ(row.status().message(),
                "Slice: first_mode_of_two: mode 0 is not of extent 2");
      continue;
    }
#ifdef NDEBUG
    EXPECT_TRUE(row.ok()) << row.status();
#else
    EXPECT_EQ(row.status().code(), absl::StatusCode::kInternal) << row.status();
    EXPECT_NE(row.status().message().find(
                  "rule first_mode_of_two keeps its verdict on a slice of "
                  "mode 0 (1 coordinates from 1 by steps of 1), yet refuses"),
              std::string::npos)
        << row.status();
#endif
    // Views that rearrange modes judge it, as it claims nothing for them.
    runs = rule->runs_;
    ASSERT_TRUE(Permute(t, {0, 1}).ok());
    EXPECT_EQ(rule->runs_ - runs, 1);
  }
}

// Reshape's one-pass path for flat layouts on two levels: L_0 and S_0 both
// flat, their strides chaining or not independently, merged runs chosen at
// random; the result is composition's (the review found this path compared
// on one level only).
TEST(ViewFastPathsTest, FlatTwoLevelReshapeEqualsComposition) {
  testing::RandomLayouts gen(23);
  int merged = 0;
  int wide_written = 0;
  for (int round = 0; round < 1500; ++round) {
    const std::string seed = absl::StrCat("round ", round);
    // Every 25th round 9 to 11 modes: more than the 8 values LayoutAssembler::
    // WriteFlat copies whole.
    const bool wide = round % 25 == 0;
    const int rank = wide ? gen.Uniform(9, 11) : gen.Uniform(1, 4);
    std::vector<int64_t> extents(rank);
    for (int64_t& e : extents) e = gen.Uniform(2, wide ? 2 : 4);
    // A row-major layout of the extents with gaps, its modes permuted.
    auto strided = [&](bool gaps) {
      std::vector<int64_t> strides(rank);
      int64_t running = 1;
      for (int k = rank; k-- > 0;) {
        if (gaps) running *= gen.Uniform(1, 2);
        strides[k] = running;
        running *= extents[k];
      }
      return strides;
    };
    std::vector<int> perm(rank);
    for (int k = 0; k < rank; ++k) perm[k] = k;
    if (gen.Uniform(0, 1)) std::shuffle(perm.begin(), perm.end(), gen.engine());
    std::vector<int64_t> shape(rank), l_strides(rank), s_strides(rank);
    const std::vector<int64_t> l = strided(true),
                               d = strided(gen.Uniform(0, 1));
    for (int k = 0; k < rank; ++k) {
      shape[k] = extents[perm[k]];
      l_strides[k] = l[perm[k]];
      // S_0 in its own order: chains where L_0 does only sometimes.
      s_strides[k] = d[gen.Uniform(0, 2) == 0 ? k : perm[k]];
    }
    const Layout l0 =
        *Layout::Create(IntTuple::Flat(shape), IntTuple::Flat(l_strides));
    auto s0 = Layout::Create(IntTuple::Flat(shape), IntTuple::Flat(s_strides));
    ASSERT_TRUE(s0.ok());
    const Layout l1 = L(absl::StrCat(s0->cosize(), ":1"));
    const Tensor t = TwoLevelAtRandomOffsets(gen, l0, l1, *s0);
    std::vector<int64_t> target;
    for (int k = 0; k < rank; ++k) {
      if (!target.empty() && gen.Uniform(0, wide ? 5 : 1) == 1) {
        target.back() *= shape[k];
      } else {
        target.push_back(shape[k]);
      }
    }
    const auto fast = Reshape(t, target);
    const auto general = views_internal::ReshapeByComposition(t, target);
    ASSERT_EQ(fast.ok(), general.ok()) << seed << fast.status();
    if (!fast.ok()) continue;
    merged += static_cast<int>(target.size()) < rank;
    wide_written += target.size() > 8;
    ExpectSameRepresentation(
        fast, general,
        absl::StrCat(seed, " reshape of ", t.layout().ToString()));
  }
  EXPECT_GT(merged, 100);       // Merges were admitted, not only refused.
  EXPECT_GT(wide_written, 10);  // Past WriteFlat's fixed-size buffers.
}

// A valid layout whose leaf extent * stride is not an int64 (a 2^62 stride on
// a carrier of 2^62 + 2 one-byte values): the Reshape fast path's chain tests
// are checked products (ubsan), and the mode, which no operand can merge,
// stays.
TEST(ViewFastPathsTest, ReshapeOfHugeStridesIsCheckedArithmetic) {
  const int64_t huge = int64_t{1} << 62;
  auto carrier = RecordedCarrier::Create(*dtypes::Float8E4M3FN(), huge + 2);
  for (const std::string& text : {absl::StrCat("((2,2)):((", huge, ",1))"),
                                  absl::StrCat("((2,2)):((1,", huge, "))")}) {
    auto t = Tensor::Create(carrier, 0, L(text));
    ASSERT_TRUE(t.ok()) << text << ": " << t.status();
    auto v = Reshape(*t, {4});
    EXPECT_TRUE(OkOrValueError(v.status())) << text << ": " << v.status();
    if (v.ok()) {
      EXPECT_EQ(v->size(), 4) << text;
    }
  }
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// NOTE [ AsStrided by leaves ]: on layouts that walk L_0's leaves (boxes of
// them from a random start, chained leaves read as one, stride-0 leaves,
// extent-1 leaves, any order) and on random layouts, AsStrided gives what
// composition gives, or fails where it fails.
TEST(ViewFastPathsTest, AsStridedFastPathEqualsComposition) {
  testing::RandomLayouts gen(23);
  int admitted = 0;
  for (int round = 0; round < 2000; ++round) {
    const std::string seed = absl::StrCat("round ", round);
    Tensor t = RandomTensor(gen, /*two_level=*/true);
    if (round % 4 == 0) {
      t = BlockScaled(1 + gen.Uniform(0, 3), 32 * gen.Uniform(1, 3), 32);
      if (gen.Uniform(0, 1)) t = *Permute(t, {1, 0});
    }
    const Layout& l0 = t.layout();
    const auto e = l0.shape().leaves();
    const auto s = l0.stride().leaves();
    std::vector<int64_t> extents, strides;
    int64_t offset = t.offset();
    if (round % 10 == 9) {
      const Layout random = gen.Injective(3, 4, 1);
      extents.assign(random.shape().leaves().begin(),
                     random.shape().leaves().end());
      strides.assign(random.stride().leaves().begin(),
                     random.stride().leaves().end());
      offset += gen.Uniform(0, 3);
    } else {
      for (size_t j = 0; j < e.size(); ++j) {
        if (e[j] == 1 || gen.Uniform(0, 4) == 0) continue;
        const int64_t start = gen.Uniform(0, 2) ? 0 : gen.Uniform(0, e[j] - 1);
        int64_t extent = gen.Uniform(1, e[j] - start);
        if (start == 0 && gen.Uniform(0, 1)) extent = e[j];
        offset += start * s[j];
        // A whole leaf followed by the leaf its stride chains into reads as
        // one leaf.
        if (!extents.empty() && extents.back() * strides.back() == s[j] &&
            gen.Uniform(0, 1)) {
          extents.back() *= extent;
          continue;
        }
        extents.push_back(extent);
        strides.push_back(s[j]);
      }
      if (gen.Uniform(0, 3) == 0) {
        extents.push_back(gen.Uniform(1, 3));
        strides.push_back(gen.Uniform(0, 1) ? 0 : s[0]);
      }
      // A random order.
      for (size_t k = extents.size(); k > 1; --k) {
        const size_t other = gen.Uniform(0, k - 1);
        std::swap(extents[k - 1], extents[other]);
        std::swap(strides[k - 1], strides[other]);
      }
    }
    if (extents.empty()) extents = {1}, strides = {0};
    const Layout layout =
        *Layout::Create(IntTuple::Flat(extents), IntTuple::Flat(strides));
    const auto fast = AsStrided(t, layout, offset);
    const auto general =
        views_internal::AsStridedByComposition(t, layout, offset);
    const std::string what =
        absl::StrCat(seed, ": AsStrided(", l0.ToString(), " at ", t.offset(),
                     ", ", layout.ToString(), ", ", offset, ")");
    ASSERT_EQ(fast.ok(), general.ok())
        << what << ": " << fast.status() << " vs " << general.status();
    if (fast.ok()) {
      ++admitted;
      ExpectSameRepresentation(fast, general, what);
    }
  }
  EXPECT_GT(admitted, 500);
}

// Layouts past GatherModes' local buffers (8 leaves, 16 tokens) are gathered
// again into buffers of their counted size: the same views, the same answers.
TEST(ViewFastPathsTest, ViewsOfManyModesSpillPastTheInlineBuffers) {
  const Tensor flat =
      Plain("(2,3,2,3,2,3,2,3,2):(1,2,6,12,36,72,216,432,1296)");
  auto permuted = Permute(flat, {8, 7, 6, 5, 4, 3, 2, 1, 0});
  ASSERT_TRUE(permuted.ok()) << permuted.status();
  EXPECT_EQ(permuted->layout().ToString(),
            "(2,3,2,3,2,3,2,3,2):(1296,432,216,72,36,12,6,2,1)");
  auto unsqueezed = Unsqueeze(flat, 9);
  ASSERT_TRUE(unsqueezed.ok()) << unsqueezed.status();
  EXPECT_EQ(unsqueezed->layout().ToString(),
            "(2,3,2,3,2,3,2,3,2,1):(1,2,6,12,36,72,216,432,1296,0)");
  EXPECT_EQ(unsqueezed->layout().cosize(), flat.layout().cosize());
  // 7 inline leaves, then a hierarchical mode that does not fit.
  const Tensor nested =
      Plain("(2,2,2,2,2,2,2,(2,(2,2))):(1,2,4,8,16,32,64,(128,(256,512)))");
  auto moved = Permute(nested, {7, 0, 1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->layout().ToString(),
            "((2,(2,2)),2,2,2,2,2,2,2):((128,(256,512)),1,2,4,8,16,32,64)");
  // The nested mode spills the buffers at 7 leaves; the integer mode after it
  // would fit them, and must still follow it (the API fuzzer found this).
  auto spilled_first =
      Permute(Plain("(2,2,2,2,2,2,(2,2),2):(1,2,4,8,16,32,(64,128),256)"),
              {0, 1, 2, 3, 4, 5, 7, 6});
  ASSERT_TRUE(spilled_first.ok()) << spilled_first.status();
  EXPECT_EQ(spilled_first->layout().ToString(),
            "(2,2,2,2,2,2,2,(2,2)):(1,2,4,8,16,32,256,(64,128))");
  auto after_spill =
      Permute(Plain("(2,2,2,2,2,2,2,(2,2),2):(1,2,4,8,16,32,64,(128,256),512)"),
              {0, 1, 2, 3, 4, 5, 6, 7, 8});
  ASSERT_TRUE(after_spill.ok()) << after_spill.status();
  EXPECT_EQ(after_spill->layout().ToString(),
            "(2,2,2,2,2,2,2,(2,2),2):(1,2,4,8,16,32,64,(128,256),512)");
  // An empty-tuple mode holds a token and no leaf (the review found a
  // corrupted L_0 here).
  auto with_empty_mode =
      Permute(Plain("((2,2,2,2,2,2,2,2,2),()):((1,2,4,8,16,32,64,128,256),())"),
              {1, 0});
  ASSERT_TRUE(with_empty_mode.ok()) << with_empty_mode.status();
  EXPECT_EQ(with_empty_mode->layout().ToString(),
            "((),(2,2,2,2,2,2,2,2,2)):((),(1,2,4,8,16,32,64,128,256))");
  auto broadcast = BroadcastTo(nested, {3, 2, 2, 2, 2, 2, 2, 2, 8});
  ASSERT_TRUE(broadcast.ok()) << broadcast.status();
  EXPECT_EQ(broadcast->size(), 3 * nested.size());
  // 19 modes, one hierarchical: the mode table of the views lives on the
  // heap past 16 modes. Reversed, unsqueezed at the end and squeezed back.
  std::string shape = "((2,2)", stride = "((1,2)";
  std::vector<int64_t> reverse = {18};
  for (int i = 1; i < 19; ++i) {
    absl::StrAppend(&shape, ",1");
    absl::StrAppend(&stride, ",", i);
    reverse.push_back(18 - i);
  }
  const Tensor many = Plain(shape + "):" + stride + ")");
  auto reversed = Permute(many, reverse);
  ASSERT_TRUE(reversed.ok()) << reversed.status();
  EXPECT_EQ(reversed->layout().mode(18).ToString(), "(2,2):(1,2)");
  EXPECT_EQ(reversed->layout().mode(0).ToString(), "1:18");
  auto grown = Unsqueeze(many, 19);
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_EQ(grown->layout().rank(), 20);
  auto back = Squeeze(*grown, 19);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->layout(), many.layout());
  std::vector<int64_t> wide(19, 3);
  wide[0] = 4;
  auto widened = BroadcastTo(many, wide);
  ASSERT_TRUE(widened.ok()) << widened.status();
  EXPECT_EQ(widened->size(), 4 * int64_t{387420489});  // 4 * 3^18
  EXPECT_EQ(widened->layout().mode(5).ToString(), "3:0");
  auto sliced = Slice(flat, 8, 1, 2, 1);
  ASSERT_TRUE(sliced.ok()) << sliced.status();
  EXPECT_EQ(sliced->offset(), 1296);
  EXPECT_EQ(sliced->size(), flat.size() / 2);
}

// Views of Tensors of 3 and 6 levels: a draft of up to 4 levels is built from
// its source in one pass (Storage<N>), one beyond by copies; either way every
// deeper level, carrier and offset is the source's, and the view invariant
// holds at every level.
TEST(ViewFastPathsTest, DraftsOfThreeAndSixLevelsKeepEveryDeeperLevel) {
  for (const int levels : {3, 6}) {
    SCOPED_TRACE(absl::StrCat(levels, " levels"));
    const std::vector<const SimpleDType*> schema(levels, dtypes::Int32());
    const CompoundDType* dtype =
        *CompoundDType::Create(absl::StrCat("test_levels_", levels), schema);
    std::vector<SubtensorCandidate> subtensors;
    std::vector<absl::StatusOr<Layout>> adjacent;
    for (int i = 0; i < levels; ++i) {
      subtensors.push_back({dtypes::Int32(),
                            *HostCarrier::Create(*dtypes::Int32(), 30 + i), i,
                            L("(4,6):(6,1)")});
      // Coordinate (a, b) of level i is level i + 1's linear index a + 4b.
      if (i + 1 < levels) adjacent.push_back(L("(4,6):(1,4)"));
    }
    auto rep = Representation::Create(dtype, subtensors, adjacent);
    ASSERT_TRUE(rep.ok()) << rep.status();
    const Tensor t = MakeTensor(*rep);
    const Representation& source = TensorAccess::representation(t);
    auto permuted = Permute(t, {1, 0});
    ASSERT_TRUE(permuted.ok()) << permuted.status();
    const Representation& view = TensorAccess::representation(*permuted);
    ASSERT_EQ(view.num_levels(), levels);
    EXPECT_EQ(&view.logical_dtype(), dtype);
    EXPECT_EQ(view.subtensor(0).placement, L("(6,4):(1,6)"));
    EXPECT_EQ(view.adjacent_layouts()[0], L("(6,4):(4,1)"));
    for (int i = 0; i < levels; ++i) {
      EXPECT_EQ(view.subtensor(i).carrier, source.subtensor(i).carrier);
      EXPECT_EQ(view.subtensor(i).offset, source.subtensor(i).offset);
      EXPECT_EQ(view.subtensor(i).storage_dtype, dtypes::Int32());
      if (i > 0) {
        EXPECT_EQ(view.subtensor(i).placement, source.subtensor(i).placement);
      }
      if (i > 0 && i + 1 < levels) {
        EXPECT_EQ(view.adjacent_layouts()[i], source.adjacent_layouts()[i]);
      }
    }
    ExpectInvariant(t, *permuted, [](const Coord& c) {
      return Coord{c[1], c[0]};
    });
    auto unsqueezed = Unsqueeze(t, 1);
    ASSERT_TRUE(unsqueezed.ok()) << unsqueezed.status();
    ExpectInvariant(t, *unsqueezed, [](const Coord& c) {
      return Coord{c[0], c[2]};
    });
    auto sliced = Slice(t, 1, 2, 6, 2);
    ASSERT_TRUE(sliced.ok()) << sliced.status();
    ExpectInvariant(t, *sliced, [](const Coord& c) {
      return Coord{c[0], 2 + 2 * c[1]};
    });
  }
}

}  // namespace
}  // namespace strata
