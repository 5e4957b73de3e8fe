// libFuzzer target: shard rules files (checkpoints.md section 3;
// distributed/rank_shards.h). The input is a rules file; ParseShardRules
// must answer with an error naming a line or with rules, and
// PlanCheckpointShards of a fixed checkpoint (a 576-row FP8 128x128 weight,
// an nvfp4_ts weight, an expert tensor, a scalar, a refused tensor) by those
// rules, for 1 to 9 parts, must judge every tensor once: split (its ranges
// covering the dim in order), replicated or refused; never a crash, a hang
// (RE2 is linear) or an unbounded allocation.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/tensor.h"
#include "distributed/rank_shards.h"
#include "dtype/registry.h"
#include "layout/layout.h"
#include "ops/ops.h"
#include "ops/quantize.h"
#include "tests/fuzz/fuzz_check.h"
#include "util/errors.h"

namespace {

using namespace strata;

const Checkpoint& Fixed() {
  static const Checkpoint* checkpoint = [] {
    auto* c = new Checkpoint;
    const auto zeros = [](std::vector<int64_t> shape) {
      return *Zeros(*dtypes::Float32(), shape);
    };
    c->tensors.push_back(
        {"l.0.kv.weight",
         *QuantizeBlockScaled(zeros({576, 256}), *dtypes::FP8E4M3Block128x128(),
                              kBlocksOfTheFormat),
         ""});
    c->tensors.push_back(
        {"l.0.up.weight",
         *QuantizeBlockScaled(zeros({64, 64}), *dtypes::NVFP4TS(), 1), ""});
    c->tensors.push_back({"l.0.experts.w1", zeros({8, 4, 16}), ""});
    c->tensors.push_back({"scalar", zeros({}), ""});
    c->tensors.push_back(
        {"refused", ValueErrorCat("refused by its reader"), ""});
    return c;
  }();
  return *checkpoint;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto rules = ParseShardRules(text);
  if (!rules.ok()) {
    FUZZ_CHECK(IsValueError(rules.status()));
    FUZZ_CHECK(std::string(rules.status().message()).find("line ") !=
               std::string::npos);
    return 0;
  }
  const int64_t parts = size == 0 ? 1 : 1 + data[0] % 9;
  auto plan = PlanCheckpointShards(Fixed(), *rules, parts);
  FUZZ_CHECK(plan.ok());
  FUZZ_CHECK(plan->tensors.size() == Fixed().tensors.size());
  FUZZ_CHECK(plan->split + plan->replicated + plan->refused ==
             static_cast<int64_t>(plan->tensors.size()));
  for (size_t i = 0; i < plan->tensors.size(); ++i) {
    const TensorShardPlan& p = plan->tensors[i];
    if (p.kind != TensorShardPlan::Kind::kSplit) continue;
    const Tensor& whole = *Fixed().tensors[i].tensor;
    FUZZ_CHECK(static_cast<int64_t>(p.ranges.size()) == parts);
    int64_t at = 0;
    for (const auto& [begin, end] : p.ranges) {
      FUZZ_CHECK(begin == at && end > begin);
      at = end;
    }
    FUZZ_CHECK(at == whole.shape()[p.dim]);
  }
  return 0;
}
