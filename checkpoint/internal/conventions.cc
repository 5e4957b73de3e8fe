#include "checkpoint/internal/conventions.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/internal/names.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace checkpoint_internal {
namespace {

// Longest suffix first: "weight_scale_2" must not read as "weight_scale".
constexpr std::pair<absl::string_view, Role> kSuffixes[] = {
    {"weight_global_scale", Role::kWeightGlobalScale},
    {"weight_scale_inv", Role::kWeightScaleInv},
    {"weight_scale_2", Role::kWeightScale2},
    {"weight_packed", Role::kWeightPacked},
    {"weight_scale", Role::kWeightScale},
    {"weight", Role::kWeight},
};

const char* RoleSuffix(Role role) {
  for (const auto& [suffix, r] : kSuffixes) {
    if (r == role) return suffix.data();
  }
  return "";
}

// The convention of a group, by the members present.
enum class Convention {
  kModelOptNVFP4,
  kCompressedNVFP4,
  kFP8Block,
  kModelOptMXFP8,
  kFP8TensorOrChannel,
};

const char* ConventionName(Convention c) {
  switch (c) {
    case Convention::kModelOptNVFP4:
      return "ModelOpt NVFP4";
    case Convention::kCompressedNVFP4:
      return "compressed-tensors NVFP4";
    case Convention::kFP8Block:
      return "FP8 block";
    case Convention::kModelOptMXFP8:
      return "ModelOpt MXFP8";
    case Convention::kFP8TensorOrChannel:
      return "FP8 per tensor / per channel";
  }
  return "";
}

bool Present(const Members& m, Role r) {
  return m[static_cast<int>(r)] != nullptr;
}
const Member& Get(const Members& m, Role r) { return *m[static_cast<int>(r)]; }

bool ScalarShape(const std::vector<int64_t>& s) {
  return s.empty() || (s.size() == 1 && s[0] == 1);
}

std::string DTypeText(const Member& m) {
  // The safetensors names of the dtypes the conventions use.
  if (m.dtype == dtypes::UInt8()) return "U8";
  if (m.dtype == dtypes::Float8E4M3FN()) return "F8_E4M3";
  if (m.dtype == dtypes::Float32()) return "F32";
  return m.dtype->name();
}

}  // namespace

std::optional<std::pair<std::string, Role>> ParseMemberName(
    absl::string_view name) {
  for (const auto& [suffix, role] : kSuffixes) {
    if (name.size() < suffix.size() ||
        name.substr(name.size() - suffix.size()) != suffix) {
      continue;
    }
    const absl::string_view prefix =
        name.substr(0, name.size() - suffix.size());
    if (!prefix.empty() && prefix.back() != '.') return std::nullopt;
    return std::make_pair(absl::StrCat(prefix, "weight"), role);
  }
  return std::nullopt;
}

bool FormsGroup(const Members& m) {
  return Present(m, Role::kWeightScale2) || Present(m, Role::kWeightPacked) ||
         Present(m, Role::kWeightGlobalScale) ||
         Present(m, Role::kWeightScaleInv) ||
         (Present(m, Role::kWeight) && Present(m, Role::kWeightScale));
}

absl::StatusOr<GroupPlan> PlanGroup(const std::string& name, const Members& m) {
  Convention c;
  if (Present(m, Role::kWeightScale2)) {
    c = Convention::kModelOptNVFP4;
  } else if (Present(m, Role::kWeightPacked) ||
             Present(m, Role::kWeightGlobalScale)) {
    c = Convention::kCompressedNVFP4;
  } else if (Present(m, Role::kWeightScaleInv)) {
    c = Convention::kFP8Block;
  } else if (Present(m, Role::kWeightScale) &&
             Get(m, Role::kWeightScale).dtype == dtypes::UInt8()) {
    c = Convention::kModelOptMXFP8;
  } else {
    c = Convention::kFP8TensorOrChannel;
  }
  std::vector<std::string> names;
  for (const Member* member : m) {
    if (member != nullptr) names.push_back(Quoted(member->name));
  }
  const auto refuse = [&](absl::string_view problem) {
    return ValueErrorCat("ReadSafetensors: ", ConventionName(c), " group ",
                         Quoted(name), " (", absl::StrJoin(names, ", "),
                         "): ", problem);
  };
  // The roles of each convention: needed, and allowed beside them.
  std::vector<Role> needed;
  switch (c) {
    case Convention::kModelOptNVFP4:
      needed = {Role::kWeight, Role::kWeightScale, Role::kWeightScale2};
      break;
    case Convention::kCompressedNVFP4:
      needed = {Role::kWeightPacked, Role::kWeightScale,
                Role::kWeightGlobalScale};
      break;
    case Convention::kFP8Block:
      needed = {Role::kWeight, Role::kWeightScaleInv};
      break;
    case Convention::kModelOptMXFP8:
    case Convention::kFP8TensorOrChannel:
      needed = {Role::kWeight, Role::kWeightScale};
      break;
  }
  for (int r = 0; r < kNumRoles; ++r) {
    const bool need = std::find(needed.begin(), needed.end(),
                                static_cast<Role>(r)) != needed.end();
    if (need && m[r] == nullptr) {
      return refuse(absl::StrCat("no member ",
                                 Quoted(name.substr(0, name.size() - 6)), "+\"",
                                 RoleSuffix(static_cast<Role>(r)), "\""));
    }
    if (!need && m[r] != nullptr) {
      return refuse(absl::StrCat("member ", Quoted(m[r]->name),
                                 " does not belong to this convention"));
    }
  }
  const auto want = [&](Role r, const SimpleDType* dtype,
                        absl::string_view text) -> absl::Status {
    if (Get(m, r).dtype != dtype) {
      return refuse(absl::StrCat(Quoted(Get(m, r).name), " must be ", text,
                                 "; it is ", DTypeText(Get(m, r))));
    }
    return absl::OkStatus();
  };
  GroupPlan plan;
  plan.name = name;
  const auto leading_equal = [](const std::vector<int64_t>& a,
                                const std::vector<int64_t>& b) {
    // The table shows (N, K): a 1-D weight is no member of these groups.
    return a.size() == b.size() && a.size() >= 2 &&
           std::equal(a.begin(), a.end() - 1, b.begin());
  };
  if (c == Convention::kModelOptNVFP4 || c == Convention::kCompressedNVFP4) {
    const bool recip = c == Convention::kCompressedNVFP4;
    const Role codes = recip ? Role::kWeightPacked : Role::kWeight;
    const Role global = recip ? Role::kWeightGlobalScale : Role::kWeightScale2;
    STRATA_RETURN_IF_ERROR(want(codes, dtypes::UInt8(), "U8"));
    STRATA_RETURN_IF_ERROR(
        want(Role::kWeightScale, dtypes::Float8E4M3FN(), "F8_E4M3"));
    STRATA_RETURN_IF_ERROR(want(global, dtypes::Float32(), "F32"));
    const Member& w = Get(m, codes);
    const Member& s = Get(m, Role::kWeightScale);
    int64_t k = 0;
    if (!leading_equal(w.shape, s.shape) ||
        !CheckedMul(w.shape.back(), 2, &k) || s.shape.back() > INT64_MAX / 16 ||
        s.shape.back() * 16 != k) {
      return refuse(
          absl::StrCat("codes of shape (...,N,K/2) need block scales of shape "
                       "(...,N,K/16); got ",
                       ShapeText(w.shape), " and ", ShapeText(s.shape)));
    }
    if (!ScalarShape(Get(m, global).shape)) {
      return refuse(absl::StrCat("the tensor scale ",
                                 Quoted(Get(m, global).name),
                                 " must have shape () or (1); it has ",
                                 ShapeText(Get(m, global).shape)));
    }
    plan.dtype = recip ? dtypes::NVFP4TSRecip() : dtypes::NVFP4TS();
    plan.shape = w.shape;
    plan.shape.back() = k;
    plan.blocks.assign(plan.shape.size(), 1);
    plan.blocks.back() = 16;
    plan.levels = {&w, &s, &Get(m, global)};
    return plan;
  }
  STRATA_RETURN_IF_ERROR(
      want(Role::kWeight, dtypes::Float8E4M3FN(), "F8_E4M3"));
  const Member& w = Get(m, Role::kWeight);
  plan.shape = w.shape;
  const int64_t rank = static_cast<int64_t>(w.shape.size());
  if (c == Convention::kModelOptMXFP8) {
    const Member& s = Get(m, Role::kWeightScale);
    if (!leading_equal(w.shape, s.shape) || s.shape.back() > INT64_MAX / 32 ||
        s.shape.back() * 32 != w.shape.back()) {
      return refuse(absl::StrCat(
          "values of shape (...,N,K) need scales of shape (...,N,K/32); got ",
          ShapeText(w.shape), " and ", ShapeText(s.shape)));
    }
    plan.dtype = dtypes::MXFP8E4M3();
    plan.blocks.assign(rank, 1);
    plan.blocks.back() = 32;
    plan.levels = {&w, &s};
    return plan;
  }
  if (c == Convention::kFP8Block) {
    // F32 scales (DeepSeek-V3); U8 ones are e8m0 exponents (DeepGEMM's
    // UE8M0, what WriteSafetensors writes for fp8_e4m3_block128x128_ue8m0).
    const bool ue8m0 = Get(m, Role::kWeightScaleInv).dtype == dtypes::UInt8();
    if (!ue8m0) {
      STRATA_RETURN_IF_ERROR(
          want(Role::kWeightScaleInv, dtypes::Float32(), "F32 (or U8, e8m0)"));
    }
    const Member& s = Get(m, Role::kWeightScaleInv);
    std::vector<int64_t> expected = w.shape;
    for (int64_t j = std::max<int64_t>(0, rank - 2); j < rank; ++j) {
      expected[j] = CeilDiv(w.shape[j], 128);
    }
    if (rank < 2) {
      return refuse(absl::StrCat(
          "values of shape (...,N,K) with 128x128 blocks need at least two "
          "dims; got ",
          ShapeText(w.shape), " and scales ", ShapeText(s.shape)));
    }
    if (s.shape != expected) {
      return refuse(
          absl::StrCat("values of shape (...,N,K) need scales of shape "
                       "(...,ceil(N/128),ceil(K/128)) = ",
                       ShapeText(expected), "; got ", ShapeText(w.shape),
                       " and ", ShapeText(s.shape)));
    }
    plan.dtype = ue8m0 ? dtypes::FP8E4M3Block128x128UE8M0()
                       : dtypes::FP8E4M3Block128x128();
    plan.blocks.assign(rank, 1);
    for (int64_t j = std::max<int64_t>(0, rank - 2); j < rank; ++j) {
      plan.blocks[j] = 128;
    }
    plan.levels = {&w, &s};
    return plan;
  }
  // Per tensor or per channel.
  const Member& s = Get(m, Role::kWeightScale);
  STRATA_RETURN_IF_ERROR(want(Role::kWeightScale, dtypes::Float32(), "F32"));
  plan.levels = {&w, &s};
  if (ScalarShape(s.shape)) {
    plan.dtype = dtypes::FP8E4M3Tensorwise();
    plan.blocks.assign(rank, kWholeMode);
    return plan;
  }
  std::vector<int64_t> rows(w.shape.begin(),
                            w.shape.end() - (rank > 0 ? 1 : 0));
  std::vector<int64_t> rows_one = rows;
  rows_one.push_back(1);
  if (rank == 0 || (s.shape != rows && s.shape != rows_one)) {
    return refuse(absl::StrCat(
        "values of shape (...,K) need a scale of shape () or (1) per tensor, "
        "or (...,1) or (...) per channel; got ",
        ShapeText(w.shape), " and ", ShapeText(s.shape)));
  }
  plan.dtype = dtypes::FP8E4M3Rowwise();
  plan.blocks.assign(rank, 1);
  plan.blocks.back() = kWholeMode;
  return plan;
}

absl::StatusOr<Tensor> BuildGroup(
    const GroupPlan& plan, const std::shared_ptr<const MappedRegion>& region) {
  const auto region_of =
      [&](int level) -> const std::shared_ptr<const MappedRegion>& {
    return plan.levels[level]->region != nullptr ? plan.levels[level]->region
                                                 : region;
  };
  STRATA_ASSIGN_OR_RETURN(
      RowMajorBlockScaledLayouts layouts,
      MakeRowMajorBlockScaledLayouts(plan.shape, plan.blocks));
  const auto types = plan.dtype->simple_types();
  int64_t values = 1;
  for (int64_t e : plan.shape) {
    if (!CheckedMul(values, e, &values)) values = 0;  // A zero extent.
  }
  for (int64_t e : plan.shape) {
    if (e == 0) values = 0;
  }
  std::vector<SubtensorCandidate> subtensors;
  std::vector<absl::StatusOr<Layout>> adjacent;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<MappedCarrier> codes,
                          MappedCarrier::Create(*types[0], values, region_of(0),
                                                plan.levels[0]->begin));
  subtensors.push_back({types[0], std::move(codes), 0, layouts.values});
  // The scales: as many as the grid holds (the member's count, checked).
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<MappedCarrier> scales,
      MappedCarrier::Create(*types[1], plan.levels[1]->count, region_of(1),
                            plan.levels[1]->begin));
  subtensors.push_back({types[1], std::move(scales), 0, layouts.scales});
  adjacent.push_back(std::move(layouts.adjacent));
  if (types.size() == 3) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<MappedCarrier> global,
                            MappedCarrier::Create(*types[2], 1, region_of(2),
                                                  plan.levels[2]->begin));
    STRATA_ASSIGN_OR_RETURN(Layout l2, Layout::Create(1, 0));
    subtensors.push_back({types[2], std::move(global), 0, std::move(l2)});
    adjacent.push_back(
        Layout::Create(layouts.scales.shape(),
                       layouts.scales.shape().TransformLeaves(
                           [](size_t, int64_t) { return int64_t{0}; })));
  }
  STRATA_ASSIGN_OR_RETURN(
      auto representation,
      Representation::Create(plan.dtype, std::move(subtensors),
                             std::move(adjacent)));
  return MakeTensor(std::move(representation));
}

absl::StatusOr<Tensor> BuildPair(
    const std::string& name, const Member& blocks, const Member& scales,
    const std::shared_ptr<const MappedRegion>& region) {
  const auto refuse = [&](absl::string_view message) {
    return ValueErrorCat("ReadSafetensors: MXFP4 pair ", Quoted(name), " (",
                         Quoted(blocks.name), ", ", Quoted(scales.name),
                         "): ", message);
  };
  if (blocks.dtype != dtypes::UInt8() || scales.dtype != dtypes::UInt8()) {
    return refuse(absl::StrCat(
        "the blocks and scales must be U8; got ",
        blocks.dtype != nullptr ? ToSafetensorsName(*blocks.dtype) : "?",
        " and ",
        scales.dtype != nullptr ? ToSafetensorsName(*scales.dtype) : "?"));
  }
  const std::vector<int64_t>& bs = blocks.shape;
  const std::vector<int64_t>& ss = scales.shape;
  if (!(bs.size() >= 2 && bs.back() == 16 && ss.size() + 1 == bs.size() &&
        std::equal(ss.begin(), ss.end(), bs.begin()))) {
    return refuse(
        absl::StrCat("blocks of shape (..., G, 16) need scales of shape "
                     "(..., G); got blocks ",
                     ShapeText(bs), " and scales ", ShapeText(ss)));
  }
  const int64_t rank = static_cast<int64_t>(ss.size());
  const int64_t groups = ss.back();
  int64_t n = 0;
  if (!CheckedMul(groups, 32, &n)) {
    return refuse(
        absl::StrCat("G = ", groups, " groups of 32 values overflow int64"));
  }
  // Logical extents (..., G*32) and scale extents (..., G). The products fit
  // unless a zero extent hides an overflow; both are taken in the order the
  // layouts' strides are.
  std::vector<int64_t> logical = ss;
  logical.back() = n;
  int64_t values = 1, count = 1;
  for (int64_t j = rank; j-- > 0;) {
    if (!CheckedMul(values, logical[j], &values)) {
      return refuse(absl::StrCat("the logical shape ", ShapeText(logical),
                                 " overflows int64"));
    }
  }
  for (int64_t j = 0; j < rank; ++j) {
    if (!CheckedMul(count, ss[j], &count)) {
      return refuse(
          absl::StrCat("the scale shape ", ShapeText(ss), " overflows int64"));
    }
  }
  STRATA_ASSIGN_OR_RETURN(
      BlockScaledValueLayouts value_layouts,
      MakeBlockScaledValueLayouts(logical, rank - 1, 32, ss));
  STRATA_ASSIGN_OR_RETURN(Layout l1, Layout::RowMajor(IntTuple::Flat(ss)));
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<MappedCarrier> value_carrier,
      MappedCarrier::Create(*dtypes::Float4E2M1FN(), values,
                            blocks.region != nullptr ? blocks.region : region,
                            blocks.begin));
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<MappedCarrier> scale_carrier,
      MappedCarrier::Create(*dtypes::Float8E8M0FNU(), count,
                            scales.region != nullptr ? scales.region : region,
                            scales.begin));
  std::vector<SubtensorCandidate> subtensors;
  subtensors.push_back({dtypes::Float4E2M1FN(), std::move(value_carrier), 0,
                        std::move(value_layouts.values)});
  subtensors.push_back(
      {dtypes::Float8E8M0FNU(), std::move(scale_carrier), 0, std::move(l1)});
  std::vector<absl::StatusOr<Layout>> adjacent;
  adjacent.push_back(std::move(value_layouts.adjacent));
  STRATA_ASSIGN_OR_RETURN(
      auto representation,
      Representation::Create(dtypes::MXFP4(), std::move(subtensors),
                             std::move(adjacent)));
  return MakeTensor(std::move(representation));
}

namespace {

// The members a dtype writes as: (suffix after the Tensor's name "X.weight",
// safetensors dtype) per level.
struct Written {
  const CompoundDType* dtype;
  std::vector<std::pair<const char*, const char*>> levels;
};

std::optional<Written> WrittenOf(const DType& dtype) {
  if (&dtype == dtypes::NVFP4TS()) {
    return Written{dtypes::NVFP4TS(),
                   {{"", "U8"}, {"_scale", "F8_E4M3"}, {"_scale_2", "F32"}}};
  }
  if (&dtype == dtypes::NVFP4TSRecip()) {
    return Written{
        dtypes::NVFP4TSRecip(),
        {{"_packed", "U8"}, {"_scale", "F8_E4M3"}, {"_global_scale", "F32"}}};
  }
  if (&dtype == dtypes::MXFP8E4M3()) {
    return Written{dtypes::MXFP8E4M3(), {{"", "F8_E4M3"}, {"_scale", "U8"}}};
  }
  if (&dtype == dtypes::FP8E4M3Block128x128()) {
    return Written{dtypes::FP8E4M3Block128x128(),
                   {{"", "F8_E4M3"}, {"_scale_inv", "F32"}}};
  }
  if (&dtype == dtypes::FP8E4M3Block128x128UE8M0()) {
    return Written{dtypes::FP8E4M3Block128x128UE8M0(),
                   {{"", "F8_E4M3"}, {"_scale_inv", "U8"}}};
  }
  if (&dtype == dtypes::FP8E4M3Tensorwise() ||
      &dtype == dtypes::FP8E4M3Rowwise()) {
    return Written{dtype.AsCompound(), {{"", "F8_E4M3"}, {"_scale", "F32"}}};
  }
  return std::nullopt;
}

}  // namespace

namespace {

// The blocks a convention stores a Tensor of `shape` in: along the last mode
// (nvfp4_ts*: 16, mxfp8: 32), the last two (128x128), whole (tensorwise),
// whole last (rowwise). ValueError (from `refuse`) for a last dim that the
// format's blocks do not divide.
template <typename Refuse>
absl::StatusOr<std::vector<int64_t>> StoredBlocks(
    const CompoundDType* d, absl::Span<const int64_t> shape,
    const Refuse& refuse) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> blocks(rank, 1);
  if (d == dtypes::NVFP4TS() || d == dtypes::NVFP4TSRecip() ||
      d == dtypes::MXFP8E4M3()) {
    const int64_t b = d == dtypes::MXFP8E4M3() ? 32 : 16;
    if (rank == 0 || shape.back() % b != 0) {
      return refuse(absl::StrCat("its last dim is not blocked by ", b,
                                 " (shape ", ShapeText(shape), ")"));
    }
    blocks.back() = b;
  } else if (d == dtypes::FP8E4M3Block128x128() ||
             d == dtypes::FP8E4M3Block128x128UE8M0()) {
    for (int64_t j = std::max<int64_t>(0, rank - 2); j < rank; ++j) {
      blocks[j] = 128;
    }
  } else if (d == dtypes::FP8E4M3Tensorwise()) {
    blocks.assign(rank, kWholeMode);
  } else if (rank > 0) {
    blocks.back() = kWholeMode;
  }
  return blocks;
}

// Whether `rep` is exactly what QuantizeBlockScaled and the readers build for
// `blocks`: codes and scales compact row-major from a whole byte of their
// carriers, so that the stored members are those bytes as they are.
bool IsStoredAsIs(const Representation& rep, absl::Span<const int64_t> shape,
                  absl::Span<const int64_t> blocks) {
  absl::StatusOr<RowMajorBlockScaledLayouts> layouts =
      MakeRowMajorBlockScaledLayouts(shape, blocks);
  if (!layouts.ok()) return false;
  const Subtensor& v = rep.subtensor(0);
  const Subtensor& sc = rep.subtensor(1);
  return v.placement == layouts->values && sc.placement == layouts->scales &&
         rep.adjacent_layouts()[0] == layouts->adjacent &&
         (v.offset * v.storage_dtype->bits()) % 8 == 0;
}

}  // namespace

std::optional<absl::StatusOr<std::vector<MemberSpec>>> ConventionSpecs(
    const std::string& name, const DType& dtype,
    absl::Span<const int64_t> shape) {
  const std::optional<Written> written = WrittenOf(dtype);
  if (!written) return std::nullopt;
  const auto refuse = [&](absl::string_view problem) {
    return ValueErrorCat("WriteSafetensors: tensor ", Quoted(name), " (",
                         dtype.name(), "): ", problem);
  };
  const auto parsed = ParseMemberName(name);
  if (!parsed || parsed->second != Role::kWeight) {
    return refuse(
        "a block-scaled Tensor writes as its convention's members X.weight, "
        "X.weight_scale, ...: its name must end in \"weight\" (\"X.weight\")");
  }
  const CompoundDType* d = written->dtype;
  absl::StatusOr<std::vector<int64_t>> blocks = StoredBlocks(d, shape, refuse);
  if (!blocks.ok()) return blocks.status();
  const int64_t rank = static_cast<int64_t>(shape.size());
  const BlockGrid grid = MakeBlockGrid(shape, *blocks);
  const auto types = d->simple_types();
  int64_t values = 1;
  for (int64_t e : shape) values *= e;  // Fits: a Tensor's size.
  std::vector<MemberSpec> out;
  std::vector<int64_t> value_shape(shape.begin(), shape.end());
  const int value_bits = types[0]->bits();
  if (value_bits == 4) value_shape.back() /= 2;  // K/2 bytes of U8.
  out.push_back({name + written->levels[0].first, written->levels[0].second,
                 std::move(value_shape), (values * value_bits + 7) / 8});
  std::vector<int64_t> scale_shape = grid.count;
  // One scale for the Tensor is written (): per tensor. A rowwise Tensor of
  // rank <= 1 has one row, the same value, and reads back as tensorwise.
  if (d == dtypes::FP8E4M3Tensorwise() || rank <= 1) scale_shape.clear();
  out.push_back({name + written->levels[1].first, written->levels[1].second,
                 std::move(scale_shape), grid.size * (types[1]->bits() / 8)});
  if (types.size() == 3) {
    out.push_back(
        {name + written->levels[2].first, written->levels[2].second, {}, 4});
  }
  return out;
}

std::optional<absl::StatusOr<std::vector<WrittenMember>>> ConventionMembers(
    const std::string& name, const Tensor& tensor) {
  const std::vector<int64_t> shape = tensor.shape();
  std::optional<absl::StatusOr<std::vector<MemberSpec>>> specs =
      ConventionSpecs(name, tensor.dtype(), shape);
  if (!specs) return std::nullopt;
  if (!specs->ok()) return specs->status();
  const auto refuse = [&](absl::string_view problem) {
    return ValueErrorCat("WriteSafetensors: tensor ", Quoted(name), " (",
                         tensor.dtype().name(), "): ", problem);
  };
  const Representation& rep = TensorAccess::representation(tensor);
  for (const Subtensor& s : rep.subtensors()) {
    if (s.carrier->data() == nullptr && s.placement.size() > 0) {
      return refuse(
          absl::StrCat("the ", s.carrier->Describe(), " holds no host data"));
    }
  }
  const CompoundDType* d = tensor.dtype().AsCompound();
  const std::vector<int64_t> blocks = *StoredBlocks(d, shape, refuse);
  const int64_t rank = static_cast<int64_t>(shape.size());
  const BlockGrid grid = MakeBlockGrid(shape, blocks);
  const int64_t total = tensor.size();
  const Subtensor& v = rep.subtensor(0);
  const Subtensor& sc = rep.subtensor(1);
  const Layout& s0 = rep.adjacent_layouts()[0];
  const int value_bits = v.storage_dtype->bits();
  const int scale_bytes = sc.storage_dtype->bits() / 8;
  std::vector<MemberSpec>& spec = **specs;
  std::string value_bytes(spec[0].bytes, '\0');
  std::string scale_out(spec[1].bytes, '\0');
  const auto* vsrc = static_cast<const uint8_t*>(v.carrier->data());
  const auto* ssrc = static_cast<const uint8_t*>(sc.carrier->data());
  if (IsStoredAsIs(rep, shape, blocks)) {
    // Compact row-major codes and scales (a quantizer's output, a reader's
    // Tensor): the members are their bytes.
    if (!value_bytes.empty()) {
      std::memcpy(value_bytes.data(), vsrc + v.offset * value_bits / 8,
                  value_bytes.size());
    }
    if (!scale_out.empty()) {
      std::memcpy(scale_out.data(), ssrc + sc.offset * scale_bytes,
                  scale_out.size());
    }
  } else {
    std::vector<int64_t> scale_of_block(grid.size, -1);
    const auto l0_modes = TopLevelModes(v.placement);
    const auto s0_modes = TopLevelModes(s0);
    auto* vdst = reinterpret_cast<uint8_t*>(value_bytes.data());
    std::vector<int64_t> coord(rank, 0);
    for (int64_t r = 0; r < total; ++r) {
      int64_t iv = 0, is = 0, g = 0;
      for (int64_t j = 0; j < rank; ++j) {
        iv += l0_modes[j](coord[j]);
        is += s0_modes[j](coord[j]);
        g += coord[j] / grid.block[j] * grid.stride[j];
      }
      if (value_bits == 8) {
        vdst[r] = vsrc[v.offset + iv];
      } else {
        WritePacked(vdst, value_bits, r,
                    ReadPacked(vsrc, value_bits, v.offset + iv));
      }
      const int64_t scale_index = sc.offset + sc.placement(is);
      if (scale_of_block[g] < 0) {
        scale_of_block[g] = scale_index;
        std::memcpy(scale_out.data() + g * scale_bytes,
                    ssrc + scale_index * scale_bytes, scale_bytes);
      } else if (scale_of_block[g] != scale_index) {
        return refuse(absl::StrCat(
            "it is not blocked as its convention stores it (blocks ",
            absl::StrJoin(blocks, "x",
                          [](std::string* out, int64_t b) {
                            absl::StrAppend(out, b == kWholeMode
                                                     ? std::string("whole")
                                                     : absl::StrCat(b));
                          }),
            " of shape ", ShapeText(shape), "): values of one block reach ",
            "different scales"));
      }
      for (int64_t j = rank; j-- > 0;) {
        if (++coord[j] < shape[j]) break;
        coord[j] = 0;
      }
    }
  }
  std::vector<WrittenMember> out;
  out.push_back({std::move(spec[0].name), spec[0].dtype,
                 std::move(spec[0].shape), std::move(value_bytes)});
  out.push_back({std::move(spec[1].name), spec[1].dtype,
                 std::move(spec[1].shape), std::move(scale_out)});
  if (rep.num_levels() == 3) {
    const Subtensor& t = rep.subtensor(2);
    const int64_t i1 = s0.size() > 0 ? s0(0) : 0;
    const int64_t i2 = rep.adjacent_layouts()[1](i1);
    std::string global(4, '\0');
    std::memcpy(global.data(),
                static_cast<const uint8_t*>(t.carrier->data()) +
                    4 * (t.offset + t.placement(i2)),
                4);
    out.push_back({std::move(spec[2].name), spec[2].dtype,
                   std::move(spec[2].shape), std::move(global)});
  }
  return out;
}

}  // namespace checkpoint_internal
}  // namespace strata
