#include "dtype/dtype.h"

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "util/errors.h"

namespace strata {
namespace {

// Descriptors are interned for the process
// (NOTE [ DType identity and lifetime ] in dtype.h).
template <typename T>
const T* Intern(std::unique_ptr<T> dtype) {
  static std::mutex* mu = new std::mutex;
  static auto* arena = new std::vector<std::unique_ptr<DType>>;
  const T* raw = dtype.get();
  std::lock_guard<std::mutex> lock(*mu);
  arena->push_back(std::move(dtype));
  return raw;
}

}  // namespace

const DTypeCategory* DType::AsCategory() const {
  return kind_ == Kind::kCategory ? static_cast<const DTypeCategory*>(this)
                                  : nullptr;
}

absl::string_view DType::kind_name() const {
  switch (kind_) {
    case Kind::kSimple:
      return "simple";
    case Kind::kCompound:
      return "compound";
    case Kind::kCategory:
      return "category";
  }
  return "";
}

SimpleDType::SimpleDType(Spec spec, std::optional<ScalarType> scalar_type)
    : DType(spec.name, Kind::kSimple),
      spec_(std::move(spec)),
      scalar_type_(scalar_type) {
  storage_schema_ = {this};
}

absl::StatusOr<const SimpleDType*> SimpleDType::Create(Spec spec) {
  return CreateImpl(std::move(spec), std::nullopt);
}

absl::StatusOr<const SimpleDType*> SimpleDType::CreateImpl(
    Spec spec, std::optional<ScalarType> scalar_type) {
  if (spec.name.empty()) return ValueError("a dtype needs a non-empty name");
  if (spec.bits < 1 || spec.bits > 64 ||
      (spec.bits < 8 && 8 % spec.bits != 0) ||
      (spec.bits > 8 && spec.bits % 8 != 0)) {
    return ValueErrorCat(
        "dtype ", spec.name, ": ", spec.bits,
        " bits per value is not a storable width (1, 2, 4, or a "
        "multiple of 8 up to 64)");
  }
  if (spec.exponent_bits < 0 || spec.mantissa_bits < 0 ||
      spec.exponent_bits + spec.mantissa_bits + (spec.is_signed ? 1 : 0) >
          spec.bits) {
    return ValueErrorCat("dtype ", spec.name, ": exponent ", spec.exponent_bits,
                         " and mantissa ", spec.mantissa_bits,
                         " bits do not fit in ", spec.bits, " bits");
  }
  return Intern(std::unique_ptr<SimpleDType>(
      new SimpleDType(std::move(spec), scalar_type)));
}

CompoundDType::CompoundDType(
    std::string name, std::vector<const SimpleDType*> simple_types,
    std::vector<std::shared_ptr<const RepresentationRule>> rules)
    : DType(std::move(name), Kind::kCompound), rules_(std::move(rules)) {
  storage_schema_ = std::move(simple_types);
}

absl::StatusOr<const CompoundDType*> CompoundDType::Create(
    std::string name, std::vector<const SimpleDType*> simple_types,
    std::vector<std::shared_ptr<const RepresentationRule>> rules) {
  if (name.empty()) return ValueError("a dtype needs a non-empty name");
  if (simple_types.empty()) {
    return ValueErrorCat("compound dtype ", name,
                         " needs at least one simple type");
  }
  for (size_t i = 0; i < simple_types.size(); ++i) {
    if (simple_types[i] == nullptr) {
      return ValueErrorCat("compound dtype ", name, ": simple type ", i,
                           " is null");
    }
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i] == nullptr) {
      return ValueErrorCat("compound dtype ", name, ": rule ", i, " is null");
    }
  }
  return Intern(std::unique_ptr<CompoundDType>(new CompoundDType(
      std::move(name), std::move(simple_types), std::move(rules))));
}

DTypeCategory::DTypeCategory(std::string name, Predicate contains)
    : DType(std::move(name), Kind::kCategory), contains_(std::move(contains)) {}

absl::StatusOr<const DTypeCategory*> DTypeCategory::Create(std::string name,
                                                           Predicate contains) {
  if (name.empty())
    return ValueError("a dtype category needs a non-empty name");
  if (!contains) {
    return ValueErrorCat("dtype category ", name, " needs a predicate");
  }
  return Intern(std::unique_ptr<DTypeCategory>(
      new DTypeCategory(std::move(name), std::move(contains))));
}

absl::StatusOr<absl::Span<const SimpleDType* const>> StorageSchema(
    const DType& dtype) {
  if (!dtype.has_storage_schema()) {
    return ValueErrorCat("logical dtype ", dtype.name(), " is a ",
                         dtype.kind_name(),
                         " and has no Tensor storage schema");
  }
  return dtype.storage_schema();
}

absl::StatusOr<ScalarType> RequireScalarType(const DType& dtype,
                                             absl::string_view op) {
  const SimpleDType* simple = dtype.AsSimple();
  if (simple == nullptr) {
    return TypeErrorCat(op, ": dtype ", dtype.name(), " is a ",
                        dtype.kind_name(),
                        " dtype; this operation needs a simple one");
  }
  if (!simple->scalar_type().has_value()) {
    return TypeErrorCat(
        op, ": dtype ", dtype.name(), " (", simple->bits(), "-bit ",
        simple->is_floating()  ? "floating"
        : simple->is_integer() ? "integer"
                               : "bool",
        ") is a user-created descriptor; Strata's kernels handle only the "
        "built-in dtypes (views and dumps accept every dtype)");
  }
  return *simple->scalar_type();
}

}  // namespace strata
