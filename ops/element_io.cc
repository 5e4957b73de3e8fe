#include "ops/element_io.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "dtype/float_formats.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "ops/scalar.h"

namespace strata {
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

}  // namespace

int64_t SaturatingToInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// Floating formats by structure (bits, exponent bits): no registry look-ups per
// value.
enum class FloatKind { kF32, kF64, kF16, kBF16, kNarrow };
inline FloatKind KindOf(const SimpleDType& d) {
  switch (d.bits()) {
    case 32:
      return FloatKind::kF32;
    case 64:
      return FloatKind::kF64;
    case 16:
      return d.exponent_bits() == 8 ? FloatKind::kBF16 : FloatKind::kF16;
    default:
      return FloatKind::kNarrow;
  }
}

double LoadDouble(const SimpleDType& d, const void* base, int64_t i) {
  if (!d.is_floating()) return static_cast<double>(LoadInt(d, base, i));
  switch (KindOf(d)) {
    case FloatKind::kF32:
      return Read<float>(base, i);
    case FloatKind::kF64:
      return Read<double>(base, i);
    case FloatKind::kF16:
      return HalfToFloat(Read<uint16_t>(base, i));
    case FloatKind::kBF16:
      return BFloat16ToFloat(Read<uint16_t>(base, i));
    case FloatKind::kNarrow:
      break;
  }
  if (const MiniFloat* f = MiniFloatFormat(d)) {
    return f->Decode(static_cast<uint32_t>(
        ReadPacked(static_cast<const uint8_t*>(base), d.bits(), i)));
  }
  return static_cast<double>(LoadInt(d, base, i));
}

int64_t LoadInt(const SimpleDType& d, const void* base, int64_t i) {
  if (d.is_floating()) return SaturatingToInt64(LoadDouble(d, base, i));
  if (d.is_bool()) return Read<uint8_t>(base, i) != 0;
  switch (d.bits()) {
    case 8:
      return d.is_signed() ? Read<int8_t>(base, i) : Read<uint8_t>(base, i);
    case 16:
      return Read<int16_t>(base, i);
    case 32:
      return Read<int32_t>(base, i);
    default:
      return Read<int64_t>(base, i);
  }
}

void StoreDouble(const SimpleDType& d, void* base, int64_t i, double v) {
  if (d.is_floating()) {
    switch (KindOf(d)) {
      case FloatKind::kF32:
        return Write<float>(base, i, static_cast<float>(v));
      case FloatKind::kF64:
        return Write<double>(base, i, v);
      case FloatKind::kF16:
        return Write<uint16_t>(base, i, FloatToHalf(static_cast<float>(v)));
      case FloatKind::kBF16:
        return Write<uint16_t>(base, i, FloatToBFloat16(static_cast<float>(v)));
      case FloatKind::kNarrow:
        break;
    }
  }
  if (const MiniFloat* f = MiniFloatFormat(d)) {
    return WritePacked(static_cast<uint8_t*>(base), d.bits(), i,
                       f->EncodeSaturating(v));
  }
  if (d.is_bool()) return Write<uint8_t>(base, i, v != 0);
  StoreInt(d, base, i, SaturatingToInt64(v));
}

void StoreInt(const SimpleDType& d, void* base, int64_t i, int64_t v) {
  if (d.is_floating()) return StoreDouble(d, base, i, static_cast<double>(v));
  if (d.is_bool()) return Write<uint8_t>(base, i, v != 0);
  switch (d.bits()) {
    case 8:
      return d.is_signed() ? Write<int8_t>(base, i, Wrap<int8_t>(v))
                           : Write<uint8_t>(base, i, Wrap<uint8_t>(v));
    case 16:
      return Write<int16_t>(base, i, Wrap<int16_t>(v));
    case 32:
      return Write<int32_t>(base, i, Wrap<int32_t>(v));
    default:
      return Write<int64_t>(base, i, v);
  }
}

}  // namespace strata
