// Issue 37's figures: planning a 100-shard, 10,000-tensor checkpoint for 8
// ranks (O(tensors), goal under 50 ms), and the bytes a rank of N maps
// against the whole (goal about 1/N plus a page per part edge), on a
// synthetic directory whose data is sparse (headers and ftruncate): half the
// tensors DeepSeek FP8 128x128 weights (F8_E4M3 + F32 weight_scale_inv), half
// bf16.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "checkpoint/checkpoint.h"
#include "distributed/rank_shards.h"

namespace strata {
namespace {

constexpr int64_t kShards = 100, kPerShard = 100;

const std::string& Directory() {
  static const std::string* dir = [] {
    const char* base = getenv("TEST_TMPDIR");
    std::string d = absl::StrCat(base != nullptr ? base : "/tmp",
                                 "/rank_shards_bench_", getpid());
    std::system(absl::StrCat("rm -rf '", d, "' && mkdir -p '", d, "'").c_str());
    std::string index = "{\"weight_map\":{";
    bool first_entry = true;
    for (int64_t f = 0; f < kShards; ++f) {
      char name[64];
      std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors",
                    static_cast<int>(f + 1), static_cast<int>(kShards));
      std::string header = "{";
      int64_t at = 0;
      const auto entry = [&](const std::string& tensor, const char* dtype,
                             const std::string& shape, int64_t bytes) {
        absl::StrAppend(&header, header.size() > 1 ? "," : "", "\"", tensor,
                        "\":{\"dtype\":\"", dtype, "\",\"shape\":[", shape,
                        "],\"data_offsets\":[", at, ",", at + bytes, "]}");
        absl::StrAppend(&index, first_entry ? "" : ",", "\"", tensor, "\":\"",
                        name, "\"");
        first_entry = false;
        at += bytes;
      };
      for (int64_t i = 0; i < kPerShard; ++i) {
        const std::string t = absl::StrCat("l", f, ".t", i, ".weight");
        if (i % 2 == 0) {
          entry(t + "_scale_inv", "F32", "8,4", 8 * 4 * 4);
          entry(t, "F8_E4M3", "1024,512", 1024 * 512);
        } else {
          entry(t, "BF16", "512,512", 512 * 512 * 2);
        }
      }
      header += "}";
      header.append((8 - header.size() % 8) % 8, ' ');
      const std::string path = absl::StrCat(d, "/", name);
      {
        std::ofstream out(path, std::ios::binary);
        const uint64_t length = header.size();
        out.write(reinterpret_cast<const char*>(&length), 8);
        out << header;
      }
      if (truncate(path.c_str(), 8 + header.size() + at) != 0) std::abort();
    }
    index += "}}";
    std::ofstream(absl::StrCat(d, "/model.safetensors.index.json")) << index;
    return new std::string(d);
  }();
  return *dir;
}

const Checkpoint& Read() {
  static const Checkpoint* checkpoint = [] {
    auto read = ReadCheckpoint(Directory());
    if (!read.ok() ||
        static_cast<int64_t>(read->tensors.size()) != kShards * kPerShard) {
      std::abort();
    }
    return new Checkpoint(*std::move(read));
  }();
  return *checkpoint;
}

void BM_PlanCheckpointShards(benchmark::State& state) {
  const Checkpoint& checkpoint = Read();
  const std::vector<ShardRule> rules = {{".*", 0}};
  const int64_t parts = state.range(0);
  for (auto _ : state) {
    auto plan = PlanCheckpointShards(checkpoint, rules, parts);
    if (!plan.ok() || plan->refused != 0) {
      state.SkipWithError("plan failed");
      break;
    }
    benchmark::DoNotOptimize(plan);
  }
  state.counters["tensors"] = static_cast<double>(checkpoint.tensors.size());
}
BENCHMARK(BM_PlanCheckpointShards)->Arg(8)->Unit(benchmark::kMillisecond);

// Rank 0 of N: mapped bytes against the whole (mapped_over_whole x N should
// be about 1), and the time to map.
void BM_LoadRankShard(benchmark::State& state) {
  const Checkpoint& checkpoint = Read();
  const int64_t parts = state.range(0);
  auto plan = PlanCheckpointShards(checkpoint, {{".*", 0}}, parts);
  if (!plan.ok()) {
    state.SkipWithError("plan failed");
    return;
  }
  double mapped = 0, whole = 0;
  for (auto _ : state) {
    auto shard = LoadRankShard(checkpoint, *plan, 0);
    if (!shard.ok()) {
      state.SkipWithError("load failed");
      break;
    }
    mapped = static_cast<double>(shard->mapped_bytes);
    whole = static_cast<double>(shard->whole_bytes);
  }
  state.counters["mapped_MB"] = mapped / 1e6;
  state.counters["whole_MB"] = whole / 1e6;
  state.counters["mapped_x_N_over_whole"] = mapped * parts / whole;
}
BENCHMARK(BM_LoadRankShard)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata
