#include "ops/internal/copy_kernel.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "carrier/carrier.h"
#include "core/errors.h"
#include "core/status_macros.h"
#include "ops/internal/checks.h"
#include "ops/internal/element_io.h"
#include "ops/internal/iterate.h"
#include "ops/ops.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#include <immintrin.h>
#include <xmmintrin.h>
#endif

namespace strata {
namespace ops_internal {

// NOTE [ Blocked transposing copy ]
// When dst is unit-stride in its inner mode and src in another mode, the copy
// goes by 2-D tiles so that both sides stay in cache: rows of both sides are a
// power of two apart for square matrices, so they share L1 sets. Each source
// line of a tile is read once into a small buffer, transposed there, and each
// destination line written once. Inlined with constant bounds for whole tiles,
// the loops unroll and vectorize.
namespace {

constexpr int64_t kTransposeTile = 16;

template <typename T>
inline void CopyTile(T* to, const T* from, int64_t to_row_stride,
                     int64_t from_column_stride, int64_t rows, int64_t cols) {
  T buffer[kTransposeTile * kTransposeTile];
  for (int64_t j = 0; j < cols; ++j) {
    const T* line = from + j * from_column_stride;
    for (int64_t i = 0; i < rows; ++i) buffer[i * kTransposeTile + j] = line[i];
  }
  for (int64_t i = 0; i < rows; ++i) {
    T* line = to + i * to_row_stride;
    for (int64_t j = 0; j < cols; ++j) line[j] = buffer[i * kTransposeTile + j];
  }
}

#if defined(__SSE2__)
// NOTE [ Streaming 4-byte transposes ]
// For 4-byte elements (on every x86-64, without -march flags), 4x4 blocks
// transposed in SSE registers, walked in strips of 32 destination columns:
// each destination row of a strip is two 64-byte lines, written once, and
// the strip's 32 source lines are read sequentially. The strip's 8 blocks
// per 4 rows are a loop of constant trip count, which unrolls: one pointer
// per block, no index arithmetic between the stores. Where the output is
// larger than the caches, the lines are written with streaming stores, which
// skip the read-for-ownership a normal store pays (glibc's memcpy does the
// same). Measured on a Zen 4 (float32 N x N, bandwidth as a fraction of
// memcpy's, N = 2048, 4096, 4160, 8192): strips of 16 columns with a runtime
// block loop 0.36, 0.43, 0.51, 0.44; unrolled strips of 32 columns 0.59,
// 0.74, 0.94, 0.77; of 16 or 64 columns slower than 32 at every N.
constexpr int64_t kStreamingBytes = int64_t{8} << 20;
constexpr int64_t kStripBlocks = 8;  // 4x4 blocks: 32 destination columns.

// to[r][c] = from[c][r] for r, c < 4.
template <bool kStream>
inline void Transpose4x4(uint32_t* to, const uint32_t* from,
                         int64_t to_row_stride, int64_t from_column_stride) {
  const int64_t ts = to_row_stride, fs = from_column_stride;
  const float* s = reinterpret_cast<const float*>(from);
  __m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + fs),
         r2 = _mm_loadu_ps(s + 2 * fs), r3 = _mm_loadu_ps(s + 3 * fs);
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  float* d = reinterpret_cast<float*>(to);
  if constexpr (kStream) {
    _mm_stream_ps(d, r0);
    _mm_stream_ps(d + ts, r1);
    _mm_stream_ps(d + 2 * ts, r2);
    _mm_stream_ps(d + 3 * ts, r3);
  } else {
    _mm_storeu_ps(d, r0);
    _mm_storeu_ps(d + ts, r1);
    _mm_storeu_ps(d + 2 * ts, r2);
    _mm_storeu_ps(d + 3 * ts, r3);
  }
}

template <bool kStream>
void TransposeStrips32(uint32_t* to, const uint32_t* from,
                       int64_t to_row_stride, int64_t from_column_stride,
                       int64_t rows, int64_t cols) {
  const int64_t rows4 = rows / 4 * 4, cols4 = cols / 4 * 4;
  const int64_t ts = to_row_stride, fs = from_column_stride;
  const int64_t strip = 4 * kStripBlocks;
  const int64_t strips_end = cols4 / strip * strip;
  for (int64_t j0 = 0; j0 < strips_end; j0 += strip) {
    for (int64_t i = 0; i < rows4; i += 4) {
      for (int64_t b = 0; b < kStripBlocks; ++b) {
        const int64_t j = j0 + 4 * b;
        Transpose4x4<kStream>(to + i * ts + j, from + j * fs + i, ts, fs);
      }
    }
  }
  // The whole blocks past the last whole strip.
  for (int64_t j0 = strips_end; j0 < cols4; j0 += 4) {
    for (int64_t i = 0; i < rows4; i += 4) {
      Transpose4x4<kStream>(to + i * ts + j0, from + j0 * fs + i, ts, fs);
    }
  }
  if constexpr (kStream) _mm_sfence();
  for (int64_t i = 0; i < rows; ++i) {  // The edges the blocks leave.
    for (int64_t j = i < rows4 ? cols4 : 0; j < cols; ++j) {
      to[i * ts + j] = from[j * fs + i];
    }
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define STRATA_AVX512_TRANSPOSE 1
// NOTE [ 16x16 transposes in AVX-512 registers ]
// Where the processor has AVX-512 (asked at run time: the build targets
// baseline x86-64), 4-byte transposes go by 16x16 tiles held in 16 zmm
// registers: each tile reads 16 whole source lines and writes 16 whole
// destination lines, each line touched once, where the 4x4 blocks above read
// every source line four times and fill each destination line in pieces.
// Tiles are walked in strips of 64 destination columns inside blocks of
// 512x512, so that the pages a block touches (512 on each side) stay in the
// TLB: a strip over all rows of a 4096-row matrix touched a new destination
// page at every row. Measured on a Zen 4 (4096x4096 float32, bandwidth as a
// fraction of memcpy's in one run): 4x4 strips of 32 columns 0.40; 16x16
// tiles in strips of 16 columns 0.24, of 32 0.40, of 64 0.51; in 512x512
// blocks of 64-column strips 0.66 (blocks of 256 0.60, of 1024 0.65).
constexpr int64_t kTileBlock = 512;
constexpr int64_t kTileStrip = 64;

bool Avx512TransposeAvailable() {
  static const bool supported = __builtin_cpu_supports("avx512f");
  return supported;
}

// The low and the high 64-bit pairs of each 128-bit lane of a and b,
// interleaved (unpacklo_pd and unpackhi_pd on float lanes).
__attribute__((target("avx512f"))) inline __m512 LowPairs(__m512 a, __m512 b) {
  return _mm512_castpd_ps(
      _mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}
__attribute__((target("avx512f"))) inline __m512 HighPairs(__m512 a, __m512 b) {
  return _mm512_castpd_ps(
      _mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}

// to[r][c] = from[c][r] for r, c < 16. With kStream, every destination row
// is 64-byte aligned.
template <bool kStream>
__attribute__((target("avx512f"))) inline void Transpose16x16(
    float* to, const float* from, int64_t to_row_stride,
    int64_t from_column_stride) {
  __m512 r[16], t[16];
  for (int k = 0; k < 16; ++k)
    r[k] = _mm512_loadu_ps(from + k * from_column_stride);
  // Pairs of rows interleaved, then pairs of pairs: r[4q + p] holds, in its
  // 128-bit lane L, rows 4q..4q+3 of column 4L + p.
  for (int k = 0; k < 16; k += 2) {
    t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 16; k += 4) {
    r[k] = LowPairs(t[k], t[k + 2]);
    r[k + 1] = HighPairs(t[k], t[k + 2]);
    r[k + 2] = LowPairs(t[k + 1], t[k + 3]);
    r[k + 3] = HighPairs(t[k + 1], t[k + 3]);
  }
  // Then the 128-bit lanes: the even and the odd lanes of row groups 0 and
  // 1, and of 2 and 3, and once more, leave column c whole in r[c].
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
    t[4 + k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xDD);
    t[8 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
    t[12 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xDD);
  }
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xDD);
    r[4 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0xDD);
  }
  for (int k = 0; k < 16; ++k) {
    if constexpr (kStream) {
      _mm512_stream_ps(to + k * to_row_stride, r[k]);
    } else {
      _mm512_storeu_ps(to + k * to_row_stride, r[k]);
    }
  }
}

// The whole 16x16 tiles of the transpose (NOTE [ 16x16 transposes in AVX-512
// registers ]), then the edges they leave, by TransposeStrips32.
template <bool kStream>
__attribute__((target("avx512f"))) void TransposeTiles16(
    uint32_t* to, const uint32_t* from, int64_t to_row_stride,
    int64_t from_column_stride, int64_t rows, int64_t cols) {
  const int64_t ts = to_row_stride, fs = from_column_stride;
  const int64_t rows16 = rows / 16 * 16, cols16 = cols / 16 * 16;
  float* t = reinterpret_cast<float*>(to);
  const float* f = reinterpret_cast<const float*>(from);
  for (int64_t i0 = 0; i0 < rows16; i0 += kTileBlock) {
    const int64_t i1 = std::min(i0 + kTileBlock, rows16);
    for (int64_t j0 = 0; j0 < cols16; j0 += kTileBlock) {
      const int64_t j1 = std::min(j0 + kTileBlock, cols16);
      for (int64_t s0 = j0; s0 < j1; s0 += kTileStrip) {
        const int64_t s1 = std::min(s0 + kTileStrip, j1);
        for (int64_t i = i0; i < i1; i += 16) {
          for (int64_t j = s0; j < s1; j += 16) {
            Transpose16x16<kStream>(t + i * ts + j, f + j * fs + i, ts, fs);
          }
        }
      }
    }
  }
  if constexpr (kStream) _mm_sfence();
  if (cols16 < cols) {  // The columns right of the tiles, beside them.
    TransposeStrips32<false>(to + cols16, from + cols16 * fs, ts, fs, rows16,
                             cols - cols16);
  }
  if (rows16 < rows) {  // The rows below the tiles, whole.
    TransposeStrips32<false>(to + rows16 * ts, from + rows16, ts, fs,
                             rows - rows16, cols);
  }
}
#endif  // x86-64 with GCC or Clang

// Whether a SIMD kernel copies this transpose (and does it): 16x16 AVX-512
// tiles where the processor has them, else 4x4 SSE blocks.
template <typename T>
bool TransposeBySimd(T* to, const T* from, int64_t to_row_stride,
                     int64_t from_column_stride, int64_t rows, int64_t cols) {
  if constexpr (sizeof(T) != 4) {
    return false;
  } else {
    auto* t = reinterpret_cast<uint32_t*>(to);
    auto* f = reinterpret_cast<const uint32_t*>(from);
    const bool large = rows * cols >= kStreamingBytes / 4;
#if defined(STRATA_AVX512_TRANSPOSE)
    if (rows >= 16 && cols >= 16 && Avx512TransposeAvailable()) {
      // 64-byte streaming stores need 64-byte aligned destination rows.
      if (large && reinterpret_cast<uintptr_t>(to) % 64 == 0 &&
          to_row_stride % 16 == 0) {
        TransposeTiles16<true>(t, f, to_row_stride, from_column_stride, rows,
                               cols);
      } else {
        TransposeTiles16<false>(t, f, to_row_stride, from_column_stride, rows,
                                cols);
      }
      return true;
    }
#endif
    // Streaming stores need 16-byte aligned destination rows.
    const bool aligned =
        reinterpret_cast<uintptr_t>(to) % 16 == 0 && to_row_stride % 4 == 0;
    if (aligned && large) {
      TransposeStrips32<true>(t, f, to_row_stride, from_column_stride, rows,
                              cols);
    } else {
      TransposeStrips32<false>(t, f, to_row_stride, from_column_stride, rows,
                               cols);
    }
    return true;
  }
}
#endif

}  // namespace

// dst[c] = src[c] for same-shaped views (src broadcast already aligned by
// access).
void CopyKernel(const Tensor& dst, const std::vector<int64_t>& extents,
                const std::vector<ModeAccess>& dst_access, const Tensor& src,
                const std::vector<ModeAccess>& src_access) {
  const SimpleDType& dd = DTypeOf(dst);
  const SimpleDType& sd = DTypeOf(src);
  void* out = dst.carrier()->mutable_data();
  const void* in = src.carrier()->data();
  const std::array<std::vector<ModeAccess>, 2> ops = {dst_access, src_access};
  const std::array<int64_t, 2> bases = {dst.offset(), src.offset()};
  if (&dd == &sd && dd.bits() >= 8) {
    auto typed = [&](auto tag) {
      using T = decltype(tag);
      T* o = static_cast<T*>(out);
      const T* s = static_cast<const T*>(in);
      // dst unit-stride in its inner mode, src in another: copy 2-D tiles
      // (NOTE [ Blocked transposing copy ]).
      const size_t r = extents.size();
      if (r >= 2 && dst_access[r - 1].strided() &&
          dst_access[r - 1].stride == 1 && src_access[r - 2].strided() &&
          src_access[r - 2].stride == 1 && src_access[r - 1].strided() &&
          dst_access[r - 2].strided() && src_access[r - 1].stride != 1) {
        const int64_t rows = extents[r - 2], cols = extents[r - 1];
        const int64_t ds = dst_access[r - 2].stride,
                      ss = src_access[r - 1].stride;
        std::vector<int64_t> outer(extents.begin(), extents.end() - 2);
        std::array<std::vector<ModeAccess>, 2> outer_ops = {
            std::vector<ModeAccess>(dst_access.begin(), dst_access.end() - 2),
            std::vector<ModeAccess>(src_access.begin(), src_access.end() - 2)};
        ForEachIndex<2>(
            outer, outer_ops, bases, [&](const std::array<int64_t, 2>& b) {
#if defined(__SSE2__)
              if (TransposeBySimd(o + b[0], s + b[1], ds, ss, rows, cols)) {
                return;
              }
#endif
              for (int64_t i0 = 0; i0 < rows; i0 += kTransposeTile) {
                const int64_t ni = std::min(kTransposeTile, rows - i0);
                for (int64_t j0 = 0; j0 < cols; j0 += kTransposeTile) {
                  const int64_t nj = std::min(kTransposeTile, cols - j0);
                  T* to = o + b[0] + i0 * ds + j0;
                  const T* from = s + b[1] + j0 * ss + i0;
                  if (ni == kTransposeTile && nj == kTransposeTile) {
                    CopyTile(to, from, ds, ss, kTransposeTile,
                             kTransposeTile);  // Unrolled.
                  } else {
                    CopyTile(to, from, ds, ss, ni, nj);
                  }
                }
              }
            });
        return;
      }
      ForEachIndex<2>(
          extents, ops, bases,
          [&](const std::array<int64_t, 2>& i) { o[i[0]] = s[i[1]]; });
    };
    if (DispatchNative(dd, typed)) return;
    if (dd.bits() == 16 || dd.is_bool()) {
      if (dd.bits() == 16) {
        typed(uint16_t{});
      } else {
        typed(uint8_t{});
      }
      return;
    }
  }
  if (IsIntegral(dd) && IsIntegral(sd)) {
    ForEachIndex<2>(extents, ops, bases, [&](const std::array<int64_t, 2>& i) {
      StoreInt(dd, out, i[0], LoadInt(sd, in, i[1]));
    });
  } else {
    ForEachIndex<2>(extents, ops, bases, [&](const std::array<int64_t, 2>& i) {
      StoreDouble(dd, out, i[0], LoadDouble(sd, in, i[1]));
    });
  }
}

absl::StatusOr<Tensor> NewCompact(const SimpleDType& dtype,
                                  absl::Span<const int64_t> shape,
                                  bool zeroed) {
  for (int64_t e : shape) {
    if (e < 0) return ValueErrorCat("negative extent ", e);
  }
  STRATA_ASSIGN_OR_RETURN(
      Layout layout,
      Layout::RowMajor(shape.size() == 1 ? IntTuple(shape[0])
                                         : IntTuple::Flat(shape)));
  STRATA_ASSIGN_OR_RETURN(
      auto carrier,
      zeroed ? HostCarrier::Create(dtype, layout.size())
             : HostCarrier::CreateForOverwrite(dtype, layout.size()));
  return Tensor::Create(carrier, 0, layout);
}

absl::StatusOr<Tensor> CompactCopy(const Tensor& a, const SimpleDType& dtype) {
  const std::vector<int64_t> shape = a.shape();
  // The copy writes every value; packed dtypes would leave the spare bits of
  // a last byte unwritten, so they start from zeros.
  STRATA_ASSIGN_OR_RETURN(Tensor out, dtype.bits() % 8 == 0
                                          ? NewCompact(dtype, shape, false)
                                          : Zeros(dtype, shape));
  CopyKernel(out, shape, AlignedAccess(out.layout(), shape), a,
             AlignedAccess(a.layout(), shape));
  return out;
}

}  // namespace ops_internal
}  // namespace strata
