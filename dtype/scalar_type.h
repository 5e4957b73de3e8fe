// ScalarType: the built-in simple dtypes as an enumeration, and the one switch
// that turns a dtype into the C++ type its values are stored as.
//
// NOTE [ One dtype switch ]
// Every kernel, element load/store, DLPack conversion and quantization path
// learns what a dtype's bytes mean here and nowhere else (as XLA's
// PrimitiveTypeSwitch). Only the built-in descriptors of dtype/registry.h have
// a ScalarType; a descriptor a user creates with SimpleDType::Create has none,
// whatever its name or bit pattern, because Strata cannot know what its
// values mean (NaN and infinity codes, rounding, 24-bit stores, ...). An
// operation that touches values therefore asks RequireScalarType at its entry
// and refuses such a dtype with a TypeError before any effect; no switch has a
// `default:` branch that guesses.
#ifndef STRATA_DTYPE_SCALAR_TYPE_H_
#define STRATA_DTYPE_SCALAR_TYPE_H_

#include <cstdint>
#include <type_traits>
#include <utility>

namespace strata {

enum class ScalarType : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kFloat8E4M3FN,
  kFloat8E5M2,
  kFloat8E8M0FNU,
  kFloat4E2M1FN,
  kUInt4,
};

inline constexpr int kNumScalarTypes = 15;

// What a ScalarType's values are stored as. `Storage` is the C++ type of one
// stored value (bool is one byte, 0 or 1; the 16-bit floats are their bit
// patterns; float4_e2m1fn and uint4 pack two values per byte, so they have no
// per-value type and `Storage` is void). `kArithmetic` marks the dtypes that
// arithmetic computes in: Strata's narrow floats are storage formats only.
template <ScalarType kType>
struct ScalarTraits;

#define STRATA_SCALAR_TRAITS(kType, StorageType, kBitsValue, kArith) \
  template <>                                                        \
  struct ScalarTraits<ScalarType::kType> {                           \
    using Storage = StorageType;                                     \
    static constexpr int kBits = kBitsValue;                         \
    static constexpr bool kArithmetic = kArith;                      \
  };
STRATA_SCALAR_TRAITS(kBool, uint8_t, 8, true)
STRATA_SCALAR_TRAITS(kInt8, int8_t, 8, true)
STRATA_SCALAR_TRAITS(kInt16, int16_t, 16, true)
STRATA_SCALAR_TRAITS(kInt32, int32_t, 32, true)
STRATA_SCALAR_TRAITS(kInt64, int64_t, 64, true)
STRATA_SCALAR_TRAITS(kUInt8, uint8_t, 8, true)
STRATA_SCALAR_TRAITS(kFloat16, uint16_t, 16, true)
STRATA_SCALAR_TRAITS(kBFloat16, uint16_t, 16, true)
STRATA_SCALAR_TRAITS(kFloat32, float, 32, true)
STRATA_SCALAR_TRAITS(kFloat64, double, 64, true)
STRATA_SCALAR_TRAITS(kFloat8E4M3FN, uint8_t, 8, false)
STRATA_SCALAR_TRAITS(kFloat8E5M2, uint8_t, 8, false)
STRATA_SCALAR_TRAITS(kFloat8E8M0FNU, uint8_t, 8, false)
STRATA_SCALAR_TRAITS(kFloat4E2M1FN, void, 4, false)
STRATA_SCALAR_TRAITS(kUInt4, void, 4, false)
#undef STRATA_SCALAR_TRAITS

template <ScalarType kType>
using ScalarConstant = std::integral_constant<ScalarType, kType>;

// Calls f(ScalarConstant<t>{}) and returns its result: the one switch over
// dtypes (NOTE [ One dtype switch ]). It has no default branch: adding an
// enumerator makes every switch site fail to compile until it handles it.
template <typename F>
decltype(auto) ScalarTypeSwitch(ScalarType type, F&& f) {
  switch (type) {
    case ScalarType::kBool:
      return f(ScalarConstant<ScalarType::kBool>{});
    case ScalarType::kInt8:
      return f(ScalarConstant<ScalarType::kInt8>{});
    case ScalarType::kInt16:
      return f(ScalarConstant<ScalarType::kInt16>{});
    case ScalarType::kInt32:
      return f(ScalarConstant<ScalarType::kInt32>{});
    case ScalarType::kInt64:
      return f(ScalarConstant<ScalarType::kInt64>{});
    case ScalarType::kUInt8:
      return f(ScalarConstant<ScalarType::kUInt8>{});
    case ScalarType::kFloat16:
      return f(ScalarConstant<ScalarType::kFloat16>{});
    case ScalarType::kBFloat16:
      return f(ScalarConstant<ScalarType::kBFloat16>{});
    case ScalarType::kFloat32:
      return f(ScalarConstant<ScalarType::kFloat32>{});
    case ScalarType::kFloat64:
      return f(ScalarConstant<ScalarType::kFloat64>{});
    case ScalarType::kFloat8E4M3FN:
      return f(ScalarConstant<ScalarType::kFloat8E4M3FN>{});
    case ScalarType::kFloat8E5M2:
      return f(ScalarConstant<ScalarType::kFloat8E5M2>{});
    case ScalarType::kFloat8E8M0FNU:
      return f(ScalarConstant<ScalarType::kFloat8E8M0FNU>{});
    case ScalarType::kFloat4E2M1FN:
      return f(ScalarConstant<ScalarType::kFloat4E2M1FN>{});
    case ScalarType::kUInt4:
      return f(ScalarConstant<ScalarType::kUInt4>{});
  }
  // Unreachable for a valid enumerator; a value cast from a bad integer takes
  // the first branch rather than falling off the end.
  return f(ScalarConstant<ScalarType::kBool>{});
}

// The ScalarTypes whose stored values are plain C++ arithmetic types (the
// integers, float32 and float64): kernels for them run on T directly.
template <ScalarType kType>
inline constexpr bool kIsNativeArithmetic =
    ScalarTraits<kType>::kArithmetic&& kType != ScalarType::kBool&& kType !=
    ScalarType::kFloat16&& kType != ScalarType::kBFloat16;

// Whether arithmetic computes in `type` (not a narrow storage float).
inline bool IsArithmeticType(ScalarType type) {
  return ScalarTypeSwitch(type, [](auto t) {
    return ScalarTraits<decltype(t)::value>::kArithmetic;
  });
}

}  // namespace strata

#endif  // STRATA_DTYPE_SCALAR_TYPE_H_
