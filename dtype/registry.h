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
// Unsigned 4-bit integers, two per byte, low nibble first (q4_0's codes).
const SimpleDType* UInt4();

// The block-scaled family (../shared/design/formats.md section 1): (element
// codes, block scales[, tensor scale]), each with its BlockScaleRule.
const CompoundDType* MXFP8E4M3();     // e4m3 x e8m0, 32 along one mode
const CompoundDType* MXFP4();         // e2m1 x e8m0, 32 along one mode
const CompoundDType* NVFP4();         // e2m1 x e4m3, 16 along one mode
const CompoundDType* NVFP4TS();       // nvfp4 x float32 tensor scale g
const CompoundDType* NVFP4TSRecip();  // nvfp4 / float32 g' (stored inverse)
const CompoundDType* FP8E4M3Tensorwise();    // e4m3 x one float32
const CompoundDType* FP8E4M3Rowwise();       // e4m3 x float32 per row
const CompoundDType* FP8E4M3Block1x128();    // 128 along one mode, ragged
const CompoundDType* FP8E4M3Block128x128();  // 128x128 on the last two, ragged
// 128x128 as above with e8m0 scales: code x 2^(e-127) (DeepGEMM's UE8M0).
const CompoundDType* FP8E4M3Block128x128UE8M0();
const CompoundDType* Q8_0();  // int8 x float16, 32 along the last mode
const CompoundDType* Q4_0();  // (uint4 - 8) x float16, 32 along the last mode

// Any (every dtype), Floating (floating simple dtypes and compounds of floating
// values), Integer (integer simple dtypes, bool excluded).
const DTypeCategory* Any();
const DTypeCategory* Floating();
const DTypeCategory* Integer();

}  // namespace dtypes
}  // namespace strata

#endif  // STRATA_DTYPE_REGISTRY_H_
