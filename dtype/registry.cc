#include "dtype/registry.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "dtype/block_scale_rule.h"
#include "util/errors.h"

namespace strata {

struct DTypeRegistry::State {
  mutable std::mutex mu;
  absl::flat_hash_map<std::string, const DType*> by_name;
  std::vector<std::string> order;
};

// The one door through which built-in descriptors get their ScalarType.
class BuiltinDTypes {
 public:
  static const SimpleDType* Make(SimpleDType::Spec spec, ScalarType type) {
    // Built-in specs are valid, so CreateImpl cannot fail.
    return SimpleDType::CreateImpl(std::move(spec), type).value();
  }
};

namespace dtypes {

#define STRATA_SIMPLE_DTYPE(fn, ...)                                           \
  const SimpleDType* fn() {                                                    \
    static const SimpleDType* dtype =                                          \
        BuiltinDTypes::Make(SimpleDType::Spec __VA_ARGS__, ScalarType::k##fn); \
    return dtype;                                                              \
  }

using NC = NumericClass;
STRATA_SIMPLE_DTYPE(Bool, {"bool", 8, NC::kBool, false})
STRATA_SIMPLE_DTYPE(Int8, {"int8", 8, NC::kInteger, true})
STRATA_SIMPLE_DTYPE(Int16, {"int16", 16, NC::kInteger, true})
STRATA_SIMPLE_DTYPE(Int32, {"int32", 32, NC::kInteger, true})
STRATA_SIMPLE_DTYPE(Int64, {"int64", 64, NC::kInteger, true})
STRATA_SIMPLE_DTYPE(UInt8, {"uint8", 8, NC::kInteger, false})
STRATA_SIMPLE_DTYPE(Float16, {"float16", 16, NC::kFloating, true, 5, 10})
STRATA_SIMPLE_DTYPE(BFloat16, {"bfloat16", 16, NC::kFloating, true, 8, 7})
STRATA_SIMPLE_DTYPE(Float32, {"float32", 32, NC::kFloating, true, 8, 23})
STRATA_SIMPLE_DTYPE(Float64, {"float64", 64, NC::kFloating, true, 11, 52})
STRATA_SIMPLE_DTYPE(Float8E4M3FN,
                    {"float8_e4m3fn", 8, NC::kFloating, true, 4, 3})
STRATA_SIMPLE_DTYPE(Float8E5M2, {"float8_e5m2", 8, NC::kFloating, true, 5, 2})
STRATA_SIMPLE_DTYPE(Float8E8M0FNU,
                    {"float8_e8m0fnu", 8, NC::kFloating, false, 8, 0})
STRATA_SIMPLE_DTYPE(Float4E2M1FN,
                    {"float4_e2m1fn", 4, NC::kFloating, true, 2, 1})
STRATA_SIMPLE_DTYPE(UInt4, {"uint4", 4, NC::kInteger, false})
#undef STRATA_SIMPLE_DTYPE

// The block-scaled family (NOTE [ The block-scaling rule ] in
// block_scale_rule.h; ../shared/design/formats.md section 1), each made by
// the one public factory.
#define STRATA_BLOCK_SCALED_DTYPE(fn, name, element, scales, ...) \
  const CompoundDType* fn() {                                     \
    static const CompoundDType* dtype = *MakeBlockScaledDType(    \
        name, element, scales, BlockScaling __VA_ARGS__);         \
    return dtype;                                                 \
  }
using Scales = std::vector<const SimpleDType*>;
constexpr bool kRagged = true;
constexpr bool kChosen = true;
STRATA_BLOCK_SCALED_DTYPE(MXFP8E4M3, "mxfp8_e4m3", Float8E4M3FN(),
                          (Scales{Float8E8M0FNU()}),
                          {{32}, 1, !kRagged, kChosen})
STRATA_BLOCK_SCALED_DTYPE(MXFP4, "mxfp4", Float4E2M1FN(),
                          (Scales{Float8E8M0FNU()}),
                          {{32}, 1, !kRagged, kChosen})
STRATA_BLOCK_SCALED_DTYPE(NVFP4, "nvfp4", Float4E2M1FN(),
                          (Scales{Float8E4M3FN()}),
                          {{16}, 1, !kRagged, kChosen})
STRATA_BLOCK_SCALED_DTYPE(NVFP4TS, "nvfp4_ts", Float4E2M1FN(),
                          (Scales{Float8E4M3FN(), Float32()}),
                          {{16}, 1, !kRagged, kChosen})
STRATA_BLOCK_SCALED_DTYPE(NVFP4TSRecip, "nvfp4_ts_recip", Float4E2M1FN(),
                          (Scales{Float8E4M3FN(), Float32()}),
                          {{16}, 1, !kRagged, kChosen})
STRATA_BLOCK_SCALED_DTYPE(FP8E4M3Tensorwise, "fp8_e4m3_tensorwise",
                          Float8E4M3FN(), (Scales{Float32()}),
                          {{}, kWholeMode, !kRagged, !kChosen})
STRATA_BLOCK_SCALED_DTYPE(FP8E4M3Rowwise, "fp8_e4m3_rowwise", Float8E4M3FN(),
                          (Scales{Float32()}),
                          {{kWholeMode}, 1, !kRagged, !kChosen})
STRATA_BLOCK_SCALED_DTYPE(FP8E4M3Block1x128, "fp8_e4m3_block1x128",
                          Float8E4M3FN(), (Scales{Float32()}),
                          {{128}, 1, kRagged, kChosen})
STRATA_BLOCK_SCALED_DTYPE(FP8E4M3Block128x128, "fp8_e4m3_block128x128",
                          Float8E4M3FN(), (Scales{Float32()}),
                          {{128, 128}, 1, kRagged, !kChosen})
STRATA_BLOCK_SCALED_DTYPE(Q8_0, "q8_0", Int8(), (Scales{Float16()}),
                          {{32}, 1, !kRagged, !kChosen})
STRATA_BLOCK_SCALED_DTYPE(Q4_0, "q4_0", UInt4(), (Scales{Float16()}),
                          {{32}, 1, !kRagged, !kChosen})
// DeepGEMM's UE8M0 scales for Blackwell (values.md section 2).
STRATA_BLOCK_SCALED_DTYPE(FP8E4M3Block128x128UE8M0,
                          "fp8_e4m3_block128x128_ue8m0", Float8E4M3FN(),
                          (Scales{Float8E8M0FNU()}),
                          {{128, 128}, 1, kRagged, !kChosen})
#undef STRATA_BLOCK_SCALED_DTYPE

const DTypeCategory* Any() {
  static const DTypeCategory* dtype =
      *DTypeCategory::Create("Any", [](const DType&) { return true; });
  return dtype;
}
const DTypeCategory* Floating() {
  static const DTypeCategory* dtype =
      *DTypeCategory::Create("Floating", [](const DType& d) {
        if (const SimpleDType* s = d.AsSimple()) return s->is_floating();
        if (const CompoundDType* c = d.AsCompound()) {
          return c->simple_types()[0]->is_floating();
        }
        return false;
      });
  return dtype;
}
const DTypeCategory* Integer() {
  static const DTypeCategory* dtype =
      *DTypeCategory::Create("Integer", [](const DType& d) {
        const SimpleDType* s = d.AsSimple();
        return s != nullptr && s->is_integer();
      });
  return dtype;
}

}  // namespace dtypes

DTypeRegistry::DTypeRegistry() : state_(new State) {
  for (const DType* d :
       std::initializer_list<const DType*>{dtypes::Bool(),
                                           dtypes::Int8(),
                                           dtypes::Int16(),
                                           dtypes::Int32(),
                                           dtypes::Int64(),
                                           dtypes::UInt8(),
                                           dtypes::Float16(),
                                           dtypes::BFloat16(),
                                           dtypes::Float32(),
                                           dtypes::Float64(),
                                           dtypes::Float8E4M3FN(),
                                           dtypes::Float8E5M2(),
                                           dtypes::Float8E8M0FNU(),
                                           dtypes::Float4E2M1FN(),
                                           dtypes::UInt4(),
                                           dtypes::MXFP8E4M3(),
                                           dtypes::MXFP4(),
                                           dtypes::NVFP4(),
                                           dtypes::NVFP4TS(),
                                           dtypes::NVFP4TSRecip(),
                                           dtypes::FP8E4M3Tensorwise(),
                                           dtypes::FP8E4M3Rowwise(),
                                           dtypes::FP8E4M3Block1x128(),
                                           dtypes::FP8E4M3Block128x128(),
                                           dtypes::FP8E4M3Block128x128UE8M0(),
                                           dtypes::Q8_0(),
                                           dtypes::Q4_0(),
                                           dtypes::Any(),
                                           dtypes::Floating(),
                                           dtypes::Integer()}) {
    state_->by_name.emplace(d->name(), d);
    state_->order.push_back(d->name());
  }
}

DTypeRegistry& DTypeRegistry::Global() {
  static DTypeRegistry* registry = new DTypeRegistry;
  return *registry;
}

absl::StatusOr<const DType*> DTypeRegistry::Lookup(
    absl::string_view name) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->by_name.find(name);
  if (it == state_->by_name.end()) {
    return ValueErrorCat("unknown dtype \"", name.substr(0, 80), "\"");
  }
  return it->second;
}

absl::Status DTypeRegistry::Register(const DType* dtype) {
  if (dtype == nullptr) return ValueError("cannot register a null dtype");
  std::lock_guard<std::mutex> lock(state_->mu);
  auto [it, inserted] = state_->by_name.emplace(dtype->name(), dtype);
  if (!inserted) {
    return ValueErrorCat("dtype name \"", dtype->name(),
                         "\" is already registered (as a ",
                         it->second->kind_name(), " dtype)");
  }
  state_->order.push_back(dtype->name());
  return absl::OkStatus();
}

std::vector<std::string> DTypeRegistry::Names() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->order;
}

}  // namespace strata
