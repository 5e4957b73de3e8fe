// NOTE [ The shard granule ]: the analytic granule equals a brute-force search
// over every union of granules, on random Tensors of every format (row-major
// and swizzled scales, ragged blocks, the GGUF array-of-structs placements
// through their quantized form, plain and hierarchical one-level Tensors) and
// views of them; PlanShards' parts, their views and the padding.
#include "views/shard_plan.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "core/tensor.h"
#include "dtype/registry.h"
#include "gtest/gtest.h"
#include "layout/random_layouts.h"
#include "ops/quantize.h"
#include "tests/test_util.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "views/views.h"

namespace strata {
namespace {

Tensor Floats(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  auto carrier = *HostCarrier::Create(*dtypes::Float32(), n);
  float* f = static_cast<float*>(carrier->mutable_data());
  for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(i % 13) - 6.0f;
  return *Tensor::Create(carrier, 0, *Layout::RowMajor(IntTuple::Flat(shape)));
}

// The smallest g whose every union [a*g, min(b*g, n)) is a view.
int64_t BruteForceGranule(const Tensor& t, int64_t dim) {
  const int64_t n = t.shape()[dim];
  if (n <= 1) return 1;
  for (int64_t g = 1; g < n; ++g) {
    const int64_t units = CeilDiv(n, g);
    bool all = true;
    for (int64_t a = 0; a < units && all; ++a) {
      for (int64_t b = a + 1; b <= units && all; ++b) {
        all = Slice(t, dim, a * g, std::min(b * g, n)).ok();
      }
    }
    if (all) return g;
  }
  return n;
}

TEST(ShardPlanTest, TheGranuleIsTheBruteForceOneOnRandomTensors) {
  testing::RandomLayouts gen(29);
  int checked = 0;
  std::vector<int64_t> seen;
  for (int n = 0; n < 160; ++n) {
    Tensor t = Floats({1});
    const int which = gen.Uniform(0, 8);
    switch (which) {
      case 0:  // Plain, flat.
        t = Floats({gen.Uniform(1, 20), gen.Uniform(1, 20)});
        break;
      case 1: {  // Plain with a hierarchical mode (a merging reshape).
        Tensor p = *Permute(
            Floats({gen.Uniform(1, 4), gen.Uniform(2, 6), gen.Uniform(1, 3)}),
            {1, 0, 2});
        auto r = Reshape(p, {p.shape()[0] * p.shape()[1], p.shape()[2]});
        t = r.ok() ? *r : p;
        break;
      }
      case 2:
        t = *QuantizeBlockScaled(
            Floats({gen.Uniform(1, 6), 32 * gen.Uniform(1, 3)}),
            *dtypes::MXFP8E4M3(), 1);
        break;
      case 3:
        t = *QuantizeBlockScaled(
            Floats({gen.Uniform(1, 40), 16 * gen.Uniform(1, 9)}),
            *dtypes::NVFP4TS(), 1, ScaleLayout::kSwizzled128x4);
        break;
      case 4:
        t = *QuantizeBlockScaled(
            Floats({gen.Uniform(1, 300), gen.Uniform(1, 3)}),
            *dtypes::FP8E4M3Block128x128(), kBlocksOfTheFormat);
        break;
      case 5:
        t = *QuantizeBlockScaled(
            Floats({gen.Uniform(1, 5), 32 * gen.Uniform(1, 3)}),
            *dtypes::Q4_0(), kBlocksOfTheFormat);
        break;
      case 6:
        t = *QuantizeBlockScaled(
            Floats({gen.Uniform(1, 4), gen.Uniform(1, 40)}),
            *dtypes::FP8E4M3Rowwise(), kBlocksOfTheFormat);
        break;
      case 7: {  // A transposed swizzled Tensor.
        t = *Permute(*QuantizeBlockScaled(Floats({gen.Uniform(1, 36), 64}),
                                          *dtypes::MXFP8E4M3(), 1,
                                          ScaleLayout::kSwizzled128x4),
                     {1, 0});
        break;
      }
      default:
        t = *QuantizeBlockScaled(
            Floats({gen.Uniform(1, 3), 32 * gen.Uniform(1, 4)}),
            *dtypes::Q8_0(), kBlocksOfTheFormat);
        break;
    }
    const std::vector<int64_t> shape = t.shape();
    for (int64_t dim = 0; dim < static_cast<int64_t>(shape.size()); ++dim) {
      if (shape[dim] > 300) continue;
      SCOPED_TRACE(absl::StrCat(t.dtype().name(), " (",
                                absl::StrJoin(shape, ","), ") dim ", dim));
      auto g = ShardGranule(t, dim);
      ASSERT_TRUE(g.ok()) << g.status();
      // The brute force is quadratic in the granules: small dims only.
      if (shape[dim] / *g > 40 && *g == 1 && shape[dim] > 40) continue;
      ASSERT_EQ(*g, BruteForceGranule(t, dim));
      seen.push_back(*g);
      ++checked;
    }
  }
  EXPECT_GT(checked, 150);
  // Granules other than 1 and the extent were met (16, 32, 128, ...).
  EXPECT_TRUE(std::count(seen.begin(), seen.end(), 32) > 0);
  EXPECT_TRUE(std::count(seen.begin(), seen.end(), 128) > 0);
}

// formats.md: "1 for a plain Tensor; for the 128x4 swizzle along its row
// mode, 128".
TEST(ShardPlanTest, GranulesOfTheContract) {
  EXPECT_EQ(*ShardGranule(Floats({7, 9}), 0), 1);
  const Tensor sw = *QuantizeBlockScaled(
      Floats({256, 256}), *dtypes::MXFP8E4M3(), 1, ScaleLayout::kSwizzled128x4);
  EXPECT_EQ(*ShardGranule(sw, 0), 128);
  EXPECT_EQ(*ShardGranule(sw, 1), 128);  // Whole 4-block atoms of columns.
  const Tensor ds = *QuantizeBlockScaled(
      Floats({576, 256}), *dtypes::FP8E4M3Block128x128(), kBlocksOfTheFormat);
  EXPECT_EQ(*ShardGranule(ds, 0), 128);
  EXPECT_EQ(*ShardGranule(ds, 1), 128);
  const Tensor mx = *QuantizeBlockScaled(Floats({4, 96}), *dtypes::MXFP4(), 1);
  EXPECT_EQ(*ShardGranule(mx, 0), 1);
  EXPECT_EQ(*ShardGranule(mx, 1), 32);
}

// Review: a dim L_0 broadcasts holds no block; every row is a view.
TEST(ShardPlanTest, ABroadcastDimHasGranuleOne) {
  const Tensor q = *QuantizeBlockScaled(Floats({64}), *dtypes::MXFP8E4M3(), 0);
  const Tensor b = *BroadcastTo(q, {8, 64});
  EXPECT_EQ(*ShardGranule(b, 0), 1);
  EXPECT_EQ(BruteForceGranule(b, 0), 1);
  auto plan = PlanShards(b, 0, 2);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->parts[1].view.ok());
}

TEST(ShardPlanTest, PartsViewsAndPadding) {
  const Tensor ds = *QuantizeBlockScaled(
      Floats({576, 256}), *dtypes::FP8E4M3Block128x128(), kBlocksOfTheFormat);
  // 576 rows = 5 granules of 128 (the last 64): 4 parts take 2,1,1,1.
  auto plan = PlanShards(ds, 0, 4);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->granule, 128);
  EXPECT_EQ(plan->extent, 576);
  ASSERT_EQ(plan->parts.size(), 4u);
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 256}, {256, 384}, {384, 512}, {512, 576}};
  for (size_t k = 0; k < ranges.size(); ++k) {
    EXPECT_EQ(plan->parts[k].begin, ranges[k].first);
    EXPECT_EQ(plan->parts[k].end, ranges[k].second);
    EXPECT_TRUE(plan->parts[k].view.ok()) << plan->parts[k].view.status();
  }
  EXPECT_EQ(plan->pad, 1024);  // 4 * 128 divides 1024, the first >= 576.
  // More parts than granules.
  const auto too_many = PlanShards(ds, 0, 6);
  EXPECT_TRUE(IsValueError(too_many.status()));
  EXPECT_NE(too_many.status().message().find("granule=128"), std::string::npos);
  // An exact split keeps N.
  EXPECT_EQ(PlanShards(Floats({12, 2}), 0, 3)->pad, 12);
  EXPECT_TRUE(IsValueError(PlanShards(ds, 2, 2).status()));
  EXPECT_TRUE(IsValueError(PlanShards(ds, 0, 0).status()));
  // Each part is a view the plan holds: 2^40 of them asked for terabytes.
  const Tensor wide = *BroadcastTo(Floats({1}), {int64_t{1} << 62});
  const auto absurd = PlanShards(wide, 0, int64_t{1} << 40);
  EXPECT_TRUE(IsResourceExhaustedError(absurd.status())) << absurd.status();
  EXPECT_EQ(PlanShards(wide, 0, kMaxShardParts)->parts.size(),
            static_cast<size_t>(kMaxShardParts));
}

}  // namespace
}  // namespace strata
