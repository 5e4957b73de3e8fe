#include "ops/dequantize.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/block_scale_rule.h"
#include "dtype/float_formats.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/algebra.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/internal/checks.h"
#include "ops/internal/dequantize_kernel.h"
#include "ops/internal/element_io.h"
#include "ops/internal/iterate.h"
#include "ops/ops.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {
namespace {

using ops_internal::AlignedAccess;
using ops_internal::ForEachIndex;
using ops_internal::LoadDouble;
using ops_internal::ModeAccess;
using ops_internal::RequireData;
using ops_internal::RequireWritable;

// The offset tables a walk of S_0 may build (as ops/internal/checks.cc's
// budget for L_0).
constexpr int64_t kModeTableBudget = int64_t{1} << 24;

bool IsOutputFloat(const SimpleDType& d) {
  return &d == dtypes::Float32() || &d == dtypes::BFloat16() ||
         &d == dtypes::Float16() || &d == dtypes::Float64();
}

// The rule of `t`'s format, or nullptr for a one-level Tensor of a simple
// dtype; OneSubtensorRequired for any other multi-level Tensor.
absl::StatusOr<const BlockScaleRule*> FamilyRule(const Tensor& t,
                                                 absl::string_view op) {
  const CompoundDType* compound = t.dtype().AsCompound();
  const BlockScaleRule* rule =
      compound != nullptr ? FindBlockScaleRule(*compound) : nullptr;
  if (rule == nullptr && t.num_subtensors() > 1) {
    return OneSubtensorRequiredError(absl::StrCat(
        op, ": ", t.dtype().name(), " has ", t.num_subtensors(),
        " subtensors and is not a block-scaled dtype; only the block-scaled "
        "family is dequantized level by level"));
  }
  return rule;
}

// Decodes one level's values to float32, exactly: a table for codes of at
// most 8 bits (q4_0's zero point folded in), LoadDouble otherwise.
class LevelReader {
 public:
  LevelReader(const Subtensor& level, float zero_point)
      : dtype_(*level.storage_dtype),
        data_(static_cast<const uint8_t*>(level.carrier->data())),
        bits_(dtype_.bits()),
        wide_(&dtype_ == dtypes::Float32()    ? Wide::kFloat32
              : &dtype_ == dtypes::Float16()  ? Wide::kFloat16
              : &dtype_ == dtypes::BFloat16() ? Wide::kBFloat16
                                              : Wide::kOther) {
    if (bits_ <= 8) {
      for (uint32_t code = 0; code < (1u << bits_); ++code) {
        uint8_t byte = static_cast<uint8_t>(code);
        table_[code] =
            static_cast<float>(LoadDouble(dtype_, &byte, 0)) - zero_point;
      }
    }
  }
  int bits() const { return bits_; }
  const uint8_t* data() const { return data_; }
  const float* table() const { return table_.data(); }
  float operator()(int64_t index) const {
    if (bits_ == 8) return table_[data_[index]];
    if (bits_ == 4)
      return table_[(data_[index >> 1] >> ((index & 1) * 4)) & 15];
    if (bits_ < 8) return table_[ReadPacked(data_, bits_, index)];
    // The scales' usual dtypes without LoadDouble's dispatch (q8_0's float16
    // scale is read once per 32 values).
    switch (wide_) {
      case Wide::kFloat32: {
        float v;
        std::memcpy(&v, data_ + 4 * index, 4);
        return v;
      }
      case Wide::kFloat16: {
        uint16_t h;
        std::memcpy(&h, data_ + 2 * index, 2);
        return HalfToFloat(h);
      }
      case Wide::kBFloat16: {
        uint16_t b;
        std::memcpy(&b, data_ + 2 * index, 2);
        return BFloat16ToFloat(b);
      }
      case Wide::kOther:
        break;
    }
    return static_cast<float>(LoadDouble(dtype_, data_, index));
  }

 private:
  enum class Wide { kFloat32, kFloat16, kBFloat16, kOther };
  const SimpleDType& dtype_;
  const uint8_t* data_;
  int bits_;
  Wide wide_;
  std::array<float, 256> table_{};
};

// Writes float32 `v` rounded to `to` (nearest even, overflow to infinity).
class ValueWriter {
 public:
  ValueWriter(const SimpleDType& to, void* data)
      : kind_(&to == dtypes::Float32()    ? 0
              : &to == dtypes::BFloat16() ? 1
              : &to == dtypes::Float16()  ? 2
                                          : 3),
        data_(static_cast<uint8_t*>(data)) {}
  int kind() const { return kind_; }
  uint8_t* data() const { return data_; }
  void operator()(int64_t index, float v) const {
    switch (kind_) {
      case 0:
        std::memcpy(data_ + 4 * index, &v, 4);
        return;
      case 1: {
        const uint16_t b = FloatToBFloat16(v);
        std::memcpy(data_ + 2 * index, &b, 2);
        return;
      }
      case 2: {
        const uint16_t h = FloatToHalf(v);
        std::memcpy(data_ + 2 * index, &h, 2);
        return;
      }
      default: {
        const double d = v;
        std::memcpy(data_ + 8 * index, &d, 8);
        return;
      }
    }
  }

 private:
  int kind_;
  uint8_t* data_;
};

// Every level readable by the kernel: host data, aligned values, a built-in
// storage dtype; S_0's modes walkable within the table budget.
absl::Status RequireReadable(const Tensor& t, const std::vector<Tensor>& levels,
                             absl::string_view op) {
  if (t.size() == 0) return absl::OkStatus();
  const Representation& rep = TensorAccess::representation(t);
  for (int k = 0; k < rep.num_levels(); ++k) {
    const Subtensor& level = rep.subtensor(k);
    if (!level.storage_dtype->scalar_type()) {
      return TypeErrorCat(op, ": level ", k, " of ", t.dtype().name(),
                          " stores ", level.storage_dtype->name(),
                          ", a dtype without built-in arithmetic");
    }
    absl::Status s = RequireData(levels[k], absl::StrCat(op, ": level ", k));
    if (!s.ok()) return s;
  }
  if (rep.num_levels() > 1) {
    const Layout& s0 = rep.adjacent_layouts()[0];
    const int64_t budget =
        std::max(kModeTableBudget, rep.subtensor(0).carrier->size());
    for (const Layout& mode : TopLevelModes(s0)) {
      if (mode.size() <= budget || Coalesce(mode).shape().is_leaf()) continue;
      return ValueErrorCat(op, ": a dim of S_0's mode ", mode.ToString(),
                           " has ", mode.size(),
                           " coordinates and does not coalesce to one stride; "
                           "walking it needs an offset table of more than ",
                           budget, " entries");
    }
  }
  return absl::OkStatus();
}

// NOTE [ Runs of one scale ]
// Along the innermost dim, the scale coordinate S_0 gives is constant over
// runs (a block of 32 along it, a 128-value stretch of a 128x128 block, a
// whole row of a rowwise Tensor). Where the codes (8 or 4 bits) and the
// output are unit-stride along that dim, the kernel finds those runs once
// (O(extent)) and, for every row, decodes each run's scale once and then
// converts the run in a loop with no per-value index arithmetic, which the
// compiler vectorizes for the float32 and bfloat16 stores. Every other
// Tensor takes the general walk, with the same arithmetic.
struct ScaleRun {
  int64_t begin, length, scale_offset;
};

// How the tensor scale enters: none, times g, divided by g'.
enum class TensorScale { kNone, kTimes, kDivided };

template <typename T>
inline void StoreAs(uint8_t* out, int64_t index, float v) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(out + 4 * index, &v, 4);
  } else if constexpr (std::is_same_v<T, double>) {
    const double d = v;
    std::memcpy(out + 8 * index, &d, 8);
  } else if constexpr (std::is_same_v<T, uint16_t>) {  // bfloat16
    const uint16_t b = FloatToBFloat16(v);
    std::memcpy(out + 2 * index, &b, 2);
  } else {  // float16, as int16_t
    const uint16_t h = FloatToHalf(v);
    std::memcpy(out + 2 * index, &h, 2);
  }
}

template <typename Out, int kBits, TensorScale kTensor>
void ConvertRuns(const std::vector<ScaleRun>& runs, const uint8_t* codes,
                 int64_t code_base, const float* table,
                 const LevelReader& scale, int64_t scale_base, float g,
                 uint8_t* out, int64_t out_base) {
  for (const ScaleRun& run : runs) {
    const float s = scale(scale_base + run.scale_offset);
    const int64_t c0 = code_base + run.begin, o0 = out_base + run.begin;
    for (int64_t j = 0; j < run.length; ++j) {
      const int64_t c = c0 + j;
      uint32_t code;
      if constexpr (kBits == 8) {
        code = codes[c];
      } else {
        code = (codes[c >> 1] >> ((c & 1) * 4)) & 15;
      }
      float v = table[code] * s;
      if constexpr (kTensor == TensorScale::kTimes) v = v * g;
      if constexpr (kTensor == TensorScale::kDivided) v = v / g;
      StoreAs<Out>(out, o0 + j, v);
    }
  }
}

template <typename Out, int kBits>
void ConvertRunsFor(TensorScale ts, const std::vector<ScaleRun>& runs,
                    const uint8_t* codes, int64_t code_base, const float* table,
                    const LevelReader& scale, int64_t scale_base, float g,
                    uint8_t* out, int64_t out_base) {
  switch (ts) {
    case TensorScale::kNone:
      return ConvertRuns<Out, kBits, TensorScale::kNone>(
          runs, codes, code_base, table, scale, scale_base, g, out, out_base);
    case TensorScale::kTimes:
      return ConvertRuns<Out, kBits, TensorScale::kTimes>(
          runs, codes, code_base, table, scale, scale_base, g, out, out_base);
    case TensorScale::kDivided:
      return ConvertRuns<Out, kBits, TensorScale::kDivided>(
          runs, codes, code_base, table, scale, scale_base, g, out, out_base);
  }
}

// Where a row's codes do not follow one another (code_last, the innermost
// mode's code offsets): each run's code start into `starts`, and whether the
// runs are in ggml's split halves (RowDecoding::split_halves: 32 values of
// 4-bit codes from an even element, value k < 16 at start + 2k, 16 + k at
// start + 2k + 1, with every row's base even: `offset` and every outer
// mode's offsets) rather than each in order (value k at start + k); nullopt
// where they are neither. O(row length), once per Dequantize.
std::optional<bool> RunCodes(const std::vector<ScaleRun>& runs,
                             const ModeAccess& code_last, bool four_bit,
                             int64_t offset,
                             const std::vector<ModeAccess>& code_access,
                             std::vector<int64_t>* starts) {
  bool in_order = true;
  bool split = four_bit && offset % 2 == 0;
  for (size_t m = 0; split && m + 1 < code_access.size(); ++m) {
    const ModeAccess& mode = code_access[m];
    split = mode.strided()
                ? mode.stride % 2 == 0
                : std::all_of(mode.table.begin(), mode.table.end(),
                              [](int64_t at) { return at % 2 == 0; });
  }
  for (const ScaleRun& run : runs) {
    const int64_t start = code_last.at(run.begin);
    starts->push_back(start);
    split = split && run.length == 32 && start % 2 == 0;
    for (int64_t k = 0; k < run.length && (in_order || split); ++k) {
      const int64_t at = code_last.at(run.begin + k);
      in_order = in_order && at == start + k;
      split = split && at == start + (k < 16 ? 2 * k : 2 * (k - 16) + 1);
    }
    if (!in_order && !split) return std::nullopt;
  }
  return !in_order;
}

// The kernel of NOTE [ Runs of one scale ], when it applies; false otherwise
// (nothing written).
bool RunsOfOneScale(const Tensor& t, const BlockScaleRule& rule,
                    const LevelReader& code, const LevelReader& scale, float g,
                    const Layout& out_layout, int64_t out_offset,
                    const ValueWriter& write) {
  const Representation& rep = TensorAccess::representation(t);
  const std::vector<int64_t> shape = t.shape();
  if (shape.empty() || (code.bits() != 8 && code.bits() != 4)) return false;
  const Subtensor& codes = rep.subtensor(0);
  const Subtensor& scales = rep.subtensor(1);
  std::vector<ModeAccess> out_access = AlignedAccess(out_layout, shape);
  std::vector<ModeAccess> code_access = AlignedAccess(codes.placement, shape);
  std::vector<ModeAccess> s0_access =
      AlignedAccess(rep.adjacent_layouts()[0], shape);
  const int64_t n = shape.back();
  const ModeAccess& out_last = out_access.back();
  const ModeAccess& code_last = code_access.back();
  if (n > 1 && !(out_last.strided() && out_last.stride == 1)) return false;
  // Whether a row's codes follow one another; else each run's codes are
  // placed on their own (RunCodes below).
  const bool codes_in_row =
      n <= 1 || (code_last.strided() && code_last.stride == 1);
  // Runs of one scale coordinate along the innermost dim.
  std::vector<ScaleRun> runs;
  const ModeAccess& s0_last = s0_access.back();
  for (int64_t c = 0; c < n;) {
    const int64_t at = s0_last.at(c);
    int64_t end = c + 1;
    while (end < n && s0_last.at(end) == at) ++end;
    runs.push_back({c, end - c, at});
    c = end;
  }
  // Each run's code start, where the row's codes do not follow one another
  // (GGUF's blocks: NOTE [ GGUF blocks as strided placements ] in
  // checkpoint/gguf.cc).
  std::vector<int64_t> code_begins;
  bool split_halves = false;
  if (!codes_in_row) {
    const std::optional<bool> split =
        RunCodes(runs, code_last, code.bits() == 4, codes.offset, code_access,
                 &code_begins);
    if (!split.has_value()) return false;
    split_halves = *split;
  }
  // Scale offsets are carrier indices: the run's scale coordinate through
  // L_1. Where L_1 o S_0 is separable (NOTE [ Separable compositions ]),
  // each mode is a table of carrier offsets and a row's scales are sums of
  // lookups; otherwise L_1 is evaluated once per run.
  const bool tensor_scale = rule.tensor_scale() && rep.num_levels() > 2;
  const TensorScale ts = !tensor_scale ? TensorScale::kNone
                         : &t.dtype() == dtypes::NVFP4TSRecip()
                             ? TensorScale::kDivided
                             : TensorScale::kTimes;
  const Layout& s0 = rep.adjacent_layouts()[0];
  std::optional<std::vector<ModeAccess>> composed =
      ops_internal::SeparableComposition(scales.placement, s0, shape);
  const bool direct = composed.has_value();
  if (direct) {
    s0_access = *std::move(composed);
    for (ScaleRun& run : runs)
      run.scale_offset = s0_access.back().at(run.begin);
  }
  std::vector<int64_t> outer(shape.begin(), shape.end() - 1);
  out_access.pop_back();
  code_access.pop_back();
  s0_access.pop_back();
  std::vector<ScaleRun> placed = runs;
  // The SIMD row kernel (NOTE [ Decoding codes by their bits ]) for the code
  // dtypes and outputs it knows; the templates below for the rest.
  const SimpleDType& code_dtype = *codes.storage_dtype;
  const int kind = &code_dtype == dtypes::Float8E4M3FN()   ? 0
                   : &code_dtype == dtypes::Float4E2M1FN() ? 1
                   : &code_dtype == dtypes::Int8()         ? 2
                   : &code_dtype == dtypes::UInt4()        ? 3
                                                           : -1;
  const bool simd = kind >= 0 && (write.kind() == 0 || write.kind() == 1);
  // Only the SIMD kernel reads runs' own code starts.
  if (!codes_in_row && !simd) return false;
  std::vector<int64_t> begins, lengths, scale_offsets;
  for (const ScaleRun& run : runs) {
    begins.push_back(run.begin);
    lengths.push_back(run.length);
    scale_offsets.push_back(run.scale_offset);
  }
  std::vector<float> row_scales(runs.size());
  // A row's scales: where each is one byte at its run's offset from the
  // row's (e4m3, e8m0, directly composed), a lookup of the level's table
  // in a loop that reloads nothing per run; LevelReader's general read
  // otherwise.
  const bool byte_scales = direct && scale.bits() == 8;
  const int64_t num_runs = static_cast<int64_t>(runs.size());
  // A row's scales at one stride from the first, read in one call: bytes
  // one after another (row-major scales), float8_e4m3fn's decoded by their
  // bits and others looked up; or float16 one after another or one in each
  // GGUF block (q8_0, q4_0), converted by their bits.
  const bool e4m3_scales = scales.storage_dtype == dtypes::Float8E4M3FN();
  const bool half_scales = direct && scales.storage_dtype == dtypes::Float16();
  const int64_t scale_stride =
      half_scales && num_runs > 1 ? scale_offsets[1] - scale_offsets[0] : 1;
  bool one_stride = (byte_scales || half_scales) && scale_stride >= 1;
  for (int64_t r = 1; one_stride && r < num_runs; ++r) {
    one_stride = scale_offsets[r] - scale_offsets[r - 1] == scale_stride;
  }
  const ops_internal::RowDecoding decoding{
      static_cast<ops_internal::CodeKind>(std::max(kind, 0)),
      write.kind() == 0 ? ops_internal::RunOutput::kFloat32
                        : ops_internal::RunOutput::kBFloat16,
      static_cast<ops_internal::TensorScaleMode>(ts),
      g,
      code.table(),
      split_halves};
  const int64_t scale_base = scales.offset;
  ForEachIndex<3>(
      outer,
      {std::move(out_access), std::move(code_access), std::move(s0_access)},
      {out_offset, codes.offset, 0}, [&](const std::array<int64_t, 3>& i) {
        if (simd) {
          float* const row = row_scales.data();
          const int64_t* const offsets = scale_offsets.data();
          if (one_stride && half_scales) {
            ops_internal::HalvesToFloats(
                scale.data() + 2 * (scale_base + i[2] + offsets[0]), num_runs,
                scale_stride, row);
          } else if (one_stride) {
            ops_internal::LookUpBytes(
                scale.data() + scale_base + i[2] + offsets[0], num_runs,
                e4m3_scales, scale.table(), row);
          } else if (byte_scales) {
            const uint8_t* const bytes = scale.data();
            const float* const table = scale.table();
            const int64_t base = scale_base + i[2];
            for (int64_t r = 0; r < num_runs; ++r) {
              row[r] = table[bytes[base + offsets[r]]];
            }
          } else {
            for (int64_t r = 0; r < num_runs; ++r) {
              row[r] = scale(scale_base +
                             (direct ? i[2] + offsets[r]
                                     : scales.placement(i[2] + offsets[r])));
            }
          }
          return ops_internal::DequantizeRow(
              decoding, code.data(), i[1], write.data(), i[0], begins.data(),
              lengths.data(), row, num_runs,
              code_begins.empty() ? nullptr : code_begins.data());
        }
        for (size_t r = 0; r < runs.size(); ++r) {
          placed[r].scale_offset =
              direct ? i[2] + runs[r].scale_offset
                     : scales.placement(i[2] + runs[r].scale_offset);
        }
        switch (write.kind()) {
          case 0:
            return code.bits() == 8
                       ? ConvertRunsFor<float, 8>(
                             ts, placed, code.data(), i[1], code.table(), scale,
                             scale_base, g, write.data(), i[0])
                       : ConvertRunsFor<float, 4>(
                             ts, placed, code.data(), i[1], code.table(), scale,
                             scale_base, g, write.data(), i[0]);
          case 1:
            return code.bits() == 8
                       ? ConvertRunsFor<uint16_t, 8>(
                             ts, placed, code.data(), i[1], code.table(), scale,
                             scale_base, g, write.data(), i[0])
                       : ConvertRunsFor<uint16_t, 4>(
                             ts, placed, code.data(), i[1], code.table(), scale,
                             scale_base, g, write.data(), i[0]);
          case 2:
            return code.bits() == 8
                       ? ConvertRunsFor<int16_t, 8>(
                             ts, placed, code.data(), i[1], code.table(), scale,
                             scale_base, g, write.data(), i[0])
                       : ConvertRunsFor<int16_t, 4>(
                             ts, placed, code.data(), i[1], code.table(), scale,
                             scale_base, g, write.data(), i[0]);
          default:
            return code.bits() == 8
                       ? ConvertRunsFor<double, 8>(
                             ts, placed, code.data(), i[1], code.table(), scale,
                             scale_base, g, write.data(), i[0])
                       : ConvertRunsFor<double, 4>(
                             ts, placed, code.data(), i[1], code.table(), scale,
                             scale_base, g, write.data(), i[0]);
        }
      });
  return true;
}

// The walk of NOTE [ Dequantize arithmetic ]: every value of block-scaled `t`
// into `out_data` at out's `layout` and `offset`.
void DequantizeKernel(const Tensor& t, const BlockScaleRule& rule,
                      const Layout& out_layout, int64_t out_offset,
                      const ValueWriter& write) {
  const Representation& rep = TensorAccess::representation(t);
  const std::vector<int64_t> shape = t.shape();
  const Subtensor& codes = rep.subtensor(0);
  const Subtensor& scales = rep.subtensor(1);
  const bool q4_0 = &t.dtype() == dtypes::Q4_0();
  const LevelReader code(codes, q4_0 ? 8.0f : 0.0f);
  const LevelReader scale(scales, 0.0f);
  // The tensor scale: one value (the rule checked it), reached through S_1.
  const bool tensor_scale = rule.tensor_scale() && rep.num_levels() > 2;
  const bool recip = &t.dtype() == dtypes::NVFP4TSRecip();
  float g = 1.0f;
  if (tensor_scale) {
    const Subtensor& level2 = rep.subtensor(2);
    const LevelReader read2(level2, 0.0f);
    const Layout& s1 = rep.adjacent_layouts()[1];
    g = read2(level2.offset + level2.placement(s1(0)));
  }
  const Layout& s0 = rep.adjacent_layouts()[0];
  if (RunsOfOneScale(t, rule, code, scale, g, out_layout, out_offset, write)) {
    return;
  }
  int64_t last = std::numeric_limits<int64_t>::min();
  float block_scale = 0.0f;
  ForEachIndex<3>(
      shape,
      {AlignedAccess(out_layout, shape), AlignedAccess(codes.placement, shape),
       AlignedAccess(s0, shape)},
      {out_offset, codes.offset, 0}, [&](const std::array<int64_t, 3>& i) {
        if (i[2] != last) {
          last = i[2];
          block_scale = scale(scales.offset + scales.placement(i[2]));
        }
        // Each product rounded once to float32 (no contraction: one multiply
        // or divide per statement, and -ffp-contract cannot fuse these).
        float v = code(i[1]) * block_scale;
        if (tensor_scale) v = recip ? v / g : v * g;
        write(i[0], v);
      });
}

absl::Status DequantizeIntoChecked(const Tensor& out, const Tensor& t,
                                   const BlockScaleRule& rule,
                                   absl::string_view op) {
  void* data = out.carrier()->mutable_data();
  const ValueWriter write(out.dtype().AsSimple() != nullptr
                              ? *out.dtype().AsSimple()
                              : *dtypes::Float32(),
                          data);
  DequantizeKernel(t, rule, out.layout(), out.offset(), write);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> Levels(const Tensor& t) {
  STRATA_RETURN_IF_ERROR(FamilyRule(t, "Levels").status());
  if (t.num_subtensors() == 1) return std::vector<Tensor>{t};
  const Representation& rep = TensorAccess::representation(t);
  std::vector<Tensor> out;
  out.reserve(rep.num_levels());
  for (int k = 0; k < rep.num_levels(); ++k) {
    const Subtensor& level = rep.subtensor(k);
    absl::StatusOr<Tensor> one =
        Tensor::Create(level.carrier, level.offset, level.placement);
    if (!one.ok()) {
      return WithContext(one.status(), absl::StrCat("Levels: level ", k));
    }
    out.push_back(*std::move(one));
  }
  return out;
}

absl::StatusOr<Tensor> Dequantize(const Tensor& t, const SimpleDType& to) {
  if (&to != dtypes::Float32() && &to != dtypes::BFloat16() &&
      &to != dtypes::Float16()) {
    return TypeErrorCat("Dequantize: the output dtype ", to.name(),
                        " is not float32, bfloat16 or float16");
  }
  STRATA_ASSIGN_OR_RETURN(const BlockScaleRule* rule,
                          FamilyRule(t, "Dequantize"));
  if (rule == nullptr || t.num_subtensors() == 1) return Cast(t, to);
  STRATA_ASSIGN_OR_RETURN(std::vector<Tensor> levels, Levels(t));
  STRATA_RETURN_IF_ERROR(RequireReadable(t, levels, "Dequantize"));
  const std::vector<int64_t> shape = t.shape();
  STRATA_ASSIGN_OR_RETURN(Layout layout,
                          Layout::RowMajor(IntTuple::Flat(shape)));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<HostCarrier> carrier,
                          HostCarrier::Create(to, layout.size()));
  STRATA_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(carrier, 0, layout));
  if (t.size() > 0) {
    DequantizeKernel(t, *rule, out.layout(), 0,
                     ValueWriter(to, carrier->mutable_data()));
  }
  return out;
}

absl::Status DequantizeInto(const Tensor& out, const Tensor& t) {
  constexpr absl::string_view kOp = "DequantizeInto";
  if (out.num_subtensors() != 1) {
    return OneSubtensorRequiredError(absl::StrCat(
        kOp, ": out is ", out.dtype().name(), " of ", out.num_subtensors(),
        " subtensors; it must be one level of a float dtype"));
  }
  const SimpleDType* out_dtype = out.dtype().AsSimple();
  if (out_dtype == nullptr || !IsOutputFloat(*out_dtype)) {
    return TypeErrorCat(kOp, ": out is ", out.dtype().name(),
                        "; it must be float32, bfloat16, float16 or float64");
  }
  STRATA_ASSIGN_OR_RETURN(const BlockScaleRule* rule, FamilyRule(t, kOp));
  if (out.shape() != t.shape()) {
    return ValueErrorCat(kOp, ": out has shape ",
                         ops_internal::ShapeText(out.shape()), "; ",
                         t.dtype().name(), " Tensor has shape ",
                         ops_internal::ShapeText(t.shape()));
  }
  if (rule == nullptr || t.num_subtensors() == 1) {
    if (ops_internal::MayOverlap(out, t)) {
      return ValueErrorCat(kOp, ": out overlaps the bytes of the Tensor");
    }
    return CopyFrom(out, t);
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<Tensor> levels, Levels(t));
  STRATA_RETURN_IF_ERROR(RequireReadable(t, levels, kOp));
  STRATA_RETURN_IF_ERROR(RequireWritable(out, kOp));
  for (size_t k = 0; k < levels.size(); ++k) {
    if (out.size() > 0 && ops_internal::MayOverlap(out, levels[k])) {
      return ValueErrorCat(kOp, ": out overlaps the bytes of level ", k,
                           " of the ", t.dtype().name(), " Tensor");
    }
  }
  if (t.size() > 0) {
    STRATA_RETURN_IF_ERROR(DequantizeIntoChecked(out, t, *rule, kOp));
  }
  out.carrier()->BumpVersion();
  return absl::OkStatus();
}

absl::StatusOr<Tensor> LevelBytes(const Tensor& level) {
  constexpr absl::string_view kOp = "LevelBytes";
  if (level.num_subtensors() != 1) {
    return ValueErrorCat(kOp, ": ", level.dtype().name(), " has ",
                         level.num_subtensors(),
                         " subtensors; take one of its levels first");
  }
  const std::shared_ptr<Carrier>& carrier = level.carrier();
  const SimpleDType* storage = carrier->dtype().AsSimple();
  if (storage == nullptr || carrier->data() == nullptr) {
    return ValueErrorCat(kOp, ": the ", carrier->class_name(), " carrier of ",
                         carrier->dtype().name(), " holds no host data");
  }
  const int bits = storage->bits();
  if (bits % 8 != 0 && bits != 4) {
    return ValueErrorCat(kOp, ": ", storage->name(), " values of ", bits,
                         " bits are not whole bytes or nibbles");
  }
  std::vector<int64_t> shape, stride;
  for (const Layout& mode : TopLevelModes(level.layout())) {
    // The memory a mode reaches: its broadcast leaves (stride 0: a ragged
    // grid's merging leaf, a broadcast) reach no other value and count once.
    std::vector<IntTuple> kept_shape, kept_stride;
    const auto leaf_shape = mode.shape().leaves();
    const auto leaf_stride = mode.stride().leaves();
    for (size_t k = 0; k < leaf_shape.size(); ++k) {
      if (leaf_stride[k] != 0 || leaf_shape[k] == 0) {
        kept_shape.push_back(IntTuple(leaf_shape[k]));
        kept_stride.push_back(IntTuple(leaf_stride[k]));
      }
    }
    if (kept_shape.empty()) {
      kept_shape.push_back(IntTuple(1));
      kept_stride.push_back(IntTuple(0));
    }
    STRATA_ASSIGN_OR_RETURN(const Layout distinct,
                            Layout::Create(IntTuple::Tuple(kept_shape),
                                           IntTuple::Tuple(kept_stride)));
    const Layout flat = Coalesce(distinct);
    if (!flat.shape().is_leaf()) {
      return ValueErrorCat(kOp, ": the mode ", mode.ToString(), " of ",
                           level.layout().ToString(), " is not one stride");
    }
    shape.push_back(flat.shape().value());
    stride.push_back(flat.size() == 1 ? 0 : flat.stride().value());
  }
  int64_t offset = level.offset();
  if (shape.empty() || (shape.back() > 1 && stride.back() != 1)) {
    return ValueErrorCat(kOp, ": the last mode of ", level.layout().ToString(),
                         " is not unit stride");
  }
  if (bits == 4) {
    bool whole = offset % 2 == 0 && shape.back() % 2 == 0;
    for (size_t j = 0; j + 1 < shape.size(); ++j) {
      whole = whole && (shape[j] == 1 || stride[j] % 2 == 0);
    }
    if (!whole) {
      return ValueErrorCat(kOp, ": a row of ", level.layout().ToString(),
                           " at offset ", offset,
                           " starts or ends inside a byte of 4-bit values");
    }
    for (int64_t& s : stride) s /= 2;
    shape.back() /= 2;
    stride.back() = 1;
    offset /= 2;
  } else {
    const int64_t width = bits / 8;
    for (int64_t& s : stride) s *= width;  // Strides fit: the level's bytes do.
    shape.back() *= width;
    stride.back() = 1;
    offset *= width;
  }
  STRATA_ASSIGN_OR_RETURN(const int64_t bytes,
                          StorageBytes(*storage, carrier->size()));
  std::vector<IntTuple> s_shape(shape.begin(), shape.end());
  std::vector<IntTuple> s_stride(stride.begin(), stride.end());
  STRATA_ASSIGN_OR_RETURN(
      Layout layout,
      Layout::Create(IntTuple::Tuple(s_shape), IntTuple::Tuple(s_stride)));
  // The view holds a raw pointer into the storage: it pins it (NOTE [ Pinned
  // storage ] in carrier/carrier.h), so that a Release() of the level's
  // carrier meanwhile frees nothing the view still reads.
  std::shared_ptr<Carrier> owner = carrier;
  owner->PinStorage();
  const void* data = owner->data();
  if (data == nullptr) {
    owner->UnpinStorage();
    return ValueErrorCat(kOp, ": the carrier was released");
  }
  absl::StatusOr<std::shared_ptr<ExternalCarrier>> view =
      ExternalCarrier::Create(
          *dtypes::UInt8(), bytes, const_cast<void*>(data),
          [owner]() mutable {
            owner->UnpinStorage();
            owner.reset();
          },
          carrier->version(), carrier->read_only());
  if (!view.ok()) {
    owner->UnpinStorage();  // The deleter does not run on failure.
    return view.status();
  }
  return Tensor::Create(*std::move(view), offset, std::move(layout));
}

}  // namespace strata
