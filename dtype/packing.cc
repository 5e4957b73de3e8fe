#include "dtype/packing.h"

#include <cstring>

#include "util/checked_math.h"
#include "util/errors.h"

namespace strata {

absl::StatusOr<int64_t> StorageBytes(const SimpleDType& dtype, int64_t count) {
  if (count < 0) {
    return ValueErrorCat("a carrier of ", dtype.name(), " cannot hold ", count,
                         " values");
  }
  const int bits = dtype.bits();
  if (bits >= 8) {
    int64_t bytes;
    if (!CheckedMul(count, bits / 8, &bytes)) {
      return ValueErrorCat(count, " values of ", dtype.name(),
                           " overflow a 64-bit byte count");
    }
    return bytes;
  }
  const int per_byte = 8 / bits;
  return CeilDiv(count, per_byte);
}

uint64_t ReadPacked(const uint8_t* bytes, int bits, int64_t index) {
  if (bits >= 8) {
    uint64_t pattern = 0;
    std::memcpy(&pattern, bytes + index * (bits / 8),
                bits / 8);  // Little-endian.
    return pattern;
  }
  const int per_byte = 8 / bits;
  const int shift = static_cast<int>(index % per_byte) * bits;
  return (bytes[index / per_byte] >> shift) & ((1u << bits) - 1);
}

void WritePacked(uint8_t* bytes, int bits, int64_t index, uint64_t pattern) {
  if (bits >= 8) {
    std::memcpy(bytes + index * (bits / 8), &pattern, bits / 8);
    return;
  }
  const int per_byte = 8 / bits;
  const int shift = static_cast<int>(index % per_byte) * bits;
  const uint8_t mask = static_cast<uint8_t>(((1u << bits) - 1) << shift);
  uint8_t& byte = bytes[index / per_byte];
  byte = static_cast<uint8_t>((byte & ~mask) | ((pattern << shift) & mask));
}

}  // namespace strata
