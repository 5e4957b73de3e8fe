// PlanCheckpointShards, LoadRankShard, ParseShardRules
// (distributed/rank_shards.h, NOTE [ Rank shards ]).
#include "distributed/rank_shards.h"

#include <unistd.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_writer.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/dequantize.h"
#include "ops/quantize.h"
#include "tests/test_util.h"
#include "util/errors.h"
#include "views/views.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
using testing::RandomNormal;
using testing::TempPath;

std::string Values(const Tensor& t) {
  auto v = Dequantize(t, *dtypes::Float32());
  EXPECT_TRUE(v.ok()) << FormatError(v.status());
  return std::string(static_cast<const char*>(v->carrier()->data()),
                     v->size() * 4);
}

// A directory: a ragged FP8 128x128 weight (576 rows), an nvfp4_ts weight,
// a float32 expert tensor (8 experts), a replicated norm.
std::string MakeDirectory(const std::string& name) {
  const std::string dir = TempPath(name);
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
  std::vector<TensorToWrite> writes;
  writes.push_back(ToWrite("l.kv.weight",
                           *QuantizeBlockScaled(RandomNormal({576, 1024}, 1),
                                                *dtypes::FP8E4M3Block128x128(),
                                                kBlocksOfTheFormat)));
  writes.push_back(
      ToWrite("l.up.weight", *QuantizeBlockScaled(RandomNormal({512, 1024}, 2),
                                                  *dtypes::NVFP4TS(), 1)));
  writes.push_back(ToWrite("l.experts.w", RandomNormal({8, 64, 256}, 3)));
  writes.push_back(ToWrite("norm.weight", RandomNormal({1024}, 4)));
  WriteCheckpointOptions options;
  options.max_shard_size = 400'000;
  EXPECT_TRUE(WriteCheckpoint(dir, std::move(writes), options).ok());
  return dir;
}

const std::vector<ShardRule> kRules = {{".*experts.*", 0},
                                       {".*\\.(kv|up)\\.weight", 0}};

// Scenario: every rank's parts are views of the whole with its values, and
// a rank maps about 1/N of each split tensor plus a page per edge.
TEST(RankShardsTest, EachRankMapsItsPartWithTheWholesValues) {
  const std::string dir = MakeDirectory("rank_dir");
  auto checkpoint = ReadCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << FormatError(checkpoint.status());
  const int64_t page = sysconf(_SC_PAGESIZE);
  for (int64_t parts : {1, 2, 4}) {
    auto plan = PlanCheckpointShards(*checkpoint, kRules, parts);
    ASSERT_TRUE(plan.ok()) << FormatError(plan.status());
    EXPECT_EQ(plan->split, 3);
    EXPECT_EQ(plan->replicated, 1);
    EXPECT_EQ(plan->refused, 0);
    int64_t total_mapped = 0;
    for (int64_t rank = 0; rank < parts; ++rank) {
      auto shard = LoadRankShard(*checkpoint, *plan, rank);
      ASSERT_TRUE(shard.ok()) << FormatError(shard.status());
      ASSERT_EQ(shard->tensors.size(), 4u);
      for (size_t i = 0; i < shard->tensors.size(); ++i) {
        const TensorShardPlan& p = plan->tensors[i];
        const Tensor& whole = *checkpoint->tensors[i].tensor;
        const Tensor& part = shard->tensors[i].second;
        EXPECT_EQ(shard->tensors[i].first, p.name);
        const Tensor expected = p.kind == TensorShardPlan::Kind::kSplit
                                    ? *Slice(whole, p.dim, p.ranges[rank].first,
                                             p.ranges[rank].second, 1)
                                    : whole;
        EXPECT_EQ(part.shape(), expected.shape()) << p.name;
        EXPECT_EQ(Values(part), Values(expected)) << p.name << " rank " << rank;
        // Over fresh mappings, not the checkpoint's.
        for (const Subtensor& s :
             TensorAccess::representation(part).subtensors()) {
          const auto* m = dynamic_cast<const MappedCarrier*>(s.carrier.get());
          ASSERT_NE(m, nullptr);
          EXPECT_EQ(m->region()->offset() % page, 0);
        }
      }
      EXPECT_LE(shard->mapped_bytes,
                shard->whole_bytes / parts + 4096 /*norm*/ + 7 * 2 * page +
                    shard->whole_bytes / 5 /* the ragged 576 = 384 + 192 */);
      total_mapped += shard->mapped_bytes;
    }
    // The ranks together map the whole once, plus page edges.
    const int64_t levels = 2 + 3 + 1 + 1;
    auto one = LoadRankShard(*checkpoint, *plan, 0);
    EXPECT_LE(total_mapped,
              one->whole_bytes + parts * (levels * 2 * page + 4096 * 2));
  }
}

TEST(RankShardsTest, RefusalsAreJudgedBeforeAnythingIsMapped) {
  const std::string dir = MakeDirectory("rank_refused");
  auto checkpoint = ReadCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok());
  // 576 rows are 5 granules of 128: 8 parts are too many.
  auto plan = PlanCheckpointShards(*checkpoint, kRules, 8);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->refused, 1);  // kv: 5 granules (up's rows are 1 each)
  const TensorShardPlan* found = nullptr;
  for (const TensorShardPlan& t : plan->tensors) {
    if (t.name == "l.kv.weight") found = &t;
  }
  ASSERT_NE(found, nullptr);
  const TensorShardPlan& kv = *found;
  EXPECT_EQ(kv.kind, TensorShardPlan::Kind::kRefused);
  EXPECT_EQ(kv.granule, 128);
  EXPECT_EQ(kv.pad, 1024);
  const absl::Status refusal = RefusalError(kv);
  EXPECT_THAT(std::string(refusal.message()), HasSubstr("l.kv.weight"));
  EXPECT_THAT(std::string(refusal.message()), HasSubstr("pad=1024"));
  auto load = LoadRankShard(*checkpoint, *plan, 0);
  EXPECT_TRUE(IsValueError(load.status()));
  EXPECT_THAT(std::string(load.status().message()), HasSubstr("pad=1024"));
  // A dim out of range refuses that tensor alone.
  auto bad_dim = PlanCheckpointShards(*checkpoint, {{"norm.weight", 1}}, 2);
  ASSERT_TRUE(bad_dim.ok());
  EXPECT_EQ(bad_dim->refused, 1);
  EXPECT_THAT(std::string(bad_dim->tensors[3].status.message()),
              HasSubstr("out of range for rank 1"));
  // Ranks and parts out of range; a plan of another checkpoint.
  auto two = PlanCheckpointShards(*checkpoint, kRules, 2);
  ASSERT_TRUE(two.ok());
  EXPECT_TRUE(IsValueError(LoadRankShard(*checkpoint, *two, 2).status()));
  EXPECT_TRUE(IsValueError(LoadRankShard(*checkpoint, *two, -1).status()));
  EXPECT_TRUE(
      IsValueError(PlanCheckpointShards(*checkpoint, kRules, 0).status()));
  Checkpoint other = *checkpoint;
  other.tensors.pop_back();
  EXPECT_TRUE(IsValueError(LoadRankShard(other, *two, 0).status()));
  EXPECT_TRUE(
      IsValueError(PlanCheckpointShards(*checkpoint, {{"(", 0}}, 2).status()));
}

TEST(RankShardsTest, RulesFiles) {
  auto rules = ParseShardRules(
      "# column parallel\n"
      ".*q_proj\\.weight 0\n"
      "\n"
      "  .*o_proj .weight   -1   # row parallel\n");
  ASSERT_TRUE(rules.ok()) << FormatError(rules.status());
  ASSERT_EQ(rules->size(), 2u);
  EXPECT_EQ((*rules)[0].regex, ".*q_proj\\.weight");
  EXPECT_EQ((*rules)[1].regex, ".*o_proj .weight");
  EXPECT_EQ((*rules)[1].dim, -1);
  for (const auto& [text, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"justone\n", "line 1"},
           {"a 0\nb x\n", "line 2"},
           {"a +1\n", "is not an integer"},
           {"(a 0\n", "not RE2"},
           {"a 99999999999999999999\n", "is not an integer"},
           {"a -\n", "is not an integer"}}) {
    auto bad = ParseShardRules(text);
    EXPECT_TRUE(IsValueError(bad.status())) << text;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(message))
        << text;
  }
}

}  // namespace
}  // namespace strata
