// dtype descriptors: SimpleDType, CompoundDType and DTypeCategory.
//
// NOTE [ DType identity and lifetime ]
// Descriptors are immutable and compared by identity (address), as the spec
// requires: a second descriptor named "float32" is a different dtype from the
// built-in one. Every descriptor lives for the whole process (like Python's
// dtype singletons): the factories below intern them in a process-lifetime
// arena, so a `const DType*` held by a carrier or a representation can never
// dangle. Descriptors are few, so this costs nothing.
#ifndef STRATA_DTYPE_DTYPE_H_
#define STRATA_DTYPE_DTYPE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "dtype/representation_rule.h"
#include "dtype/scalar_type.h"

namespace strata {

class SimpleDType;
class CompoundDType;
class DTypeCategory;

class DType {
 public:
  enum class Kind { kSimple, kCompound, kCategory };

  DType(const DType&) = delete;
  DType& operator=(const DType&) = delete;
  virtual ~DType() = default;

  const std::string& name() const { return name_; }
  Kind kind() const { return kind_; }

  // Downcasts; nullptr when the descriptor is of another kind.
  const SimpleDType* AsSimple() const;
  const CompoundDType* AsCompound() const;
  const DTypeCategory* AsCategory() const;

  // The ordered storage schema (D_0, ..., D_(n-1)): {this} for a simple dtype,
  // the simple_types of a compound; empty for a category, which has none.
  absl::Span<const SimpleDType* const> storage_schema() const {
    return storage_schema_;
  }
  bool has_storage_schema() const { return !storage_schema_.empty(); }

  // "simple", "compound" or "category".
  absl::string_view kind_name() const;

 protected:
  DType(std::string name, Kind kind) : name_(std::move(name)), kind_(kind) {}
  std::vector<const SimpleDType*> storage_schema_;

 private:
  std::string name_;
  Kind kind_;
};

// What the values of a simple dtype are.
enum class NumericClass { kBool, kInteger, kFloating };

class SimpleDType final : public DType {
 public:
  struct Spec {
    std::string name;
    // Storage bits per value: 1, 2 or 4 (packed into bytes), or a multiple
    // of 8 up to 64.
    int bits = 0;
    NumericClass numeric_class = NumericClass::kFloating;
    bool is_signed = true;
    // Floating formats: exponent and explicit mantissa bits (0 for others).
    int exponent_bits = 0;
    int mantissa_bits = 0;
  };

  // A new, unregistered descriptor. Errors (ValueError): empty name, a width
  // other than 1, 2, 4, 8, 16, ..., 64 bits, exponent/mantissa bits that do
  // not fit. (Kernels handle only the built-in descriptors:
  // NOTE [ One dtype switch ].)
  static absl::StatusOr<const SimpleDType*> Create(Spec spec);

  int bits() const { return spec_.bits; }
  NumericClass numeric_class() const { return spec_.numeric_class; }
  bool is_signed() const { return spec_.is_signed; }
  bool is_floating() const {
    return spec_.numeric_class == NumericClass::kFloating;
  }
  bool is_integer() const {
    return spec_.numeric_class == NumericClass::kInteger;
  }
  bool is_bool() const { return spec_.numeric_class == NumericClass::kBool; }
  int exponent_bits() const { return spec_.exponent_bits; }
  int mantissa_bits() const { return spec_.mantissa_bits; }

  // The built-in dtype this descriptor is, or nullopt for a descriptor made by
  // Create (NOTE [ One dtype switch ]).
  std::optional<ScalarType> scalar_type() const { return scalar_type_; }

 private:
  friend class BuiltinDTypes;  // dtype/registry.cc makes the built-ins.
  SimpleDType(Spec spec, std::optional<ScalarType> scalar_type);
  static absl::StatusOr<const SimpleDType*> CreateImpl(
      Spec spec, std::optional<ScalarType> scalar_type);
  Spec spec_;
  std::optional<ScalarType> scalar_type_;
};

class CompoundDType final : public DType {
 public:
  // A new, unregistered descriptor whose storage schema is `simple_types`, in
  // order, and whose representation rules run in `rules` order after universal
  // validation. Errors (ValueError): empty name, no simple types, a null simple
  // type or rule.
  static absl::StatusOr<const CompoundDType*> Create(
      std::string name, std::vector<const SimpleDType*> simple_types,
      std::vector<std::shared_ptr<const RepresentationRule>> rules = {});

  absl::Span<const SimpleDType* const> simple_types() const {
    return storage_schema_;
  }
  absl::Span<const std::shared_ptr<const RepresentationRule>> rules() const {
    return rules_;
  }

 private:
  CompoundDType(std::string name, std::vector<const SimpleDType*> simple_types,
                std::vector<std::shared_ptr<const RepresentationRule>> rules);
  std::vector<std::shared_ptr<const RepresentationRule>> rules_;
};

class DTypeCategory final : public DType {
 public:
  using Predicate = std::function<bool(const DType&)>;

  // A new, unregistered category of the dtypes for which `contains` is true.
  // Errors (ValueError): empty name or no predicate.
  static absl::StatusOr<const DTypeCategory*> Create(std::string name,
                                                     Predicate contains);

  bool Contains(const DType& dtype) const { return contains_(dtype); }

 private:
  DTypeCategory(std::string name, Predicate contains);
  Predicate contains_;
};

// The storage schema of `dtype` (see DType::storage_schema).
// Errors (ValueError): the dtype provides no Tensor storage schema (a
// category).
absl::StatusOr<absl::Span<const SimpleDType* const>> StorageSchema(
    const DType& dtype);

// The ScalarType of a built-in simple dtype, for an operation that touches
// values (NOTE [ One dtype switch ]). Errors (TypeError, prefixed by `op`):
// `dtype` is compound or a category, or a simple descriptor that a user
// created (Strata's kernels handle the built-in dtypes only).
absl::StatusOr<ScalarType> RequireScalarType(const DType& dtype,
                                             absl::string_view op);

// Inline: Tensor::Create and every view ask, and a call costs more than the
// test.
inline const SimpleDType* DType::AsSimple() const {
  return kind_ == Kind::kSimple ? static_cast<const SimpleDType*>(this)
                                : nullptr;
}
inline const CompoundDType* DType::AsCompound() const {
  return kind_ == Kind::kCompound ? static_cast<const CompoundDType*>(this)
                                  : nullptr;
}

}  // namespace strata

#endif  // STRATA_DTYPE_DTYPE_H_
