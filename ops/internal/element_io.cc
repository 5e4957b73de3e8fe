#include "ops/internal/element_io.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "dtype/float_formats.h"
#include "dtype/packing.h"
#include "dtype/scalar_type.h"

namespace strata {
namespace ops_internal {
namespace {

template <typename T>
T Read(const void* base, int64_t index) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(base) + index * sizeof(T),
              sizeof(T));
  return v;
}

template <typename T>
void Write(void* base, int64_t index, T v) {
  std::memcpy(static_cast<uint8_t*>(base) + index * sizeof(T), &v, sizeof(T));
}

// Wraps like the two's complement store of a wider integer (as PyTorch/NumPy
// casts do).
template <typename T>
T Wrap(int64_t v) {
  return static_cast<T>(static_cast<uint64_t>(v));
}

const MiniFloat& NarrowFormat(ScalarType type) {
  switch (type) {
    case ScalarType::kFloat8E5M2:
      return Float8E5M2Format();
    case ScalarType::kFloat8E8M0FNU:
      return Float8E8M0FNUFormat();
    case ScalarType::kFloat4E2M1FN:
      return Float4E2M1FNFormat();
    default:
      return Float8E4M3FNFormat();
  }
}

// A value as stored: the kinds of ScalarType, each with one load and store.
enum class StoredAs {
  kBool,
  kInteger,
  kNative,
  kHalf,
  kBFloat16,
  kNarrow,
  kNibble  // uint4: an unsigned integer packed two per byte.
};

template <ScalarType kType>
constexpr StoredAs StoredAsOf() {
  if constexpr (kType == ScalarType::kBool) return StoredAs::kBool;
  if constexpr (kType == ScalarType::kFloat16) return StoredAs::kHalf;
  if constexpr (kType == ScalarType::kBFloat16) return StoredAs::kBFloat16;
  if constexpr (kType == ScalarType::kUInt4) return StoredAs::kNibble;
  if constexpr (!ScalarTraits<kType>::kArithmetic) return StoredAs::kNarrow;
  if constexpr (std::is_integral_v<typename ScalarTraits<kType>::Storage>) {
    return StoredAs::kInteger;
  }
  return StoredAs::kNative;
}

}  // namespace

// Every function below switches once on the dtype's ScalarType
// (NOTE [ One dtype switch ]); a descriptor without one never reaches them
// (operations refuse it at their entry) and reads as 0 / writes nothing if it
// did.

double LoadDouble(const SimpleDType& d, const void* base, int64_t i) {
  if (!d.scalar_type()) return 0;
  return ScalarTypeSwitch(*d.scalar_type(), [&](auto type) -> double {
    constexpr ScalarType kType = decltype(type)::value;
    using Storage = typename ScalarTraits<kType>::Storage;
    constexpr StoredAs kAs = StoredAsOf<kType>();
    if constexpr (kAs == StoredAs::kBool) {
      return Read<uint8_t>(base, i) != 0 ? 1.0 : 0.0;
    } else if constexpr (kAs == StoredAs::kHalf) {
      return HalfToFloat(Read<uint16_t>(base, i));
    } else if constexpr (kAs == StoredAs::kBFloat16) {
      return BFloat16ToFloat(Read<uint16_t>(base, i));
    } else if constexpr (kAs == StoredAs::kNarrow) {
      return NarrowFormat(kType).Decode(static_cast<uint32_t>(ReadPacked(
          static_cast<const uint8_t*>(base), ScalarTraits<kType>::kBits, i)));
    } else if constexpr (kAs == StoredAs::kNibble) {
      return static_cast<double>(
          ReadPacked(static_cast<const uint8_t*>(base), 4, i));
    } else {
      return static_cast<double>(Read<Storage>(base, i));
    }
  });
}

int64_t LoadInt(const SimpleDType& d, const void* base, int64_t i) {
  if (!d.scalar_type()) return 0;
  return ScalarTypeSwitch(*d.scalar_type(), [&](auto type) -> int64_t {
    constexpr ScalarType kType = decltype(type)::value;
    using Storage = typename ScalarTraits<kType>::Storage;
    constexpr StoredAs kAs = StoredAsOf<kType>();
    if constexpr (kAs == StoredAs::kBool) {
      return Read<uint8_t>(base, i) != 0;
    } else if constexpr (kAs == StoredAs::kInteger) {
      return Read<Storage>(base, i);
    } else if constexpr (kAs == StoredAs::kNibble) {
      return ReadPacked(static_cast<const uint8_t*>(base), 4, i);
    } else {
      return SaturatingToInt64(LoadDouble(d, base, i));
    }
  });
}

void StoreDouble(const SimpleDType& d, void* base, int64_t i, double v) {
  if (!d.scalar_type()) return;
  ScalarTypeSwitch(*d.scalar_type(), [&](auto type) {
    constexpr ScalarType kType = decltype(type)::value;
    using Storage = typename ScalarTraits<kType>::Storage;
    constexpr StoredAs kAs = StoredAsOf<kType>();
    if constexpr (kAs == StoredAs::kBool) {
      Write<uint8_t>(base, i, v != 0);
    } else if constexpr (kAs == StoredAs::kInteger) {
      Write<Storage>(base, i, Wrap<Storage>(SaturatingToInt64(v)));
    } else if constexpr (kAs == StoredAs::kNibble) {
      WritePacked(static_cast<uint8_t*>(base), 4, i,
                  static_cast<uint64_t>(SaturatingToInt64(v)) & 0xF);
    } else if constexpr (kAs == StoredAs::kHalf) {
      Write<uint16_t>(base, i, FloatToHalf(static_cast<float>(v)));
    } else if constexpr (kAs == StoredAs::kBFloat16) {
      Write<uint16_t>(base, i, FloatToBFloat16(static_cast<float>(v)));
    } else if constexpr (kAs == StoredAs::kNarrow) {
      WritePacked(static_cast<uint8_t*>(base), ScalarTraits<kType>::kBits, i,
                  NarrowFormat(kType).EncodeSaturating(v));
    } else {
      Write<Storage>(base, i, static_cast<Storage>(v));
    }
  });
}

void StoreInt(const SimpleDType& d, void* base, int64_t i, int64_t v) {
  if (!d.scalar_type()) return;
  ScalarTypeSwitch(*d.scalar_type(), [&](auto type) {
    constexpr ScalarType kType = decltype(type)::value;
    using Storage = typename ScalarTraits<kType>::Storage;
    constexpr StoredAs kAs = StoredAsOf<kType>();
    if constexpr (kAs == StoredAs::kBool) {
      Write<uint8_t>(base, i, v != 0);
    } else if constexpr (kAs == StoredAs::kInteger) {
      Write<Storage>(base, i, Wrap<Storage>(v));
    } else if constexpr (kAs == StoredAs::kNibble) {
      WritePacked(static_cast<uint8_t*>(base), 4, i,
                  static_cast<uint64_t>(v) & 0xF);
    } else {
      StoreDouble(d, base, i, static_cast<double>(v));
    }
  });
}

int64_t WrapToIntegral(const SimpleDType& d, int64_t v) {
  if (!d.scalar_type()) return v;
  return ScalarTypeSwitch(*d.scalar_type(), [&](auto type) -> int64_t {
    constexpr ScalarType kType = decltype(type)::value;
    using Storage = typename ScalarTraits<kType>::Storage;
    constexpr StoredAs kAs = StoredAsOf<kType>();
    if constexpr (kAs == StoredAs::kBool) {
      return v != 0;
    } else if constexpr (kAs == StoredAs::kInteger) {
      return Wrap<Storage>(v);
    } else if constexpr (kAs == StoredAs::kNibble) {
      return static_cast<int64_t>(static_cast<uint64_t>(v) & 0xF);
    } else {
      return v;
    }
  });
}

void StoreScalar(const SimpleDType& d, void* base, int64_t i, const Scalar& v) {
  if (v.is_float()) {
    StoreDouble(d, base, i, v.as_double());
  } else {
    StoreInt(d, base, i, v.as_int());
  }
}

}  // namespace ops_internal
}  // namespace strata
