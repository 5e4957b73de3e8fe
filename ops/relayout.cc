#include "ops/relayout.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/algebra.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/internal/iterate.h"
#include "ops/internal/scale_grid.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

using ops_internal::AlignedAccess;
using ops_internal::ModeAccess;

constexpr char kOp[] = "Relayout";

// The first run of one scale along each mode, through L_1 o S_0 (a ragged
// mode merges S_0's coordinates in a stride-0 leaf of L_1): the blocks
// (NOTE [ Relayout without copying codes ]).
std::vector<int64_t> BlocksOf(const std::vector<int64_t>& shape,
                              const std::vector<ModeAccess>& s0,
                              const Layout& l1) {
  std::vector<int64_t> blocks(shape.size(), 1);
  for (size_t m = 0; m < shape.size(); ++m) {
    if (shape[m] == 0) continue;
    const int64_t first = l1(s0[m].at(0));
    int64_t run = 1;
    while (run < shape[m] && l1(s0[m].at(run)) == first) ++run;
    blocks[m] = shape[m] == 0 ? 1 : run;
  }
  return blocks;
}

// A carrier for the result: `source` itself where it is a host carrier, else
// a host copy of its bytes.
absl::StatusOr<std::shared_ptr<Carrier>> HostOrCopy(
    const std::shared_ptr<Carrier>& source, int level) {
  if (source->class_name() == "host") return source;
  const SimpleDType* dtype = source->dtype().AsSimple();
  if (dtype == nullptr || (source->size() > 0 && source->data() == nullptr)) {
    return ValueErrorCat(kOp, ": level ", level, "'s ", source->class_name(),
                         " carrier holds no host data to copy");
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<HostCarrier> copy,
                          HostCarrier::Create(*dtype, source->size()));
  STRATA_ASSIGN_OR_RETURN(const int64_t bytes,
                          StorageBytes(*dtype, source->size()));
  if (bytes > 0) std::memcpy(copy->mutable_data(), source->data(), bytes);
  return std::shared_ptr<Carrier>(std::move(copy));
}

// The new scale level's carrier, of the codes' carrier class where Strata
// can make one anew (NOTE [ Relayout without copying codes ]); otherwise a
// host carrier, and the caller copies the other levels into host carriers.
struct ScaleCarrier {
  std::shared_ptr<Carrier> carrier;
  bool shares_class;
};

absl::StatusOr<ScaleCarrier> MakeScaleCarrier(
    const Carrier& codes, const SimpleDType& dtype, int64_t count,
    absl::FunctionRef<void(uint8_t*)> write) {
  const absl::string_view class_name = codes.class_name();
  if (class_name == "mapped") {
    STRATA_ASSIGN_OR_RETURN(const int64_t bytes, StorageBytes(dtype, count));
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const MappedRegion> region,
                            MappedRegion::Anonymous(bytes, write));
    STRATA_ASSIGN_OR_RETURN(
        std::shared_ptr<MappedCarrier> carrier,
        MappedCarrier::Create(dtype, count, std::move(region), 0));
    return ScaleCarrier{std::move(carrier), true};
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<HostCarrier> host,
                          HostCarrier::Create(dtype, count));
  write(static_cast<uint8_t*>(host->mutable_data()));
  if (class_name == "host") return ScaleCarrier{std::move(host), true};
  if (class_name == "external") {
    // Memory Strata owns, handed out as an external carrier whose deleter
    // lets it go: the class of a DLPack import, made anew.
    void* data = host->mutable_data();
    STRATA_ASSIGN_OR_RETURN(
        std::shared_ptr<ExternalCarrier> external,
        ExternalCarrier::Create(
            dtype, count, data,
            [keep = std::move(host)]() mutable { keep.reset(); }));
    return ScaleCarrier{std::move(external), true};
  }
  return ScaleCarrier{std::move(host), false};
}

// Whether `l1` holds its grid in row-major order: leaving out stride-0 leaves
// (a ragged grid's merged coordinates), the last mode is fastest, each mode's
// leaves in order, each stride at least the extent of all faster ones (a
// slice of a row-major grid keeps the whole grid's row pitch).
bool IsRowMajorGrid(const Layout& l1) {
  const auto modes = TopLevelModes(l1);
  int64_t expected = 1;
  for (size_t m = modes.size(); m-- > 0;) {
    const absl::Span<const int64_t> extents = modes[m].shape().leaves();
    const absl::Span<const int64_t> strides = modes[m].stride().leaves();
    for (size_t k = 0; k < extents.size(); ++k) {
      if (strides[k] == 0 || extents[k] == 1) continue;
      if (strides[k] < expected) return false;
      if (__builtin_mul_overflow(strides[k], extents[k], &expected)) {
        return false;
      }
    }
  }
  return true;
}

// S_0 from the template's modes, each composed with a compact layout of L_0's
// mode so that the result is congruent with L_0.
absl::StatusOr<Layout> CongruentAdjacent(const Layout& l0,
                                         const Layout& template_s0) {
  const auto l0_modes = TopLevelModes(l0);
  const auto s0_modes = TopLevelModes(template_s0);
  if (l0_modes.size() != s0_modes.size()) {
    return ValueErrorCat(kOp, ": L_0 ", l0.ToString(), " and the scales' S_0 ",
                         template_s0.ToString(), " differ in rank");
  }
  if (l0_modes.empty()) return template_s0;
  std::vector<Layout> modes;
  for (size_t m = 0; m < l0_modes.size(); ++m) {
    STRATA_ASSIGN_OR_RETURN(Layout compact,
                            Layout::ColumnMajor(l0_modes[m].shape()));
    absl::StatusOr<Layout> composed = Composition(s0_modes[m], compact);
    if (!composed.ok() || composed->shape() != l0_modes[m].shape()) {
      return ValueErrorCat(
          kOp, ": mode ", m, " of L_0, ", l0_modes[m].ToString(),
          ", cannot address the new scales' S_0 mode ", s0_modes[m].ToString());
    }
    modes.push_back(*std::move(composed));
  }
  return MakeLayout(modes);
}

// NOTE [ Moving scales by tiles ]
// Between row-major scales and the 128x4 tiles, one 16-byte row of a tile
// (4 scales of each of rows i, i+32, i+64, i+96) gathers 4 bytes from each
// of 4 rows; 4 such rows of 4 neighbouring tiles are a 4x4 transpose of
// 4-byte words of 16 bytes of each of those 4 grid rows. So a 128-row x
// 16-column stretch of one-byte scales moves as 32 transposes of 4 loads
// and 4 stores of 16 bytes, not 2048 one-byte copies. The tables say
// whether a Tensor's scales have that shape (checked per tile, O(grid rows
// + grid columns)); the rest moves scale by scale.

// Per grid row and grid column (one entry per block along that mode), the
// carrier byte offset contributed by that mode.
std::vector<int64_t> BlockOffsets(const ModeAccess& access, int64_t extent,
                                  int64_t block, int64_t width) {
  std::vector<int64_t> offsets;
  for (int64_t c = 0; c < extent; c += block) {
    offsets.push_back(width * access.at(c));
  }
  return offsets;
}

// 4 words (4 bytes) of each of the 16-byte rows at in + in_at[g] to the
// 16-byte rows at out + out_at[j]: out row j, word g = in row g, word j.
inline void Transpose4x4Words(const uint8_t* in, const int64_t* in_at,
                              uint8_t* out, const int64_t* out_at) {
#if defined(__SSE2__)
  const __m128i a0 =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + in_at[0]));
  const __m128i a1 =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + in_at[1]));
  const __m128i a2 =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + in_at[2]));
  const __m128i a3 =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + in_at[3]));
  const __m128i t0 = _mm_unpacklo_epi32(a0, a1);
  const __m128i t1 = _mm_unpacklo_epi32(a2, a3);
  const __m128i t2 = _mm_unpackhi_epi32(a0, a1);
  const __m128i t3 = _mm_unpackhi_epi32(a2, a3);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + out_at[0]),
                   _mm_unpacklo_epi64(t0, t1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + out_at[1]),
                   _mm_unpackhi_epi64(t0, t1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + out_at[2]),
                   _mm_unpacklo_epi64(t2, t3));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + out_at[3]),
                   _mm_unpackhi_epi64(t2, t3));
#else
  uint8_t rows[4][16];
  for (int g = 0; g < 4; ++g) std::memcpy(rows[g], in + in_at[g], 16);
  for (int j = 0; j < 4; ++j) {
    for (int g = 0; g < 4; ++g) {
      std::memcpy(out + out_at[j] + 4 * g, rows[g] + 4 * j, 4);
    }
  }
#endif
}

// Whether grid rows [base, base + 128) and grid columns [k, k + 16) are a
// tile stretch: on the row-major side 16 consecutive bytes per row, on the
// tiled side rows i + 32q at i's offset + 4q and columns 4j + c at 4j's + c.
bool IsTileStretch(const std::vector<int64_t>& plain_cols,
                   const std::vector<int64_t>& tiled_rows,
                   const std::vector<int64_t>& tiled_cols, int64_t base,
                   int64_t k) {
  for (int64_t c = 1; c < 16; ++c) {
    if (plain_cols[k + c] != plain_cols[k] + c) return false;
    if (tiled_cols[k + c] != tiled_cols[k + c / 4 * 4] + c % 4) return false;
  }
  for (int64_t i = 0; i < 32; ++i) {
    for (int64_t q = 1; q < 4; ++q) {
      if (tiled_rows[base + 32 * q + i] != tiled_rows[base + i] + 4 * q) {
        return false;
      }
    }
  }
  return true;
}

// The move of NOTE [ Moving scales by tiles ] for one-byte scales, when the
// last two modes are a tile grid on one side and row-major on the other;
// false (nothing written) otherwise.
bool MoveByTiles(const std::vector<int64_t>& shape,
                 const std::vector<int64_t>& blocks,
                 const std::vector<ModeAccess>& from_at,
                 const std::vector<ModeAccess>& to_at, const uint8_t* from,
                 uint8_t* to) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2) return false;
  for (const bool rows_first : {true, false}) {
    const int64_t row_mode = rows_first ? rank - 2 : rank - 1;
    const int64_t col_mode = rows_first ? rank - 1 : rank - 2;
    const auto offsets = [&](const std::vector<ModeAccess>& at, int64_t m) {
      return BlockOffsets(at[m], shape[m], blocks[m], 1);
    };
    const std::vector<int64_t> from_rows = offsets(from_at, row_mode);
    const std::vector<int64_t> from_cols = offsets(from_at, col_mode);
    const std::vector<int64_t> to_rows = offsets(to_at, row_mode);
    const std::vector<int64_t> to_cols = offsets(to_at, col_mode);
    const int64_t rows = static_cast<int64_t>(from_rows.size());
    const int64_t cols = static_cast<int64_t>(from_cols.size());
    const int64_t full_rows = rows / 128 * 128, full_cols = cols / 16 * 16;
    if (full_rows == 0 || full_cols == 0) continue;
    for (const bool to_tiles : {true, false}) {
      const std::vector<int64_t>& plain_cols = to_tiles ? from_cols : to_cols;
      const std::vector<int64_t>& tiled_rows = to_tiles ? to_rows : from_rows;
      const std::vector<int64_t>& tiled_cols = to_tiles ? to_cols : from_cols;
      bool tiles = true;
      for (int64_t r = 0; tiles && r < full_rows; r += 128) {
        for (int64_t k = 0; tiles && k < full_cols; k += 16) {
          tiles = IsTileStretch(plain_cols, tiled_rows, tiled_cols, r, k);
        }
      }
      if (!tiles) continue;
      // Every outer block (the modes before the last two), then the grid.
      std::vector<int64_t> block(rank - 2, 0);
      while (true) {
        int64_t from_base = 0, to_base = 0;
        for (int64_t m = 0; m < rank - 2; ++m) {
          from_base += from_at[m].at(block[m] * blocks[m]);
          to_base += to_at[m].at(block[m] * blocks[m]);
        }
        const uint8_t* in = from + from_base;
        uint8_t* out = to + to_base;
        int64_t in_at[4], out_at[4];
        for (int64_t r = 0; r < full_rows; r += 128) {
          for (int64_t k = 0; k < full_cols; k += 16) {
            for (int64_t i = 0; i < 32; ++i) {
              for (int64_t g = 0; g < 4; ++g) {
                if (to_tiles) {  // In: grid row r+i+32g; out: tile k/4+g.
                  in_at[g] = from_rows[r + i + 32 * g] + from_cols[k];
                  out_at[g] = to_rows[r + i] + to_cols[k + 4 * g];
                } else {
                  in_at[g] = from_rows[r + i] + from_cols[k + 4 * g];
                  out_at[g] = to_rows[r + i + 32 * g] + to_cols[k];
                }
              }
              Transpose4x4Words(in, in_at, out, out_at);
            }
          }
        }
        // The edges: rows past the last whole tile, columns past the last
        // whole stretch.
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t k = r < full_rows ? full_cols : 0; k < cols; ++k) {
            out[to_rows[r] + to_cols[k]] = in[from_rows[r] + from_cols[k]];
          }
        }
        int64_t m = rank - 2;
        while (m-- > 0) {
          if (++block[m] * blocks[m] < shape[m]) break;
          block[m] = 0;
        }
        if (m < 0) break;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ScaleBlocks(const Tensor& t) {
  const CompoundDType* format = t.dtype().AsCompound();
  if (format == nullptr || FindBlockScaleRule(*format) == nullptr ||
      t.num_subtensors() < 2) {
    return OneSubtensorRequiredError(absl::StrCat(
        "ScaleBlocks: ", t.dtype().name(), " of ", t.num_subtensors(),
        " subtensors is not a block-scaled Tensor"));
  }
  const Representation& rep = TensorAccess::representation(t);
  const std::vector<int64_t> shape = t.shape();
  return BlocksOf(shape, AlignedAccess(rep.adjacent_layouts()[0], shape),
                  rep.subtensor(1).placement);
}

absl::StatusOr<Tensor> Relayout(const Tensor& t, ScaleLayout scale_layout) {
  const CompoundDType* format = t.dtype().AsCompound();
  const BlockScaleRule* rule =
      format != nullptr ? FindBlockScaleRule(*format) : nullptr;
  if (rule == nullptr || t.num_subtensors() < 2) {
    return OneSubtensorRequiredError(absl::StrCat(
        kOp, ": ", t.dtype().name(), " of ", t.num_subtensors(),
        " subtensors is not a block-scaled Tensor with scales to move"));
  }
  if (scale_layout != ScaleLayout::kRowMajor &&
      scale_layout != ScaleLayout::kSwizzled128x4) {
    return ValueErrorCat(kOp, ": scale layout ", static_cast<int>(scale_layout),
                         " is not row_major (0) or swizzled_128x4 (1)");
  }
  const Representation& rep = TensorAccess::representation(t);
  const Subtensor& codes = rep.subtensor(0);
  const Subtensor& scales = rep.subtensor(1);
  const SimpleDType& scale_dtype = *scales.storage_dtype;
  if (scale_dtype.bits() % 8 != 0) {
    return ValueErrorCat(kOp, ": scales of ", scale_dtype.name(), " (",
                         scale_dtype.bits(), " bits) are not whole bytes");
  }
  const int64_t width = scale_dtype.bits() / 8;
  const std::vector<int64_t> shape = t.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (t.size() > 0 && scales.carrier->data() == nullptr) {
    return ValueErrorCat(kOp, ": the ", scales.carrier->class_name(),
                         " carrier of the scales holds no host data");
  }
  const Layout& s0 = rep.adjacent_layouts()[0];
  const std::vector<ModeAccess> old_access = AlignedAccess(s0, shape);
  std::vector<int64_t> blocks = BlocksOf(shape, old_access, scales.placement);

  // The asked layout's S_0 and L_1 for a compact Tensor of this shape.
  Layout template_s0, l1;
  int64_t count = 0;
  if (scale_layout == ScaleLayout::kRowMajor) {
    STRATA_ASSIGN_OR_RETURN(RowMajorBlockScaledLayouts layouts,
                            MakeRowMajorBlockScaledLayouts(shape, blocks));
    template_s0 = std::move(layouts.adjacent);
    l1 = std::move(layouts.scales);
    count = layouts.scale_count;
  } else {
    const int64_t b = rule->block_size();
    const bool float8_scales = &scale_dtype == dtypes::Float8E4M3FN() ||
                               &scale_dtype == dtypes::Float8E8M0FNU();
    int64_t blocked = -1;
    for (int64_t m = rank; b > 0 && m-- > std::max<int64_t>(0, rank - 2);) {
      if (blocked < 0 && blocks[m] == b && shape[m] % b == 0) blocked = m;
    }
    if (!float8_scales || b == 0 || rank < 2 || blocked < 0) {
      return ValueErrorCat(
          kOp,
          ": scale layout swizzled_128x4 applies to the 1-D formats with "
          "float8 scales, blocked along one of the last two dims of a "
          "Tensor of rank >= 2; ",
          t.dtype().name(), " of shape (", absl::StrJoin(shape, ","),
          ") has blocks (", absl::StrJoin(blocks, ","), ")");
    }
    for (int64_t m = 0; m < rank; ++m) {
      if (m != blocked) blocks[m] = 1;
    }
    STRATA_ASSIGN_OR_RETURN(
        ops_internal::ScaleGrid grid,
        ops_internal::PlanSwizzle(shape, blocked, shape[blocked] / b));
    STRATA_ASSIGN_OR_RETURN(
        BlockScaledValueLayouts layouts,
        MakeBlockScaledValueLayouts(shape, blocks, grid.domain));
    template_s0 = std::move(layouts.adjacent);
    l1 = std::move(grid.l1);
    count = grid.scale_size;
  }
  if (t.size() == 0) count = 0;
  absl::StatusOr<Layout> congruent =
      CongruentAdjacent(codes.placement, template_s0);
  // NOTE [ Keeping a ragged slice's grid ]: a slice of a ragged Tensor whose
  // L_0 modes were factored by the whole Tensor's gcd (256 of 576 rows as
  // (64,4)) cannot address a fresh grid's S_0 ((128,2)). Where row-major is
  // asked and its scales are row-major already, in a carrier of their own,
  // the result keeps S_0 and L_1 (the whole Tensor's grid) and takes a copy
  // of the scale carrier: the same cost, the layout asked.
  int64_t scale_offset = 0;
  bool keep_grid = false;
  if (!congruent.ok()) {
    keep_grid =
        scale_layout == ScaleLayout::kRowMajor &&
        scales.carrier != codes.carrier && IsRowMajorGrid(scales.placement) &&
        (rep.num_levels() < 3 || rep.subtensor(2).carrier != scales.carrier);
    if (!keep_grid) return congruent.status();
    congruent = s0;
    l1 = scales.placement;
    scale_offset = scales.offset;
    count = scales.carrier->size();
  }
  Layout new_s0 = *std::move(congruent);

  // The scales, one block at a time: the block's first coordinate on every
  // mode, through the old S_0 and L_1 and through the new ones.
  //
  // L_1 o S_0, old and new, where separable (NOTE [ Separable compositions ]
  // in ops/internal/iterate.h): each mode a table of carrier offsets, and a
  // block a sum of lookups, not two evaluations of hierarchical layouts.
  const bool walk = t.size() > 0 && !keep_grid;
  std::optional<std::vector<ModeAccess>> old_full =
      walk ? ops_internal::SeparableComposition(scales.placement, s0, shape)
           : std::nullopt;
  std::optional<std::vector<ModeAccess>> new_full =
      walk ? ops_internal::SeparableComposition(l1, new_s0, shape)
           : std::nullopt;
  auto write_scales = [&](uint8_t* to) {
    if (keep_grid) {
      const int64_t bytes = width * count;
      if (bytes > 0) std::memcpy(to, scales.carrier->data(), bytes);
      return;
    }
    if (rank >= 1 && old_full.has_value() && new_full.has_value()) {
      const std::vector<ModeAccess>& from_at = *old_full;
      const std::vector<ModeAccess>& to_at = *new_full;
      const auto* from = static_cast<const uint8_t*>(scales.carrier->data()) +
                         width * scales.offset;
      if (width == 1 && MoveByTiles(shape, blocks, from_at, to_at, from, to)) {
        return;
      }
      // The innermost mode's block offsets, once, merged into segments of
      // blocks whose scales are consecutive bytes on both sides (4 in a row of
      // the 128x4 tiles): one copy per segment.
      const int64_t last = rank - 1;
      struct Segment {
        int64_t from, to, bytes;
      };
      std::vector<Segment> segments;
      for (int64_t c = 0; c < shape[last]; c += blocks[last]) {
        const int64_t from_c = width * from_at[last].at(c);
        const int64_t to_c = width * to_at[last].at(c);
        if (!segments.empty()) {
          Segment& back = segments.back();
          if (from_c == back.from + back.bytes &&
              to_c == back.to + back.bytes) {
            back.bytes += width;
            continue;
          }
        }
        segments.push_back({from_c, to_c, width});
      }
      std::vector<int64_t> block(rank, 0);
      while (true) {
        int64_t from_base = 0, to_base = 0;
        for (int64_t m = 0; m < last; ++m) {
          from_base += width * from_at[m].at(block[m] * blocks[m]);
          to_base += width * to_at[m].at(block[m] * blocks[m]);
        }
        const uint8_t* from_row = from + from_base;
        uint8_t* to_row = to + to_base;
        for (const Segment& segment : segments) {
          if (segment.bytes == 4) {  // The tiles' rows: a fixed-size copy.
            std::memcpy(to_row + segment.to, from_row + segment.from, 4);
          } else {
            std::memcpy(to_row + segment.to, from_row + segment.from,
                        segment.bytes);
          }
        }
        int64_t m = last;
        while (m-- > 0) {
          if (++block[m] * blocks[m] < shape[m]) break;
          block[m] = 0;
        }
        if (m < 0) break;
      }
    } else if (t.size() > 0) {
      const std::vector<ModeAccess> new_access = AlignedAccess(new_s0, shape);
      const auto* from = static_cast<const uint8_t*>(scales.carrier->data());
      std::vector<int64_t> block(rank, 0);
      while (true) {
        int64_t old_i1 = 0, new_i1 = 0;
        for (int64_t m = 0; m < rank; ++m) {
          old_i1 += old_access[m].at(block[m] * blocks[m]);
          new_i1 += new_access[m].at(block[m] * blocks[m]);
        }
        std::memcpy(to + width * l1(new_i1),
                    from + width * (scales.offset + scales.placement(old_i1)),
                    width);
        int64_t m = rank;
        while (m-- > 0) {
          if (++block[m] * blocks[m] < shape[m]) break;
          block[m] = 0;
        }
        if (m < 0) break;
      }
    }
  };
  STRATA_ASSIGN_OR_RETURN(
      ScaleCarrier new_scales,
      MakeScaleCarrier(*codes.carrier, scale_dtype, count, write_scales));

  std::vector<SubtensorCandidate> subtensors;
  std::shared_ptr<Carrier> code_carrier = codes.carrier;
  if (!new_scales.shares_class) {
    STRATA_ASSIGN_OR_RETURN(code_carrier, HostOrCopy(codes.carrier, 0));
  }
  subtensors.push_back({codes.storage_dtype, std::move(code_carrier),
                        codes.offset, codes.placement});
  subtensors.push_back(
      {&scale_dtype, std::move(new_scales.carrier), scale_offset, l1});
  std::vector<absl::StatusOr<Layout>> adjacent;
  adjacent.push_back(std::move(new_s0));
  if (rep.num_levels() > 2) {
    // The tensor scale: its one value, shared, reached from every new scale.
    const Subtensor& level2 = rep.subtensor(2);
    const int64_t at =
        level2.offset + level2.placement(rep.adjacent_layouts()[1](0));
    std::shared_ptr<Carrier> carrier = level2.carrier;
    if (!new_scales.shares_class) {
      STRATA_ASSIGN_OR_RETURN(carrier, HostOrCopy(level2.carrier, 2));
    }
    STRATA_ASSIGN_OR_RETURN(Layout l2, Layout::Create(1, 0));
    STRATA_ASSIGN_OR_RETURN(
        Layout s1,
        Layout::Create(l1.shape(), l1.shape().TransformLeaves(
                                       [](size_t, int64_t) { return 0; })));
    subtensors.push_back(
        {level2.storage_dtype, std::move(carrier), at, std::move(l2)});
    adjacent.push_back(std::move(s1));
  }
  STRATA_ASSIGN_OR_RETURN(auto relaid,
                          Representation::Create(format, std::move(subtensors),
                                                 std::move(adjacent)));
  return MakeTensor(std::move(relaid));
}

}  // namespace strata
