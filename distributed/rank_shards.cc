#include "distributed/rank_shards.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/dtype.h"
#include "layout/layout.h"
#include "re2/re2.h"
#include "util/errors.h"
#include "util/status_macros.h"
#include "views/shard_plan.h"
#include "views/views.h"

namespace strata {
namespace {

std::string Quoted(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

int64_t PageSize() { return static_cast<int64_t>(sysconf(_SC_PAGESIZE)); }

int64_t PageSize();

// The mappings of one rank, one per distinct (file, span).
class Spans {
 public:
  absl::StatusOr<std::shared_ptr<const MappedRegion>> Map(
      const std::string& file, int64_t begin, int64_t end) {
    const auto key = std::make_tuple(file, begin, end);
    if (auto it = regions_.find(key); it != regions_.end()) return it->second;
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const MappedRegion> region,
                            MappedRegion::Map(file, begin, end - begin));
    // The mapping's whole pages (a span that ends with its file ends
    // mid-page; the page is mapped all the same).
    const int64_t page = PageSize();
    mapped_bytes_ += (end - begin + page - 1) / page * page;
    regions_.emplace(key, region);
    return region;
  }
  int64_t mapped_bytes() const { return mapped_bytes_; }

 private:
  std::map<std::tuple<std::string, int64_t, int64_t>,
           std::shared_ptr<const MappedRegion>>
      regions_;
  int64_t mapped_bytes_ = 0;
};

// `view` rebuilt over carriers of fresh mappings of only the pages its levels
// reach (NOTE [ Rank shards ]).
absl::StatusOr<Tensor> Remapped(const std::string& name, const Tensor& view,
                                Spans& spans, int64_t* whole_bytes) {
  const Representation& rep = TensorAccess::representation(view);
  const int64_t page = PageSize();
  std::vector<SubtensorCandidate> subtensors;
  for (int k = 0; k < rep.num_levels(); ++k) {
    const Subtensor& s = rep.subtensor(k);
    const auto* mapped = dynamic_cast<const MappedCarrier*>(s.carrier.get());
    if (mapped == nullptr || mapped->anonymous() ||
        mapped->region() == nullptr) {
      return ValueErrorCat("LoadRankShard: tensor ", Quoted(name), ": level ",
                           k, " is not over a file (", s.carrier->Describe(),
                           ")");
    }
    const SimpleDType& dtype = *s.storage_dtype->AsSimple();
    const int bits = dtype.bits();
    *whole_bytes += mapped->size_in_bytes();
    // The values the level reaches: [offset, offset + cosize) of the carrier
    // (views step forward only: min_index is 0). The new carrier begins at
    // the first of them (at a whole byte for packed values).
    const int64_t values_per_byte = bits < 8 ? 8 / bits : 1;
    const int64_t first = s.offset / values_per_byte * values_per_byte;
    const int64_t reach = s.offset + s.placement.cosize();
    const int64_t start = mapped->file_offset() + first * bits / 8;
    const int64_t stop = mapped->file_offset() + (reach * bits + 7) / 8;
    const MappedRegion& old_region = *mapped->region();
    const int64_t region_end = old_region.offset() + old_region.length();
    const int64_t span_begin = start / page * page;
    const int64_t span_end =
        std::min(region_end, (std::max(stop, start) + page - 1) / page * page);
    STRATA_ASSIGN_OR_RETURN(
        std::shared_ptr<const MappedRegion> region,
        spans.Map(mapped->file(), span_begin, std::max(span_end, span_begin)));
    STRATA_ASSIGN_OR_RETURN(
        std::shared_ptr<MappedCarrier> carrier,
        MappedCarrier::Create(dtype, std::max<int64_t>(reach - first, 0),
                              region, start - span_begin));
    subtensors.push_back(
        {s.storage_dtype, std::move(carrier), s.offset - first, s.placement});
  }
  if (rep.num_levels() == 1) {
    return Tensor::Create(subtensors[0].carrier, subtensors[0].offset,
                          *subtensors[0].placement);
  }
  std::vector<absl::StatusOr<Layout>> adjacent(rep.adjacent_layouts().begin(),
                                               rep.adjacent_layouts().end());
  STRATA_ASSIGN_OR_RETURN(
      auto representation,
      Representation::Create(&view.dtype(), std::move(subtensors),
                             std::move(adjacent)));
  return MakeTensor(std::move(representation));
}

}  // namespace

absl::Status RefusalError(const TensorShardPlan& p) {
  std::string where;
  if (p.granule > 0 && p.extent > 0) {
    where = absl::StrCat(" (dim ", p.dim, ", extent ", p.extent,
                         ", granule=", p.granule,
                         p.pad > 0 ? absl::StrCat(", pad=", p.pad) : "", ")");
  }
  return ValueErrorCat(p.name, ": ", p.status.message(), where);
}

absl::StatusOr<std::vector<ShardRule>> ParseShardRules(absl::string_view text) {
  std::vector<ShardRule> rules;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const auto refuse = [&](absl::string_view why) {
      return ValueErrorCat("shard rules: line ", line_number, " (",
                           Quoted(line), "): ", why);
    };
    size_t space = line.size();
    while (space > 0 && !absl::ascii_isspace(line[space - 1])) --space;
    if (space == 0) return refuse("not REGEX DIM");
    const absl::string_view dim_text = line.substr(space);
    ShardRule rule;
    rule.regex =
        std::string(absl::StripTrailingAsciiWhitespace(line.substr(0, space)));
    const bool digits =
        !dim_text.empty() &&
        std::all_of(dim_text.begin() + (dim_text[0] == '-' ? 1 : 0),
                    dim_text.end(), absl::ascii_isdigit) &&
        dim_text != "-";
    if (!digits || !absl::SimpleAtoi(dim_text, &rule.dim)) {
      return refuse(
          absl::StrCat("DIM ", Quoted(dim_text), " is not an integer"));
    }
    RE2::Options options;
    options.set_log_errors(false);
    const RE2 re(rule.regex, options);
    if (!re.ok()) {
      return refuse(absl::StrCat("the regex is not RE2: ", re.error()));
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

absl::StatusOr<CheckpointShardPlan> PlanCheckpointShards(
    const Checkpoint& checkpoint, absl::Span<const ShardRule> rules,
    int64_t parts) {
  if (parts < 1 || parts > kMaxShardParts) {
    return ValueErrorCat("PlanCheckpointShards: parts ", parts,
                         " is not in [1, ", kMaxShardParts, "]");
  }
  RE2::Options options;
  options.set_log_errors(false);
  std::vector<std::unique_ptr<RE2>> compiled;
  for (size_t i = 0; i < rules.size(); ++i) {
    compiled.push_back(std::make_unique<RE2>(rules[i].regex, options));
    if (!compiled.back()->ok()) {
      return ValueErrorCat("PlanCheckpointShards: rule ", i, " ",
                           Quoted(rules[i].regex),
                           " is not RE2: ", compiled.back()->error());
    }
  }
  CheckpointShardPlan plan;
  plan.parts = parts;
  for (const CheckpointTensor& t : checkpoint.tensors) {
    TensorShardPlan p;
    p.name = t.name;
    const auto refuse = [&](absl::Status status) {
      p.kind = TensorShardPlan::Kind::kRefused;
      p.status = std::move(status);
      ++plan.refused;
    };
    size_t rule = 0;
    while (rule < rules.size() && !RE2::FullMatch(t.name, *compiled[rule])) {
      ++rule;
    }
    if (!t.tensor.ok()) {
      refuse(t.tensor.status());
    } else if (rule == rules.size()) {
      p.kind = TensorShardPlan::Kind::kReplicated;
      ++plan.replicated;
    } else {
      const int64_t rank = static_cast<int64_t>(t.tensor->shape().size());
      const int64_t dim =
          rules[rule].dim < 0 ? rules[rule].dim + rank : rules[rule].dim;
      if (dim < 0 || dim >= rank) {
        p.dim = rules[rule].dim;
        refuse(ValueErrorCat("dim ", rules[rule].dim,
                             " is out of range for rank ", rank, " (rule ",
                             Quoted(rules[rule].regex), ")"));
      } else {
        p.dim = dim;
        absl::StatusOr<ShardPlan> split = PlanShards(*t.tensor, dim, parts);
        if (!split.ok()) {
          absl::StatusOr<int64_t> granule = ShardGranule(*t.tensor, dim);
          p.granule = granule.ok() ? *granule : 0;
          p.extent = t.tensor->shape()[dim];
          int64_t step = 0;
          if (p.granule > 0 &&
              !__builtin_mul_overflow(parts, p.granule, &step)) {
            const int64_t blocks = (p.extent + step - 1) / step;
            if (__builtin_mul_overflow(blocks, step, &p.pad)) p.pad = 0;
          }
          refuse(split.status());
        } else {
          p.granule = split->granule;
          p.extent = split->extent;
          p.pad = split->pad;
          absl::Status first_refused;
          for (const ShardPart& part : split->parts) {
            p.ranges.emplace_back(part.begin, part.end);
            if (!part.view.ok() && first_refused.ok()) {
              first_refused = part.view.status();
            }
          }
          if (!first_refused.ok()) {
            p.ranges.clear();
            refuse(first_refused);
          } else {
            p.kind = TensorShardPlan::Kind::kSplit;
            ++plan.split;
          }
        }
      }
    }
    plan.tensors.push_back(std::move(p));
  }
  return plan;
}

absl::StatusOr<TensorMap> LoadRankShard(const Checkpoint& checkpoint,
                                        const CheckpointShardPlan& plan,
                                        int64_t rank) {
  if (rank < 0 || rank >= plan.parts) {
    return ValueErrorCat("LoadRankShard: rank ", rank, " is outside [0, ",
                         plan.parts, ")");
  }
  if (plan.tensors.size() != checkpoint.tensors.size()) {
    return ValueErrorCat("LoadRankShard: the plan has ", plan.tensors.size(),
                         " tensors, the checkpoint ",
                         checkpoint.tensors.size());
  }
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorShardPlan& p = plan.tensors[i];
    if (p.name != checkpoint.tensors[i].name) {
      return ValueErrorCat("LoadRankShard: the plan's tensor ", i, " is ",
                           Quoted(p.name), ", the checkpoint's ",
                           Quoted(checkpoint.tensors[i].name));
    }
    if (p.kind == TensorShardPlan::Kind::kRefused) {
      return RefusalError(p);
    }
  }
  // Every view first (they only read layouts), then the mappings.
  std::vector<Tensor> views;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorShardPlan& p = plan.tensors[i];
    const Tensor& whole = *checkpoint.tensors[i].tensor;
    if (p.kind == TensorShardPlan::Kind::kReplicated) {
      views.push_back(whole);
      continue;
    }
    const auto [begin, end] = p.ranges[rank];
    STRATA_ASSIGN_OR_RETURN(Tensor part, Slice(whole, p.dim, begin, end, 1));
    views.push_back(std::move(part));
  }
  TensorMap out;
  Spans spans;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(
        Tensor part,
        Remapped(plan.tensors[i].name, views[i], spans, &out.whole_bytes));
    out.tensors.emplace_back(plan.tensors[i].name, std::move(part));
  }
  out.mapped_bytes = spans.mapped_bytes();
  return out;
}

}  // namespace strata
