#include "ops/internal/transpose.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace strata {
namespace ops_internal {

// NOTE [ Blocked transposing copy ]
// When dst is unit-stride in its inner mode and src in another mode, the copy
// goes by 2-D tiles so that both sides stay in cache: rows of both sides are a
// power of two apart for square matrices, so they share L1 sets. Where the
// processor has AVX-512, whole tiles are transposed in registers (NOTE
// [ Transposes in AVX-512 registers ]). Elsewhere, and for the edges those
// tiles leave and matrices thinner than a tile: 4-byte elements go by 4x4 SSE
// blocks on x86-64 (NOTE [ Streaming 4-byte transposes ]); the others by
// buffered tiles, each source line of a tile read once into a small buffer,
// transposed there, and each destination line written once (inlined with
// constant bounds for whole tiles, the loops unroll and vectorize).
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

// The portable transpose: tiles through a buffer.
template <typename T>
void TransposeByBufferedTiles(T* to, const T* from, int64_t ts, int64_t fs,
                              int64_t rows, int64_t cols) {
  for (int64_t i0 = 0; i0 < rows; i0 += kTransposeTile) {
    const int64_t ni = std::min(kTransposeTile, rows - i0);
    for (int64_t j0 = 0; j0 < cols; j0 += kTransposeTile) {
      const int64_t nj = std::min(kTransposeTile, cols - j0);
      T* tile_to = to + i0 * ts + j0;
      const T* tile_from = from + j0 * fs + i0;
      if (ni == kTransposeTile && nj == kTransposeTile) {
        CopyTile(tile_to, tile_from, ts, fs, kTransposeTile,
                 kTransposeTile);  // Unrolled.
      } else {
        CopyTile(tile_to, tile_from, ts, fs, ni, nj);
      }
    }
  }
}

// Outputs at least this large are written with streaming stores, which skip
// the read-for-ownership a normal store pays (glibc's memcpy does the same).
constexpr int64_t kStreamingBytes = int64_t{8} << 20;

#if defined(__SSE2__)
// Whether a transpose of rows x cols elements of `element_bytes` into `to`,
// rows `to_row_stride` elements apart, streams its stores of `store_bytes`:
// an output of at least kStreamingBytes whose rows are aligned to the stores.
bool Streams(const void* to, int64_t to_row_stride, int64_t rows, int64_t cols,
             int64_t element_bytes, int64_t store_bytes) {
  return rows * cols >= kStreamingBytes / element_bytes &&
         reinterpret_cast<uintptr_t>(to) % store_bytes == 0 &&
         to_row_stride * element_bytes % store_bytes == 0;
}

// NOTE [ Streaming 4-byte transposes ]
// For 4-byte elements (on x86-64 without AVX-512, and for the edges of its
// tiles; SSE needs no -march flag), 4x4 blocks transposed in SSE registers,
// walked in strips of 32 destination columns: each destination row of a
// strip is two 64-byte lines, written once, and the strip's 32 source lines
// are read sequentially. The strip's 8 blocks
// per 4 rows are a loop of constant trip count, which unrolls: one pointer
// per block, no index arithmetic between the stores. Where the output is
// larger than the caches, the lines are streamed. Measured on a Zen 4
// (float32 N x N, bandwidth as a fraction of memcpy's, N = 2048, 4096, 4160,
// 8192): strips of 16 columns with a runtime block loop 0.36, 0.43, 0.51,
// 0.44; unrolled strips of 32 columns 0.59, 0.74, 0.94, 0.77; of 16 or 64
// columns slower than 32 at every N.
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
#endif  // __SSE2__

// The transpose of a rectangle without AVX-512: 4x4 SSE blocks for 4-byte
// elements, else buffered tiles.
template <typename T>
void TransposePortable(T* to, const T* from, int64_t ts, int64_t fs,
                       int64_t rows, int64_t cols) {
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4) {
    auto* t = reinterpret_cast<uint32_t*>(to);
    auto* f = reinterpret_cast<const uint32_t*>(from);
    if (Streams(to, ts, rows, cols, 4, /*store_bytes=*/16)) {
      TransposeStrips32<true>(t, f, ts, fs, rows, cols);
    } else {
      TransposeStrips32<false>(t, f, ts, fs, rows, cols);
    }
    return;
  }
#endif
  TransposeByBufferedTiles(to, from, ts, fs, rows, cols);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define STRATA_AVX512_TRANSPOSE 1
// NOTE [ Transposes in AVX-512 registers ]
// Where the processor has AVX-512 (F and BW, asked at run time: the build
// targets baseline x86-64), whole tiles are transposed in zmm registers: each
// tile reads whole 64-byte source lines and writes whole destination lines,
// each line touched once, where 4x4 blocks read every source line four times
// and fill each destination line in pieces, and buffered tiles move one
// element at a time. Every tile starts from the 16x16 transpose of the 32-bit
// lanes of 16 source lines: 4-byte tiles are that (16x16); 2-byte tiles
// (32x32) do it for two groups of 16 lines and take the even and the odd
// halves of both groups' lanes apart; 1-byte tiles (64x64) do it for four
// groups, sort each lane's bytes by position and transpose the 128-bit lanes
// of the four; 8-byte tiles (8x8) transpose 64-bit lanes in three steps of
// their own. Tiles are walked in strips of 512 destination bytes inside
// blocks of 1024x1024 elements, so that the pages a block touches stay in the
// TLB: a strip over all rows of a 4096-row matrix touched a new destination
// page at every row. (On an AMD EPYC with memcpy at 36-40 GB/s, strips of
// 256 bytes in 512-blocks gave int8 8192x8192 0.44 and bfloat16 0.52 of
// memcpy; 512 in 1024-blocks 0.45 and 0.59; 64 or 128 bytes 0.28-0.37.)
// Measured on a Zen 4, as a fraction of memcpy's bandwidth in one run:
// 4096x4096 float32 by 4x4 SSE strips of 32 columns 0.40; by 16x16 tiles in
// strips of 16 columns 0.24, of 32 0.40, of 64 0.51, in 512x512 blocks of
// 64-column strips 0.66 (blocks of 256 0.60, of 1024 0.65). 64 MiB of float64,
// bfloat16 and int8, buffered tiles against register tiles: 0.40 and 0.82, 0.12
// and 0.52 (0.38 with 32x16 tiles, which wrote half lines), 0.07 and 0.40.
#define STRATA_AVX512 __attribute__((target("avx512f,avx512bw")))

constexpr int64_t kTileBlock = 1024;
constexpr int64_t kStripBytes = 512;

// NOTE [ Prefetching a transpose's source lines ]
// A tile reads one 64-byte line from each of kCols source lines (of 64 to 512
// lines a strip walks at once), each a source row apart: too many streams
// for the hardware prefetchers, and where the row is a power of two bytes
// long (8192 int8, 16384 bfloat16), all in the few L2 sets one column maps
// to. So each tile first asks for the lines of the tile kPrefetchTiles ahead
// in its walk, into L2. Measured on an AMD EPYC (Zen 4, 2 cores, memcpy of
// host carriers 24 GB/s), six runs alternating the binaries, medians in ms:
// int8 8192x8192 8.45 -> 7.25, bfloat16 8192 5.4 -> 5.1, int8 4096 1.96 ->
// 1.81, float32 8192 4.95 -> 4.57, float64 and bfloat16 4096 within noise;
// two tiles ahead as good as one, four and eight worse, into L1 (T0) worse
// for bfloat16 (5.2 -> 6.3), and walking each group of source lines along
// its rows instead of strips worse for both.
constexpr int64_t kPrefetchTiles = 2;

bool Avx512Available() {
  static const bool supported =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return supported;
}

// NOTE [ Tile loops are unrolled ]
// At -O2 (`bazel build -c opt`) GCC kept the loops over a tile's registers
// (r[16], t[16]) as loops, so every register of a tile was stored to the
// stack and loaded again between the steps of its transpose. Each such loop
// has a `#pragma GCC unroll` of its trip count, and -O2 builds keep the
// tiles in registers (ops_benchmark on a Zen 4, 2 rounds alternating: in
// cache int8 20.5-21.6 -> 14.6-15.6 us, float32 18.0-19.1 -> 11.7; 64 MiB
// float64 10.1-10.3 -> 4.6-4.7 ms, int8 8.6-10.1 -> 7.1-7.4). At -O3
// (--config=opt, the benchmarks' build) GCC unrolls them itself: the same
// within noise (in cache int8 12.3-12.8 us either way).

// The low and the high 64-bit pairs of each 128-bit lane of a and b,
// interleaved (unpacklo_pd and unpackhi_pd on float lanes).
STRATA_AVX512 inline __m512 LowPairs(__m512 a, __m512 b) {
  return _mm512_castpd_ps(
      _mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}
STRATA_AVX512 inline __m512 HighPairs(__m512 a, __m512 b) {
  return _mm512_castpd_ps(
      _mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
}

// The 16x16 transpose of the 32-bit lanes of r[0..15], in place: r[c] then
// holds lane c of the 16 registers (its own inverse).
STRATA_AVX512 inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16];
  // Pairs of rows interleaved, then pairs of pairs: r[4q + p] holds, in its
  // 128-bit lane L, rows 4q..4q+3 of column 4L + p.
#pragma GCC unroll 16
  for (int k = 0; k < 16; k += 2) {
    t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
  }
#pragma GCC unroll 16
  for (int k = 0; k < 16; k += 4) {
    r[k] = LowPairs(t[k], t[k + 2]);
    r[k + 1] = HighPairs(t[k], t[k + 2]);
    r[k + 2] = LowPairs(t[k + 1], t[k + 3]);
    r[k + 3] = HighPairs(t[k + 1], t[k + 3]);
  }
  // Then the 128-bit lanes: the even and the odd lanes of row groups 0 and
  // 1, and of 2 and 3, and once more, leave column c whole in r[c].
#pragma GCC unroll 16
  for (int k = 0; k < 4; ++k) {
    t[k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
    t[4 + k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xDD);
    t[8 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
    t[12 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xDD);
  }
#pragma GCC unroll 16
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xDD);
    r[4 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0xDD);
  }
}

// r[c] = 32-bit lane c of the 16 lines of 64 bytes at `from`, `line_bytes`
// apart: the 16x16 transpose of their 32-bit lanes.
STRATA_AVX512 inline void LoadTransposed16x16(const char* from,
                                              int64_t line_bytes,
                                              __m512 r[16]) {
#pragma GCC unroll 16
  for (int k = 0; k < 16; ++k) r[k] = _mm512_loadu_ps(from + k * line_bytes);
  Transpose16x16(r);
}

template <bool kStream>
STRATA_AVX512 inline void Store64(char* to, __m512 v) {
  if constexpr (kStream) {
    _mm512_stream_ps(reinterpret_cast<float*>(to), v);
  } else {
    _mm512_storeu_ps(reinterpret_cast<float*>(to), v);
  }
}

// A tile writes kRows destination rows of kCols elements each, of kStore
// bytes per store; `to` and `from` are its corners, the strides in bytes.
struct Tile4 {  // 16x16 of 4 bytes.
  static constexpr int64_t kRows = 16, kCols = 16, kStore = 64;
  template <bool kStream>
  STRATA_AVX512 static inline void Copy(char* to, const char* from,
                                        int64_t to_row_bytes,
                                        int64_t from_column_bytes) {
    __m512 r[16];
    LoadTransposed16x16(from, from_column_bytes, r);
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) Store64<kStream>(to + k * to_row_bytes, r[k]);
  }
};

struct Tile8 {  // 8x8 of 8 bytes.
  static constexpr int64_t kRows = 8, kCols = 8, kStore = 64;
  template <bool kStream>
  STRATA_AVX512 static inline void Copy(char* to, const char* from,
                                        int64_t to_row_bytes,
                                        int64_t from_column_bytes) {
    __m512d r[8], t[8];
#pragma GCC unroll 16
    for (int k = 0; k < 8; ++k)
      r[k] = _mm512_loadu_pd(from + k * from_column_bytes);
      // Rows a, b: (a0 b0 a2 b2 ...) and (a1 b1 a3 b3 ...).
#pragma GCC unroll 16
    for (int k = 0; k < 8; k += 2) {
      t[k] = _mm512_unpacklo_pd(r[k], r[k + 1]);
      t[k + 1] = _mm512_unpackhi_pd(r[k], r[k + 1]);
    }
    // Then rows a..d: (a0 b0 c0 d0 a4 b4 c4 d4) and so on.
    const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i odd = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
#pragma GCC unroll 16
    for (int k = 0; k < 8; k += 4) {
      r[k] = _mm512_permutex2var_pd(t[k], even, t[k + 2]);
      r[k + 2] = _mm512_permutex2var_pd(t[k], odd, t[k + 2]);
      r[k + 1] = _mm512_permutex2var_pd(t[k + 1], even, t[k + 3]);
      r[k + 3] = _mm512_permutex2var_pd(t[k + 1], odd, t[k + 3]);
    }
    // Then the halves: column c whole.
#pragma GCC unroll 16
    for (int k = 0; k < 4; ++k) {
      t[k] = _mm512_shuffle_f64x2(r[k], r[4 + k], 0x44);
      t[4 + k] = _mm512_shuffle_f64x2(r[k], r[4 + k], 0xEE);
    }
#pragma GCC unroll 16
    for (int k = 0; k < 8; ++k) {
      Store64<kStream>(to + k * to_row_bytes, _mm512_castpd_ps(t[k]));
    }
  }
};

struct Tile2 {  // 32x32 of 2 bytes.
  static constexpr int64_t kRows = 32, kCols = 32, kStore = 64;
  template <bool kStream>
  STRATA_AVX512 static inline void Copy(char* to, const char* from,
                                        int64_t to_row_bytes,
                                        int64_t from_column_bytes) {
    // 32-bit lane c of source lines 0..15 (in low[c]) and 16..31 (in
    // high[c]) holds their elements 2c and 2c + 1: the even halves of both
    // are destination row 2c, the odd ones row 2c + 1, each a whole line.
    __m512 low[16], high[16];
    LoadTransposed16x16(from, from_column_bytes, low);
    LoadTransposed16x16(from + 16 * from_column_bytes, from_column_bytes, high);
    static constexpr uint16_t kEven[32] = {
        0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
        32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62};
    static constexpr uint16_t kOdd[32] = {
        1,  3,  5,  7,  9,  11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
        33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
    const __m512i even = _mm512_loadu_si512(kEven);
    const __m512i odd = _mm512_loadu_si512(kOdd);
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) {
      const __m512i a = _mm512_castps_si512(low[c]);
      const __m512i b = _mm512_castps_si512(high[c]);
      Store64<kStream>(
          to + 2 * c * to_row_bytes,
          _mm512_castsi512_ps(_mm512_permutex2var_epi16(a, even, b)));
      Store64<kStream>(
          to + (2 * c + 1) * to_row_bytes,
          _mm512_castsi512_ps(_mm512_permutex2var_epi16(a, odd, b)));
    }
  }
};

// The 16x16 transpose of r's 32-bit lanes, stored as 16 destination rows of
// 64 bytes.
template <bool kStream>
STRATA_AVX512 inline void StoreTransposed16x16(__m512 r[16], char* to,
                                               int64_t to_row_bytes) {
  Transpose16x16(r);
#pragma GCC unroll 16
  for (int k = 0; k < 16; ++k) Store64<kStream>(to + k * to_row_bytes, r[k]);
}

template <bool kStream>
STRATA_AVX512 inline void Store32(char* to, __m256i v) {
  if constexpr (kStream) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to), v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), v);
  }
}

// NOTE [ Thin 2-byte transposes ]
// A 2-byte transpose whose destination rows (or source lines) are 16 to 31
// elements long holds no 32x32 tile. Half of Tile2 still works: 16 source
// lines of 32 elements give 32 destination rows of 16 (32 bytes each, the
// even and the odd 16-bit halves of one register: Tile2Thin); and backwards,
// 32 source lines of 16 elements give 16 destination rows of 32, each line
// pair interleaved into one register before the 16x16 transpose (Tile2Tall).
// Measured in one run of ops_benchmark (AMD EPYC, AVX-512), 64 MiB of
// bfloat16 with 16-element rows as a fraction of memcpy: SSE blocks 0.28
// (thin) and 0.33 (tall); these tiles 1.03 and 1.41 (memcpy 40 GB/s).
constexpr uint16_t kEvenThenOddHalves[32] = {
    0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
    1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
constexpr uint16_t kInterleavedHalves[32] = {
    0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
    8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};

struct Tile2Thin {  // 32 rows x 16 columns of 2 bytes.
  static constexpr int64_t kRows = 32, kCols = 16, kStore = 32;
  template <bool kStream>
  STRATA_AVX512 static inline void Copy(char* to, const char* from,
                                        int64_t to_row_bytes,
                                        int64_t from_column_bytes) {
    // 32-bit lane k of r[c] holds elements 2c and 2c + 1 of source line k:
    // destination rows 2c and 2c + 1 are its even and odd halves.
    __m512 r[16];
    LoadTransposed16x16(from, from_column_bytes, r);
    const __m512i halves = _mm512_loadu_si512(kEvenThenOddHalves);
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) {
      const __m512i rows =
          _mm512_permutexvar_epi16(halves, _mm512_castps_si512(r[c]));
      Store32<kStream>(to + 2 * c * to_row_bytes, _mm512_castsi512_si256(rows));
      Store32<kStream>(to + (2 * c + 1) * to_row_bytes,
                       _mm512_extracti64x4_epi64(rows, 1));
    }
  }
};

struct Tile2Tall {  // 16 rows x 32 columns of 2 bytes.
  static constexpr int64_t kRows = 16, kCols = 32, kStore = 64;
  template <bool kStream>
  STRATA_AVX512 static inline void Copy(char* to, const char* from,
                                        int64_t to_row_bytes,
                                        int64_t from_column_bytes) {
    // Source lines 2c and 2c + 1 (32 bytes each) interleaved: 32-bit lane m
    // holds destination row m's columns 2c and 2c + 1.
    const __m512i interleave = _mm512_loadu_si512(kInterleavedHalves);
    __m512 r[16];
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) {
      const char* line = from + 2 * c * from_column_bytes;
      const __m512i lines = _mm512_inserti64x4(
          _mm512_castsi256_si512(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line))),
          _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(line + from_column_bytes)),
          1);
      r[c] = _mm512_castsi512_ps(_mm512_permutexvar_epi16(interleave, lines));
    }
    StoreTransposed16x16<kStream>(r, to, to_row_bytes);
  }
};

// The byte moves of Tile1 (below), shared by its thin and tall forms: within
// each 128-bit lane, the bytes grouped by position mod 4, then the 32-bit
// groups gathered so that 128-bit lane k holds the bytes of position k. Both
// permutations are 4x4 transposes, so each is its own inverse.
constexpr uint8_t kBytesByPosition[64] = {
    0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
    0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
    0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
    0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
constexpr uint32_t kGatherByPosition[16] = {0, 4, 8,  12, 1, 5, 9,  13,
                                            2, 6, 10, 14, 3, 7, 11, 15};
STRATA_AVX512 inline __m512i GroupBytesByPosition(__m512i v) {
  return _mm512_permutexvar_epi32(
      _mm512_loadu_si512(kGatherByPosition),
      _mm512_shuffle_epi8(v, _mm512_loadu_si512(kBytesByPosition)));
}
STRATA_AVX512 inline __m512i UngroupBytesByPosition(__m512i v) {
  return _mm512_shuffle_epi8(
      _mm512_permutexvar_epi32(_mm512_loadu_si512(kGatherByPosition), v),
      _mm512_loadu_si512(kBytesByPosition));
}

template <bool kStream>
STRATA_AVX512 inline void Store16(char* to, __m128i v) {
  if constexpr (kStream) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(to), v);
  } else {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to), v);
  }
}

// NOTE [ Thin byte transposes ]
// A 1-byte transpose whose destination rows (or source lines) are 16 to 63
// bytes long holds no 64x64 tile. One group of Tile1 still works: 16 source
// lines of 64 bytes give 64 destination rows of 16 bytes, each a 128-bit lane
// (Tile1Thin); and the same steps backwards take 64 source lines of 16 bytes
// into 16 destination rows of 64 bytes (Tile1Tall), for an activation's
// [features, tokens] to [tokens, features] and back. Measured in one run of
// ops_benchmark, 64 MiB of int8 with 16-byte rows as a fraction of memcpy:
// buffered tiles 0.37 (thin) and 0.38 (tall), these tiles 1.73 and 1.40:
// above 1, as the 8-byte and thin 4-byte tiles are, because glibc's memcpy
// moves 64 MiB here at about 13 GB/s (between two host carriers' huge pages
// too: BM_MemcpyHostCarriers64MiB), where these streaming stores reach 25.
struct Tile1Thin {  // 64 rows x 16 columns of 1 byte.
  static constexpr int64_t kRows = 64, kCols = 16, kStore = 16;
  template <bool kStream>
  STRATA_AVX512 static inline void Copy(char* to, const char* from,
                                        int64_t to_row_bytes,
                                        int64_t from_column_bytes) {
    __m512 r[16];
    LoadTransposed16x16(from, from_column_bytes, r);
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) {
      const __m512i rows = GroupBytesByPosition(_mm512_castps_si512(r[c]));
      char* row = to + 4 * c * to_row_bytes;
      Store16<kStream>(row, _mm512_castsi512_si128(rows));
      Store16<kStream>(row + to_row_bytes, _mm512_extracti32x4_epi32(rows, 1));
      Store16<kStream>(row + 2 * to_row_bytes,
                       _mm512_extracti32x4_epi32(rows, 2));
      Store16<kStream>(row + 3 * to_row_bytes,
                       _mm512_extracti32x4_epi32(rows, 3));
    }
  }
};

struct Tile1Tall {  // 16 rows x 64 columns of 1 byte.
  static constexpr int64_t kRows = 16, kCols = 64, kStore = 64;
  template <bool kStream>
  STRATA_AVX512 static inline void Copy(char* to, const char* from,
                                        int64_t to_row_bytes,
                                        int64_t from_column_bytes) {
    // Source lines 4c..4c+3 (16 bytes each) as the 128-bit lanes of one
    // register: Tile1Thin's rows, taken back through its steps.
    __m512 r[16];
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) {
      const char* line = from + 4 * c * from_column_bytes;
      __m512i lines = _mm512_castsi128_si512(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(line)));
      lines = _mm512_inserti32x4(
          lines,
          _mm_loadu_si128(
              reinterpret_cast<const __m128i*>(line + from_column_bytes)),
          1);
      lines = _mm512_inserti32x4(
          lines,
          _mm_loadu_si128(
              reinterpret_cast<const __m128i*>(line + 2 * from_column_bytes)),
          2);
      lines = _mm512_inserti32x4(
          lines,
          _mm_loadu_si128(
              reinterpret_cast<const __m128i*>(line + 3 * from_column_bytes)),
          3);
      r[c] = _mm512_castsi512_ps(UngroupBytesByPosition(lines));
    }
    StoreTransposed16x16<kStream>(r, to, to_row_bytes);
  }
};

struct Tile1 {  // 64x64 of 1 byte.
  static constexpr int64_t kRows = 64, kCols = 64, kStore = 64;
  template <bool kStream>
  STRATA_AVX512 static inline void Copy(char* to, const char* from,
                                        int64_t to_row_bytes,
                                        int64_t from_column_bytes) {
    // 32-bit lane c of source lines 16g..16g+15 holds their bytes 4c..4c+3;
    // grouped by position, 128-bit lane k holds byte 4c + k of the 16 lines
    // in order: by_line[g][c].
    __m512i by_line[4][16];
#pragma GCC unroll 16
    for (int g = 0; g < 4; ++g) {
      __m512 r[16];
      LoadTransposed16x16(from + 16 * g * from_column_bytes, from_column_bytes,
                          r);
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c) {
        by_line[g][c] = GroupBytesByPosition(_mm512_castps_si512(r[c]));
      }
    }
    // Destination row 4c + k is 128-bit lane k of by_line[0..3][c]: a 4x4
    // transpose of 128-bit lanes.
#pragma GCC unroll 16
    for (int c = 0; c < 16; ++c) {
      const __m512i t0 =
          _mm512_shuffle_i32x4(by_line[0][c], by_line[1][c], 0x44);
      const __m512i t1 =
          _mm512_shuffle_i32x4(by_line[0][c], by_line[1][c], 0xEE);
      const __m512i t2 =
          _mm512_shuffle_i32x4(by_line[2][c], by_line[3][c], 0x44);
      const __m512i t3 =
          _mm512_shuffle_i32x4(by_line[2][c], by_line[3][c], 0xEE);
      char* row = to + 4 * c * to_row_bytes;
      Store64<kStream>(row,
                       _mm512_castsi512_ps(_mm512_shuffle_i32x4(t0, t2, 0x88)));
      Store64<kStream>(row + to_row_bytes,
                       _mm512_castsi512_ps(_mm512_shuffle_i32x4(t0, t2, 0xDD)));
      Store64<kStream>(row + 2 * to_row_bytes,
                       _mm512_castsi512_ps(_mm512_shuffle_i32x4(t1, t3, 0x88)));
      Store64<kStream>(row + 3 * to_row_bytes,
                       _mm512_castsi512_ps(_mm512_shuffle_i32x4(t1, t3, 0xDD)));
    }
  }
};

// The whole tiles of a transpose of T, in strips inside blocks (NOTE
// [ Transposes in AVX-512 registers ]); *rows_done x *cols_done is what they
// cover, from the corner.
template <typename T, typename Tile, bool kStream>
STRATA_AVX512 void TransposeTiles(T* to, const T* from, int64_t ts, int64_t fs,
                                  int64_t rows, int64_t cols,
                                  int64_t* rows_done, int64_t* cols_done) {
  constexpr int64_t kStrip = kStripBytes / sizeof(T);
  static_assert(kStrip % Tile::kCols == 0 && kTileBlock % kStrip == 0 &&
                kTileBlock % Tile::kRows == 0);
  const int64_t tiled_rows = rows / Tile::kRows * Tile::kRows;
  const int64_t tiled_cols = cols / Tile::kCols * Tile::kCols;
  const int64_t to_row_bytes = ts * static_cast<int64_t>(sizeof(T));
  const int64_t from_column_bytes = fs * static_cast<int64_t>(sizeof(T));
  for (int64_t i0 = 0; i0 < tiled_rows; i0 += kTileBlock) {
    const int64_t i1 = std::min(i0 + kTileBlock, tiled_rows);
    for (int64_t j0 = 0; j0 < tiled_cols; j0 += kTileBlock) {
      const int64_t j1 = std::min(j0 + kTileBlock, tiled_cols);
      for (int64_t s0 = j0; s0 < j1; s0 += kStrip) {
        const int64_t s1 = std::min(s0 + kStrip, j1);
        for (int64_t i = i0; i < i1; i += Tile::kRows) {
          for (int64_t j = s0; j < s1; j += Tile::kCols) {
            // The source lines of the tile kPrefetchTiles ahead in this walk
            // (NOTE [ Prefetching a transpose's source lines ]).
            // Stepped as the walk steps, so that a strip narrower than
            // kPrefetchTiles tiles (the last of a block) never names a
            // tile outside it.
            int64_t ahead_i = i, ahead_j = j;
            for (int t = 0; t < kPrefetchTiles; ++t) {
              ahead_j += Tile::kCols;
              if (ahead_j >= s1) {
                ahead_j = s0;
                ahead_i += Tile::kRows;
              }
            }
            if (ahead_i < i1) {
              const char* ahead =
                  reinterpret_cast<const char*>(from + ahead_j * fs + ahead_i);
              for (int k = 0; k < Tile::kCols; ++k) {
                _mm_prefetch(ahead + k * from_column_bytes, _MM_HINT_T1);
              }
            }
            Tile::template Copy<kStream>(
                reinterpret_cast<char*>(to + i * ts + j),
                reinterpret_cast<const char*>(from + j * fs + i), to_row_bytes,
                from_column_bytes);
          }
        }
      }
    }
  }
  if constexpr (kStream) _mm_sfence();
  *rows_done = tiled_rows;
  *cols_done = tiled_cols;
}

// The tile of elements of T (1, 2, 4 or 8 bytes).
template <typename T>
using TileOf = std::conditional_t<
    sizeof(T) == 1, Tile1,
    std::conditional_t<sizeof(T) == 2, Tile2,
                       std::conditional_t<sizeof(T) == 4, Tile4, Tile8>>>;

// Whether the AVX-512 tiles of `Tile` copied this transpose (and did it).
template <typename T, typename Tile = TileOf<T>>
bool TransposeByAvx512(T* to, const T* from, int64_t ts, int64_t fs,
                       int64_t rows, int64_t cols) {
  if constexpr (std::is_same_v<Tile, Tile2>) {
    // Rows or lines too short for a 32x32 tile (NOTE [ Thin 2-byte
    // transposes ]).
    if (cols < Tile2::kCols && cols >= Tile2Thin::kCols) {
      return TransposeByAvx512<T, Tile2Thin>(to, from, ts, fs, rows, cols);
    }
    if (rows < Tile2::kRows && rows >= Tile2Tall::kRows) {
      return TransposeByAvx512<T, Tile2Tall>(to, from, ts, fs, rows, cols);
    }
  }
  if constexpr (std::is_same_v<Tile, Tile1>) {
    // Rows or lines too short for a 64x64 tile (NOTE [ Thin byte
    // transposes ]).
    if (cols < Tile1::kCols && cols >= Tile1Thin::kCols) {
      return TransposeByAvx512<T, Tile1Thin>(to, from, ts, fs, rows, cols);
    }
    if (rows < Tile1::kRows && rows >= Tile1Tall::kRows) {
      return TransposeByAvx512<T, Tile1Tall>(to, from, ts, fs, rows, cols);
    }
  }
  if (rows < Tile::kRows || cols < Tile::kCols || !Avx512Available())
    return false;
  int64_t rows_done, cols_done;
  if (Streams(to, ts, rows, cols, sizeof(T), Tile::kStore)) {
    TransposeTiles<T, Tile, true>(to, from, ts, fs, rows, cols, &rows_done,
                                  &cols_done);
  } else {
    TransposeTiles<T, Tile, false>(to, from, ts, fs, rows, cols, &rows_done,
                                   &cols_done);
  }
  if (cols_done < cols) {  // The columns right of the tiles, beside them.
    TransposePortable(to + cols_done, from + cols_done * fs, ts, fs, rows_done,
                      cols - cols_done);
  }
  if (rows_done < rows) {  // The rows below the tiles, whole.
    TransposePortable(to + rows_done * ts, from + rows_done, ts, fs,
                      rows - rows_done, cols);
  }
  return true;
}
#endif  // x86-64 with GCC or Clang

// The transpose of elements of T: by AVX-512 tiles where the processor has
// them and `portable` is false, else as processors without them do it.
template <typename T>
void TransposeOf(void* to, const void* from, int64_t ts, int64_t fs,
                 int64_t rows, int64_t cols, bool portable) {
  T* t = static_cast<T*>(to);
  const T* f = static_cast<const T*>(from);
#if defined(STRATA_AVX512_TRANSPOSE)
  if (!portable && TransposeByAvx512(t, f, ts, fs, rows, cols)) return;
#endif
  TransposePortable(t, f, ts, fs, rows, cols);
}

// TransposeOf the unsigned type of `width` bytes, or an element at a time
// for any other width.
void TransposeByWidth(void* to, const void* from, int64_t ts, int64_t fs,
                      int64_t rows, int64_t cols, int width, bool portable) {
  switch (width) {
    case 1:
      return TransposeOf<uint8_t>(to, from, ts, fs, rows, cols, portable);
    case 2:
      return TransposeOf<uint16_t>(to, from, ts, fs, rows, cols, portable);
    case 4:
      return TransposeOf<uint32_t>(to, from, ts, fs, rows, cols, portable);
    case 8:
      return TransposeOf<uint64_t>(to, from, ts, fs, rows, cols, portable);
    default: {
      char* t = static_cast<char*>(to);
      const char* f = static_cast<const char*>(from);
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          std::memcpy(t + (i * ts + j) * width, f + (j * fs + i) * width,
                      width);
        }
      }
    }
  }
}

}  // namespace

void TransposeCopy(void* to, const void* from, int64_t to_row_stride,
                   int64_t from_column_stride, int64_t rows, int64_t cols,
                   int element_bytes) {
  TransposeByWidth(to, from, to_row_stride, from_column_stride, rows, cols,
                   element_bytes, /*portable=*/false);
}

void PortableTransposeCopy(void* to, const void* from, int64_t to_row_stride,
                           int64_t from_column_stride, int64_t rows,
                           int64_t cols, int element_bytes) {
  TransposeByWidth(to, from, to_row_stride, from_column_stride, rows, cols,
                   element_bytes, /*portable=*/true);
}

const char* TransposeKernelName() {
#if defined(STRATA_AVX512_TRANSPOSE)
  if (Avx512Available()) return "AVX-512 register tiles";
#endif
  return "SSE blocks / buffered tiles";
}

}  // namespace ops_internal
}  // namespace strata
