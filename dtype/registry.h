// The dtype registry: built-in descriptors by name, plus registered extensions.
//
// Built-ins (shared/design/architecture.md, "Registered names") are
// process-lifetime singletons, reachable by accessor (dtypes::Float32()) and by
// name.
#ifndef STRATA_DTYPE_REGISTRY_H_
#define STRATA_DTYPE_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dtype/dtype.h"

namespace strata {

class DTypeRegistry {
 public:
  // The process-wide registry, holding the built-ins. Thread-safe.
  static DTypeRegistry& Global();

  // Errors (ValueError): no dtype is registered under `name`.
  absl::StatusOr<const DType*> Lookup(absl::string_view name) const;

  // Registers `dtype` under its name. Errors (ValueError): null, or the name is
  // taken (a clash never replaces the registered descriptor).
  absl::Status Register(const DType* dtype);

  // All registered names, in registration order.
  std::vector<std::string> Names() const;

 private:
  DTypeRegistry();
  struct State;
  State* state_;
};

namespace dtypes {

const SimpleDType* Bool();
const SimpleDType* Int8();
const SimpleDType* Int16();
const SimpleDType* Int32();
const SimpleDType* Int64();
const SimpleDType* UInt8();
const SimpleDType* Float16();
const SimpleDType* BFloat16();
const SimpleDType* Float32();
const SimpleDType* Float64();
const SimpleDType* Float8E4M3FN();
const SimpleDType* Float8E5M2();
const SimpleDType* Float8E8M0FNU();
const SimpleDType* Float4E2M1FN();

// OCP MX and NVFP4 block-scaled formats: (values, scales).
const CompoundDType* MXFP8E4M3();
const CompoundDType* MXFP4();
const CompoundDType* NVFP4();

// Any (every dtype), Floating (floating simple dtypes and compounds of floating
// values), Integer (integer simple dtypes, bool excluded).
const DTypeCategory* Any();
const DTypeCategory* Floating();
const DTypeCategory* Integer();

}  // namespace dtypes
}  // namespace strata

#endif  // STRATA_DTYPE_REGISTRY_H_
