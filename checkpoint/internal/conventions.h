// NOTE [ Checkpoint conventions ]
// ../shared/design/formats.md section 3: groups of safetensors entries that
// mean one block-scaled Tensor, recognised by names and dtypes in the header
// alone. For a layer X, the members are named X.weight, X.weight_scale,
// X.weight_scale_2, X.weight_packed, X.weight_global_scale and
// X.weight_scale_inv; the group imports as ONE Tensor named X.weight, every
// level over a read-only mapped region of the file:
//
// clang-format off
//   members present                      convention                dtype
//   weight_scale_2                       ModelOpt NVFP4            nvfp4_ts
//     weight U8 (...,N,K/2), weight_scale F8_E4M3 (...,N,K/16),
//     weight_scale_2 F32 () or (1)
//   weight_packed or weight_global_scale compressed-tensors NVFP4  nvfp4_ts_recip
//     weight_packed U8 (...,N,K/2), weight_scale F8_E4M3 (...,N,K/16),
//     weight_global_scale F32 () or (1)
//   weight_scale_inv                     FP8 block (DeepSeek-V3)   fp8_e4m3_block128x128
//     weight F8_E4M3 (...,N,K), weight_scale_inv F32 (...,ceil(N/128),ceil(K/128))
//     the same with weight_scale_inv U8 (e8m0)                    fp8_e4m3_block128x128_ue8m0
//   weight and weight_scale, scale U8    ModelOpt MXFP8            mxfp8_e4m3
//     weight F8_E4M3 (...,N,K), weight_scale U8 (...,N,K/32)
//   weight and weight_scale, scale F32   FP8 per tensor / channel  fp8_e4m3_tensorwise
//     weight F8_E4M3 (...,K), weight_scale F32 () or (1)           / _rowwise
//     / (...,1) or (...)
// clang-format on
//
// Any member of the first four rows, or a weight beside a weight_scale, makes
// the names a group: a group whose members are missing, of other dtypes or of
// other shapes is a ValueError for X.weight (never plain byte Tensors); a
// lone X.weight, or a lone scale, is a plain Tensor. fp4 codes are packed low
// nibble first; the layouts are MakeRowMajorBlockScaledLayouts' (blocks along
// the last mode or modes; the 128x128 blocks ragged, NOTE [ Ragged blocks ]),
// and the tensor scale of nvfp4_ts* is level 2, L_2 = 1:0, S_1 = 0 on L_1's
// shape. Leading (expert) modes are allowed wherever the table shows (N, K).
// WriteSafetensors writes each of these dtypes back as its convention, and
// write -> read -> write gives identical bytes.
#ifndef STRATA_CHECKPOINT_INTERNAL_CONVENTIONS_H_
#define STRATA_CHECKPOINT_INTERNAL_CONVENTIONS_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "carrier/mapped_carrier.h"
#include "core/tensor.h"
#include "dtype/dtype.h"

namespace strata {
namespace checkpoint_internal {

enum class Role : int {
  kWeight,
  kWeightScale,
  kWeightScale2,
  kWeightPacked,
  kWeightGlobalScale,
  kWeightScaleInv,
};
inline constexpr int kNumRoles = 6;

// "X.weight_scale" -> ("X.weight", kWeightScale); nullopt for a name that is
// no member.
std::optional<std::pair<std::string, Role>> ParseMemberName(
    absl::string_view name);

// One member as the header describes it, checked on its own.
struct Member {
  std::string name;
  const SimpleDType* dtype = nullptr;
  std::vector<int64_t> shape;
  int64_t count = 0;  // Values.
  int64_t begin = 0;  // Byte of the data buffer holding value 0.
  // The member's own region, for a group formed across the shards of a
  // directory (checkpoint/directory.h); null: the region BuildGroup is given.
  std::shared_ptr<const MappedRegion> region;
};
using Members = std::array<const Member*, kNumRoles>;

// Whether the members present (non-null) make a group.
bool FormsGroup(const Members& members);

// A group checked against its convention, before anything is mapped.
struct GroupPlan {
  std::string name;
  const CompoundDType* dtype = nullptr;
  std::vector<int64_t> shape;         // Logical.
  std::vector<int64_t> blocks;        // Per mode (kWholeMode for whole).
  std::vector<const Member*> levels;  // The member of each level.
};

// ValueError naming the group, the convention and the member otherwise.
absl::StatusOr<GroupPlan> PlanGroup(const std::string& name,
                                    const Members& members);

// The Tensor of a planned group over `region` (the data buffer), or over
// each member's own region where it has one.
absl::StatusOr<Tensor> BuildGroup(
    const GroupPlan& plan, const std::shared_ptr<const MappedRegion>& region);

// The mxfp4 Tensor `name` of an MXFP4 pair (NOTE [ MXFP4 pairs ] in
// checkpoint/safetensors.h) from its halves, checked as U8 (..., G, 16) and
// U8 (..., G) -- each over its own region where it has one (a pair split
// across the shards of a directory), else over `region`. ValueError
// "ReadSafetensors: MXFP4 pair "P" ("P.blocks", "P.scales"): ..." otherwise.
absl::StatusOr<Tensor> BuildPair(
    const std::string& name, const Member& blocks, const Member& scales,
    const std::shared_ptr<const MappedRegion>& region);

// What WriteSafetensors writes for a Tensor of a convention's dtype and
// `shape` named `name`, known before its values: each member's name,
// safetensors dtype, shape and byte count, in order. nullopt for a dtype no
// convention writes; a ValueError (naming `name`) for a name that does not
// end in "weight" or a last dim the format's blocks do not divide.
struct MemberSpec {
  std::string name;
  absl::string_view dtype;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
};
std::optional<absl::StatusOr<std::vector<MemberSpec>>> ConventionSpecs(
    const std::string& name, const DType& dtype,
    absl::Span<const int64_t> shape);

// The members themselves, in ConventionSpecs' order, each with its bytes.
struct WrittenMember {
  std::string name;
  absl::string_view dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};
// nullopt for a dtype no convention writes; a ValueError (naming `name`) for
// a Tensor of such a dtype that is not blocked as its convention stores it
// (the blocks along the last mode or modes, in order) or whose carriers hold
// no host data.
std::optional<absl::StatusOr<std::vector<WrittenMember>>> ConventionMembers(
    const std::string& name, const Tensor& tensor);

}  // namespace checkpoint_internal
}  // namespace strata

#endif  // STRATA_CHECKPOINT_INTERNAL_CONVENTIONS_H_
