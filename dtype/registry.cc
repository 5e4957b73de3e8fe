#include "dtype/registry.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/errors.h"
#include "dtype/block_scale_rule.h"

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
#undef STRATA_SIMPLE_DTYPE

// The OCP MX and NVFP4 formats, each with its block-scaling rule
// (NOTE [ The block-scaling rule ] in block_scale_rule.h).
const CompoundDType* MXFP8E4M3() {
  static const CompoundDType* dtype =
      *CompoundDType::Create("mxfp8_e4m3", {Float8E4M3FN(), Float8E8M0FNU()},
                             {std::make_shared<BlockScaleRule>(32)});
  return dtype;
}
const CompoundDType* MXFP4() {
  static const CompoundDType* dtype =
      *CompoundDType::Create("mxfp4", {Float4E2M1FN(), Float8E8M0FNU()},
                             {std::make_shared<BlockScaleRule>(32)});
  return dtype;
}
const CompoundDType* NVFP4() {
  static const CompoundDType* dtype =
      *CompoundDType::Create("nvfp4", {Float4E2M1FN(), Float8E4M3FN()},
                             {std::make_shared<BlockScaleRule>(16)});
  return dtype;
}

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
  for (const DType* d : std::initializer_list<const DType*>{
           dtypes::Bool(),          dtypes::Int8(),
           dtypes::Int16(),         dtypes::Int32(),
           dtypes::Int64(),         dtypes::UInt8(),
           dtypes::Float16(),       dtypes::BFloat16(),
           dtypes::Float32(),       dtypes::Float64(),
           dtypes::Float8E4M3FN(),  dtypes::Float8E5M2(),
           dtypes::Float8E8M0FNU(), dtypes::Float4E2M1FN(),
           dtypes::MXFP8E4M3(),     dtypes::MXFP4(),
           dtypes::NVFP4(),         dtypes::Any(),
           dtypes::Floating(),      dtypes::Integer()}) {
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
