// Bit-exact encoders of float32 values to the narrow codes that quantization
// writes (e4m3, e2m1), shared by the SIMD block kernel (quantize_kernel.cc)
// and the block-scaled family's kernels (quantize_family.cc).
#ifndef STRATA_OPS_INTERNAL_NARROW_CODES_H_
#define STRATA_OPS_INTERNAL_NARROW_CODES_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace strata {
namespace ops_internal {
namespace quantize_detail {

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// float bit patterns of 2^14 and 2^22: adding them to a small non-negative
// float rounds it (to nearest even) to a multiple of the e4m3 subnormal
// quantum 2^-9, or of the e2m1 subnormal quantum 0.5.
constexpr uint32_t kTwo14Bits = 0x46800000u;
constexpr uint32_t kTwo22Bits = 0x4A800000u;

// The e4m3 magnitude code of a finite non-negative float, to nearest even,
// saturating at 448 (0x7E).
inline uint32_t E4M3Magnitude(float a) {
  if (a < 0x1p-6f) return Bits(a + 16384.0f) - kTwo14Bits;
  uint32_t u = Bits(a);
  u += 0x7FFFFu + ((u >> 20) & 1u);  // Round the 20 dropped bits to even.
  return std::min<uint32_t>((u >> 20) - (120u << 3), 0x7E);
}

// The e2m1 magnitude code of a finite non-negative float, to nearest even,
// saturating at 6 (0x7).
inline uint32_t E2M1Magnitude(float a) {
  if (a < 1.0f) return Bits(a + 4194304.0f) - kTwo22Bits;
  uint32_t u = Bits(a);
  u += 0x1FFFFFu + ((u >> 22) & 1u);  // Round the 22 dropped bits to even.
  return std::min<uint32_t>((u >> 22) - (126u << 1), 0x7);
}

// The value of an e4m3 code in [0, 0x7E].
inline float DecodeE4M3(uint32_t code) {
  const uint32_t e = code >> 3, m = code & 7;
  return e == 0 ? static_cast<float>(m) * 0x1p-9f
                : FromBits(((e + 120) << 23) | (m << 20));
}

constexpr uint32_t kAbsMask = 0x7FFFFFFFu;
constexpr uint32_t kInfBits = 0x7F800000u;

}  // namespace quantize_detail
}  // namespace ops_internal
}  // namespace strata

namespace strata {
namespace ops_internal {
namespace quantize_detail {

// The e4m3 code of any float: to nearest even, saturating to +-448 (0x7E,
// infinities included), NaN 0x7F with its sign; -0 and negatives that round
// to zero are 0x80.
inline uint8_t E4M3Code(float y) {
  const uint32_t u = Bits(y);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & kAbsMask;
  if (a > kInfBits) return static_cast<uint8_t>(0x7Fu | sign);
  return static_cast<uint8_t>(E4M3Magnitude(FromBits(a)) | sign);
}

// The e2m1 code of any float: to nearest even, saturating to +-6 (infinities
// included); NaN, which e2m1 cannot hold, is +0; -0 and negatives that round
// to zero are 0x8.
inline uint8_t E2M1Code(float y) {
  const uint32_t u = Bits(y);
  const uint32_t a = u & kAbsMask;
  if (a > kInfBits) return 0;
  return static_cast<uint8_t>(E2M1Magnitude(FromBits(a)) | ((u >> 28) & 0x8u));
}

}  // namespace quantize_detail
}  // namespace ops_internal
}  // namespace strata

#endif  // STRATA_OPS_INTERNAL_NARROW_CODES_H_
