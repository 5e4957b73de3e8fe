#include "ops/ops.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "core/errors.h"
#include "core/status_macros.h"
#include "dtype/float_formats.h"
#include "dtype/registry.h"
#include "dtype/scalar_type.h"
#include "layout/algebra.h"
#include "layout/checked_math.h"
#include "ops/element_io.h"
#include "ops/iterate.h"
#include "ops/require.h"
#include "ops/walk.h"

namespace strata {
namespace {

std::vector<int64_t> ShapeOf(const Tensor& t) {
  std::vector<int64_t> shape;
  for (const Layout& m : TopLevelModes(t.layout())) shape.push_back(m.size());
  return shape;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ","), ")");
}

const SimpleDType& DTypeOf(const Tensor& t) { return *t.dtype().AsSimple(); }

// The kernels walk a top-level mode that does not coalesce to one stride
// through a table of its offsets (ops/iterate.h). A table is allowed up to the
// larger of kModeTableBudget and the carrier's size, so it never costs more
// than O(carrier): only an aliasing mode (a hierarchical broadcast, say) can
// have more coordinates than its carrier has values, and such a walk is
// refused rather than allocated.
constexpr int64_t kModeTableBudget = int64_t{1} << 24;

absl::Status RequireIterable(const Tensor& t, absl::string_view op) {
  const int64_t budget = std::max(kModeTableBudget, t.carrier()->size());
  for (const Layout& mode : TopLevelModes(t.layout())) {
    if (mode.size() <= budget) continue;
    if (Coalesce(mode).shape().is_leaf()) continue;
    return ValueErrorCat(op, ": mode ", mode.ToString(), " of ",
                         t.layout().ToString(), " has ", mode.size(),
                         " coordinates and does not coalesce to one stride; "
                         "iterating it needs an offset table of more than ",
                         budget, " entries (the larger of ", kModeTableBudget,
                         " and the carrier size)");
  }
  return absl::OkStatus();
}

absl::Status RequireHostData(const Tensor& t, absl::string_view op) {
  if (t.size() > 0 && t.carrier()->data() == nullptr) {
    return ValueErrorCat(op, ": the ", t.carrier()->class_name(),
                         " carrier of ", t.dtype().name(),
                         " holds no host data");
  }
  return absl::OkStatus();
}

// For the kernels that walk every element.
absl::Status RequireData(const Tensor& t, absl::string_view op) {
  STRATA_RETURN_IF_ERROR(RequireHostData(t, op));
  return RequireIterable(t, op);
}

// NOTE [ Proving a write injective ]: a write through a layout that reaches
// one carrier value from two coordinates is ambiguous, so every write first
// proves that it does not, without allocating O(size):
//  1. pigeonhole: more coordinates than carrier indices in the reached range
//     [min_index, max_index] cannot be injective (O(rank));
//  2. a stride-0 mode of extent > 1 is not injective (O(rank));
//  3. sorted by |stride| after coalescing, each stride beyond the span of the
//     smaller ones is injective (O(rank log rank));
//  4. otherwise the reached indices are marked in a bitmap over that range,
//     when the range is at most kInjectivityBudget indices (the write itself
//     then touches as many); beyond it the write is refused as unprovable.
constexpr int64_t kInjectivityBudget = int64_t{1} << 28;

enum class Injectivity { kInjective, kNotInjective, kUnproven };

Injectivity ProveInjective(const Layout& layout) {
  if (layout.size() <= 1) return Injectivity::kInjective;
  // The range is at most the carrier size (the placement fits it).
  int64_t range;
  if (!CheckedSub(layout.max_index(), layout.min_index(), &range) ||
      !CheckedAdd(range, 1, &range)) {
    range = std::numeric_limits<int64_t>::max();
  }
  if (layout.size() > range) return Injectivity::kNotInjective;
  const Layout c = Coalesce(layout);
  std::vector<std::pair<int64_t, int64_t>> modes;  // (|stride|, extent)
  const auto extents = c.shape().leaves();
  const auto strides = c.stride().leaves();
  for (size_t k = 0; k < extents.size(); ++k) {
    if (extents[k] == 1) continue;
    if (strides[k] == 0) return Injectivity::kNotInjective;
    modes.emplace_back(strides[k] < 0 ? -strides[k] : strides[k], extents[k]);
  }
  std::sort(modes.begin(), modes.end());
  int64_t span = 0;
  bool separated = true;
  for (const auto& [stride, extent] : modes) {
    if (stride <= span) separated = false;
    span += (extent - 1) * stride;  // Bounded by the layout's index range.
  }
  if (separated) return Injectivity::kInjective;
  if (range > kInjectivityBudget) return Injectivity::kUnproven;
  std::vector<uint64_t> seen((range + 63) / 64, 0);
  const int64_t low = layout.min_index();
  for (int64_t i = 0; i < layout.size(); ++i) {
    const int64_t bit = layout(i) - low;
    uint64_t& word = seen[bit / 64];
    const uint64_t mask = uint64_t{1} << (bit % 64);
    if (word & mask) return Injectivity::kNotInjective;
    word |= mask;
  }
  return Injectivity::kInjective;
}

absl::Status RequireWritable(const Tensor& t, absl::string_view op) {
  STRATA_RETURN_IF_ERROR(RequireData(t, op));
  switch (ProveInjective(t.layout())) {
    case Injectivity::kInjective:
      return absl::OkStatus();
    case Injectivity::kNotInjective:
      return ValueErrorCat(
          op, ": the destination layout ", t.layout().ToString(),
          " maps several coordinates to one carrier value (e.g. a "
          "broadcast view); writing to it is ambiguous");
    case Injectivity::kUnproven:
      break;
  }
  return ValueErrorCat(op, ": cannot prove that the destination layout ",
                       t.layout().ToString(),
                       " writes each carrier value once (its strides "
                       "interleave and its index range exceeds ",
                       kInjectivityBudget, " values)");
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(
    absl::string_view op, const std::vector<int64_t>& a,
    const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t p = 0; p < rank; ++p) {
    const int64_t x = p + a.size() >= rank ? a[p + a.size() - rank] : 1;
    const int64_t y = p + b.size() >= rank ? b[p + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) {
      return ValueErrorCat(op, ": shapes ", ShapeText(a), " and ", ShapeText(b),
                           " do not broadcast (mode ", p, ": ", x, " vs ", y,
                           ")");
    }
    out[p] = x == 1 ? y : x;
  }
  return out;
}

absl::Status RequireBroadcastsTo(absl::string_view op,
                                 const std::vector<int64_t>& from,
                                 const std::vector<int64_t>& to) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> joint,
                          BroadcastShapes(op, from, to));
  if (joint != to) {
    return ValueErrorCat(op, ": shape ", ShapeText(from),
                         " does not broadcast to ", ShapeText(to));
  }
  return absl::OkStatus();
}

// Whether the two Tensors share a carrier and their reached index ranges
// intersect.
bool MayOverlap(const Tensor& a, const Tensor& b) {
  if (a.carrier() != b.carrier() || a.size() == 0 || b.size() == 0)
    return false;
  const int64_t a_lo = a.offset() + a.layout().min_index();
  const int64_t a_hi = a.offset() + a.layout().max_index();
  const int64_t b_lo = b.offset() + b.layout().min_index();
  const int64_t b_hi = b.offset() + b.layout().max_index();
  return a_lo <= b_hi && b_lo <= a_hi;
}

bool SameView(const Tensor& a, const Tensor& b) {
  return a.carrier() == b.carrier() && a.offset() == b.offset() &&
         a.layout() == b.layout();
}

// Calls f(T{}) with T the C++ type of a dtype that has one (not bool, not the
// 16-bit or narrow floats); returns false otherwise.
// (NOTE [ One dtype switch ]).
template <typename F>
bool DispatchNative(const SimpleDType& d, F&& f) {
  if (!d.scalar_type()) return false;
  return ScalarTypeSwitch(*d.scalar_type(), [&](auto type) {
    constexpr ScalarType kType = decltype(type)::value;
    if constexpr (kIsNativeArithmetic<kType>) {
      f(typename ScalarTraits<kType>::Storage{});
      return true;
    } else {
      return false;
    }
  });
}

bool IsArithmetic(const SimpleDType& d) {
  return d.scalar_type() && IsArithmeticType(*d.scalar_type());
}

// --- Copy
// --------------------------------------------------------------------------

// NOTE [ Blocked transposing copy ]: rows of both sides are a power of two
// apart for square matrices, so they share L1 sets. Each source line of a tile
// is read once into a small buffer, transposed there, and each destination line
// written once. Inlined with constant bounds for whole tiles, the loops unroll
// and vectorize.
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
      // NOTE [ Blocked transposing copy ]: when dst is unit-stride in its inner
      // mode and src in another mode, copy 2-D tiles so both sides stay in
      // cache.
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

absl::StatusOr<Tensor> CompactCopy(const Tensor& a, const SimpleDType& dtype) {
  const std::vector<int64_t> shape = ShapeOf(a);
  STRATA_ASSIGN_OR_RETURN(Tensor out, Zeros(dtype, shape));
  CopyKernel(out, shape, AlignedAccess(out.layout(), shape), a,
             AlignedAccess(a.layout(), shape));
  return out;
}

// --- Arithmetic
// ----------------------------------------------------------------------

// `value` rounded to floating `dtype` (to float first for the 16-bit floats,
// as PyTorch's conversions do).
double RoundTo(const SimpleDType& dtype, double value) {
  switch (dtype.scalar_type().value_or(ScalarType::kFloat64)) {
    case ScalarType::kFloat32:
      return static_cast<float>(value);
    case ScalarType::kFloat16:
      return HalfToFloat(FloatToHalf(static_cast<float>(value)));
    case ScalarType::kBFloat16:
      return BFloat16ToFloat(FloatToBFloat16(static_cast<float>(value)));
    default:
      return value;
  }
}

template <typename T>
T Apply(BinaryOp op, T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (op) {
      case BinaryOp::kAdd:
        return static_cast<T>(ux + uy);
      case BinaryOp::kSub:
        return static_cast<T>(ux - uy);
      default:
        return static_cast<T>(ux * uy);
    }
  } else {
    switch (op) {
      case BinaryOp::kAdd:
        return x + y;
      case BinaryOp::kSub:
        return x - y;
      case BinaryOp::kMul:
        return x * y;
      case BinaryOp::kDiv:
        return x / y;
    }
    return x;
  }
}

int64_t ApplyInt(BinaryOp op, int64_t x, int64_t y) {
  return Apply<int64_t>(op, x, y);
}
double ApplyDouble(BinaryOp op, double x, double y) {
  return Apply<double>(op, x, y);
}

absl::string_view OpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "Add";
    case BinaryOp::kSub:
      return "Sub";
    case BinaryOp::kMul:
      return "Mul";
    case BinaryOp::kDiv:
      return "Div";
  }
  return "";
}

template <BinaryOp kOp, typename T>
void TypedBinary(T* o, const T* x, const T* y,
                 const std::vector<int64_t>& extents,
                 const std::array<std::vector<ModeAccess>, 3>& ops,
                 const std::array<int64_t, 3>& bases) {
  ForEachIndex<3>(extents, ops, bases, [&](const std::array<int64_t, 3>& i) {
    o[i[0]] = Apply<T>(kOp, x[i[1]], y[i[2]]);
  });
}

absl::Status BinaryInto(BinaryOp op, const Tensor& a, const Tensor& b,
                        const Tensor& out, const SimpleDType& compute) {
  const std::vector<int64_t> shape = ShapeOf(out);
  const std::array<std::vector<ModeAccess>, 3> ops = {
      AlignedAccess(out.layout(), shape), AlignedAccess(a.layout(), shape),
      AlignedAccess(b.layout(), shape)};
  const std::array<int64_t, 3> bases = {out.offset(), a.offset(), b.offset()};
  const SimpleDType& od = DTypeOf(out);
  const SimpleDType& ad = DTypeOf(a);
  const SimpleDType& bd = DTypeOf(b);
  void* o = out.carrier()->mutable_data();
  const void* x = a.carrier()->data();
  const void* y = b.carrier()->data();
  if (&od == &ad && &od == &bd && &od == &compute) {
    bool done = false;
    auto typed = [&](auto tag) {
      using T = decltype(tag);
      if (std::is_integral_v<T> && op == BinaryOp::kDiv) return;
      T* to = static_cast<T*>(o);
      const T* tx = static_cast<const T*>(x);
      const T* ty = static_cast<const T*>(y);
      switch (op) {
        case BinaryOp::kAdd:
          TypedBinary<BinaryOp::kAdd, T>(to, tx, ty, shape, ops, bases);
          break;
        case BinaryOp::kSub:
          TypedBinary<BinaryOp::kSub, T>(to, tx, ty, shape, ops, bases);
          break;
        case BinaryOp::kMul:
          TypedBinary<BinaryOp::kMul, T>(to, tx, ty, shape, ops, bases);
          break;
        case BinaryOp::kDiv:
          TypedBinary<BinaryOp::kDiv, T>(to, tx, ty, shape, ops, bases);
          break;
      }
      done = true;
    };
    if (DispatchNative(od, typed) && done) return absl::OkStatus();
  }
  if (IsIntegral(compute)) {
    ForEachIndex<3>(shape, ops, bases, [&](const std::array<int64_t, 3>& i) {
      StoreInt(od, o, i[0],
               ApplyInt(op, LoadInt(ad, x, i[1]), LoadInt(bd, y, i[2])));
    });
  } else {
    // As PyTorch: the operands are converted to the compute dtype, the
    // operation runs in its "opmath" type (float for float32, float16 and
    // bfloat16; double for float64) and the result is rounded to the compute
    // dtype, then converted to out's. Double arithmetic on float operands
    // rounded once to float equals float arithmetic for + - * /.
    const SimpleDType& cd = compute;
    ForEachIndex<3>(shape, ops, bases, [&](const std::array<int64_t, 3>& i) {
      const double u = RoundTo(cd, LoadDouble(ad, x, i[1]));
      const double v = RoundTo(cd, LoadDouble(bd, y, i[2]));
      StoreDouble(od, o, i[0], RoundTo(cd, ApplyDouble(op, u, v)));
    });
  }
  return absl::OkStatus();
}

absl::Status CheckBinaryArgs(BinaryOp op, const Tensor& a, const Tensor& b) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(a, OpName(op)));
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(b, OpName(op)));
  STRATA_RETURN_IF_ERROR(RequireData(a, OpName(op)));
  return RequireData(b, OpName(op));
}

absl::Status BinaryOut(BinaryOp op, const Tensor& a, const Tensor& b,
                       const Tensor& out) {
  STRATA_RETURN_IF_ERROR(CheckBinaryArgs(op, a, b));
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(out, OpName(op)));
  STRATA_ASSIGN_OR_RETURN(const SimpleDType* compute,
                          PromoteTypes(DTypeOf(a), DTypeOf(b), op));
  if (!IsArithmetic(DTypeOf(out))) {
    return TypeErrorCat(OpName(op), ": out dtype ", out.dtype().name(),
                        " is a storage type, not an arithmetic type");
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                          BroadcastShapes(OpName(op), ShapeOf(a), ShapeOf(b)));
  if (ShapeOf(out) != shape) {
    return ValueErrorCat(OpName(op), ": out has shape ",
                         ShapeText(ShapeOf(out)), ", the broadcast shape is ",
                         ShapeText(shape));
  }
  STRATA_RETURN_IF_ERROR(RequireWritable(out, OpName(op)));
  for (const Tensor* in : {&a, &b}) {
    if (MayOverlap(out, *in) && !SameView(out, *in)) {
      return ValueErrorCat(
          OpName(op), ": out partially overlaps an input in the same carrier");
    }
  }
  STRATA_RETURN_IF_ERROR(BinaryInto(op, a, b, out, *compute));
  out.carrier()->BumpVersion();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> Zeros(const SimpleDType& dtype,
                             absl::Span<const int64_t> shape) {
  for (int64_t e : shape) {
    if (e < 0) return ValueErrorCat("Zeros: negative extent ", e);
  }
  STRATA_ASSIGN_OR_RETURN(
      Layout layout,
      Layout::RowMajor(shape.size() == 1 ? IntTuple(shape[0])
                                         : IntTuple::Flat(shape)));
  STRATA_ASSIGN_OR_RETURN(auto carrier,
                          HostCarrier::Create(&dtype, layout.size()));
  return Tensor::Create(carrier, 0, layout);
}

namespace {

// The layout index of a coordinate with one component per top-level mode (an
// integer for rank 1); a component is linear within its mode, or hierarchical
// and congruent.
absl::StatusOr<int64_t> CoordinateIndex(const Tensor& t, const IntTuple& coord,
                                        absl::string_view op) {
  const Layout& layout = t.layout();
  const int64_t rank = layout.shape().is_leaf() ? 1 : layout.rank();
  const int64_t given = coord.is_leaf() ? 1 : coord.rank();
  if (given != rank) {
    return ValueErrorCat(op, ": coordinate ", coord.ToString(), " has ", given,
                         " components; the Tensor ", layout.ToString(),
                         " has rank ", rank);
  }
  if (layout.shape().is_leaf() && !coord.is_leaf())
    return layout.Crd2Idx(coord[0]);
  if (coord.SameStructure(layout.shape())) {
    // Fully congruent (one integer per leaf): a bounds-checked dot product.
    const auto c = coord.leaves();
    const auto extents = layout.shape().leaves();
    const auto strides = layout.stride().leaves();
    int64_t index = 0;
    for (size_t k = 0; k < c.size(); ++k) {
      if (c[k] < 0 || c[k] >= extents[k])
        return layout.Crd2Idx(coord);  // The error.
      index += c[k] * strides[k];
    }
    return index;
  }
  return layout.Crd2Idx(coord);
}

}  // namespace

absl::StatusOr<Scalar> GetItem(const Tensor& t, const IntTuple& coord) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(t, "GetItem"));
  STRATA_RETURN_IF_ERROR(RequireHostData(t, "GetItem"));
  STRATA_ASSIGN_OR_RETURN(const int64_t index,
                          CoordinateIndex(t, coord, "GetItem"));
  const SimpleDType& d = DTypeOf(t);
  const void* data = t.carrier()->data();
  if (d.is_bool())
    return Scalar::Bool(LoadInt(d, data, t.offset() + index) != 0);
  if (IsIntegral(d)) return Scalar::Int(LoadInt(d, data, t.offset() + index));
  return Scalar::Float(LoadDouble(d, data, t.offset() + index));
}

namespace {
void StoreScalar(const SimpleDType& d, void* data, int64_t index,
                 const Scalar& v) {
  if (v.is_float()) {
    StoreDouble(d, data, index, v.as_double());
  } else {
    StoreInt(d, data, index, v.as_int());
  }
}
}  // namespace

absl::Status SetItem(const Tensor& t, const IntTuple& coord, Scalar value) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(t, "SetItem"));
  STRATA_RETURN_IF_ERROR(RequireHostData(t, "SetItem"));
  STRATA_ASSIGN_OR_RETURN(const int64_t index,
                          CoordinateIndex(t, coord, "SetItem"));
  StoreScalar(DTypeOf(t), t.carrier()->mutable_data(), t.offset() + index,
              value);
  t.carrier()->BumpVersion();
  return absl::OkStatus();
}

absl::Status Fill(const Tensor& dst, Scalar value) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(dst, "Fill"));
  STRATA_RETURN_IF_ERROR(RequireWritable(dst, "Fill"));
  const std::vector<int64_t> shape = ShapeOf(dst);
  const SimpleDType& d = DTypeOf(dst);
  void* data = dst.carrier()->mutable_data();
  ForEachIndex<1>(shape, {AlignedAccess(dst.layout(), shape)}, {dst.offset()},
                  [&](const std::array<int64_t, 1>& i) {
                    StoreScalar(d, data, i[0], value);
                  });
  dst.carrier()->BumpVersion();
  return absl::OkStatus();
}

absl::Status CopyFrom(const Tensor& dst, const Tensor& src) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(dst, "CopyFrom"));
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(src, "CopyFrom"));
  STRATA_RETURN_IF_ERROR(RequireData(src, "CopyFrom"));
  const std::vector<int64_t> shape = ShapeOf(dst);
  STRATA_RETURN_IF_ERROR(RequireBroadcastsTo("CopyFrom", ShapeOf(src), shape));
  STRATA_RETURN_IF_ERROR(RequireWritable(dst, "CopyFrom"));
  if (MayOverlap(dst, src) && !SameView(dst, src)) {
    // Read everything first: copy src to a temporary.
    STRATA_ASSIGN_OR_RETURN(Tensor staged, CompactCopy(src, DTypeOf(src)));
    CopyKernel(dst, shape, AlignedAccess(dst.layout(), shape), staged,
               AlignedAccess(staged.layout(), shape));
  } else {
    CopyKernel(dst, shape, AlignedAccess(dst.layout(), shape), src,
               AlignedAccess(src.layout(), shape));
  }
  dst.carrier()->BumpVersion();
  return absl::OkStatus();
}

absl::StatusOr<const SimpleDType*> PromoteTypes(const SimpleDType& a,
                                                const SimpleDType& b,
                                                BinaryOp op) {
  for (const SimpleDType* d : {&a, &b}) {
    STRATA_RETURN_IF_ERROR(RequireScalarType(*d, OpName(op)).status());
    if (!IsArithmetic(*d)) {
      return TypeErrorCat(
          OpName(op), ": ", d->name(),
          " is a storage type, not an arithmetic type; Cast it first");
    }
  }
  if (op == BinaryOp::kSub && (a.is_bool() || b.is_bool())) {
    // As PyTorch: subtraction with a bool operand is refused (use logical
    // operations instead).
    return TypeErrorCat("Sub: subtraction with a bool operand (", a.name(),
                        " - ", b.name(), ") is not supported");
  }
  const SimpleDType* result;
  if (&a == &b) {
    result = &a;
  } else if (a.is_bool() || b.is_bool()) {
    result = a.is_bool() ? &b : &a;
  } else if (a.is_floating() || b.is_floating()) {
    if (!a.is_floating()) {
      result = &b;
    } else if (!b.is_floating()) {
      result = &a;
    } else if (a.bits() == b.bits()) {  // float16 with bfloat16.
      result = dtypes::Float32();
    } else {
      result = a.bits() > b.bits() ? &a : &b;
    }
  } else if (a.is_signed() == b.is_signed()) {
    result = a.bits() >= b.bits() ? &a : &b;
  } else {
    const SimpleDType& s = a.is_signed() ? a : b;  // The other one is uint8.
    result = s.bits() > 8 ? &s : dtypes::Int16();
  }
  if (op == BinaryOp::kDiv && !result->is_floating())
    result = dtypes::Float32();
  return result;
}

absl::StatusOr<Tensor> BinaryOpTensor(BinaryOp op, const Tensor& a,
                                      const Tensor& b) {
  STRATA_RETURN_IF_ERROR(CheckBinaryArgs(op, a, b));
  STRATA_ASSIGN_OR_RETURN(const SimpleDType* compute,
                          PromoteTypes(DTypeOf(a), DTypeOf(b), op));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                          BroadcastShapes(OpName(op), ShapeOf(a), ShapeOf(b)));
  STRATA_ASSIGN_OR_RETURN(Tensor out, Zeros(*compute, shape));
  STRATA_RETURN_IF_ERROR(BinaryInto(op, a, b, out, *compute));
  return out;
}

absl::StatusOr<Tensor> Add(const Tensor& a, const Tensor& b) {
  return BinaryOpTensor(BinaryOp::kAdd, a, b);
}
absl::StatusOr<Tensor> Sub(const Tensor& a, const Tensor& b) {
  return BinaryOpTensor(BinaryOp::kSub, a, b);
}
absl::StatusOr<Tensor> Mul(const Tensor& a, const Tensor& b) {
  return BinaryOpTensor(BinaryOp::kMul, a, b);
}
absl::StatusOr<Tensor> Div(const Tensor& a, const Tensor& b) {
  return BinaryOpTensor(BinaryOp::kDiv, a, b);
}
absl::Status AddOut(const Tensor& a, const Tensor& b, const Tensor& out) {
  return BinaryOut(BinaryOp::kAdd, a, b, out);
}
absl::Status SubOut(const Tensor& a, const Tensor& b, const Tensor& out) {
  return BinaryOut(BinaryOp::kSub, a, b, out);
}
absl::Status MulOut(const Tensor& a, const Tensor& b, const Tensor& out) {
  return BinaryOut(BinaryOp::kMul, a, b, out);
}
absl::Status DivOut(const Tensor& a, const Tensor& b, const Tensor& out) {
  return BinaryOut(BinaryOp::kDiv, a, b, out);
}

namespace {

// out = -a in a's dtype (converted to out's): integers wrap, floats flip
// their sign bit, so Neg(+0.0) is -0.0 as in PyTorch.
void NegInto(const Tensor& a, const Tensor& out) {
  const std::vector<int64_t> shape = ShapeOf(out);
  const std::array<std::vector<ModeAccess>, 2> ops = {
      AlignedAccess(out.layout(), shape), AlignedAccess(a.layout(), shape)};
  const std::array<int64_t, 2> bases = {out.offset(), a.offset()};
  const SimpleDType& ad = DTypeOf(a);
  const SimpleDType& od = DTypeOf(out);
  void* o = out.carrier()->mutable_data();
  const void* x = a.carrier()->data();
  if (&ad == &od) {
    auto typed = [&](auto tag) {
      using T = decltype(tag);
      T* to = static_cast<T*>(o);
      const T* from = static_cast<const T*>(x);
      ForEachIndex<2>(shape, ops, bases, [&](const std::array<int64_t, 2>& i) {
        if constexpr (std::is_integral_v<T>) {
          to[i[0]] = static_cast<T>(0 - static_cast<uint64_t>(from[i[1]]));
        } else {
          to[i[0]] = -from[i[1]];
        }
      });
    };
    if (DispatchNative(ad, typed)) return;
  }
  if (IsIntegral(ad)) {
    ForEachIndex<2>(shape, ops, bases, [&](const std::array<int64_t, 2>& i) {
      StoreInt(od, o, i[0],
               static_cast<int64_t>(
                   0 - static_cast<uint64_t>(LoadInt(ad, x, i[1]))));
    });
  } else {
    ForEachIndex<2>(shape, ops, bases, [&](const std::array<int64_t, 2>& i) {
      StoreDouble(od, o, i[0], -LoadDouble(ad, x, i[1]));
    });
  }
}

absl::StatusOr<Tensor> NegImpl(const Tensor& a, const Tensor* out) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(a, "Neg"));
  if (out != nullptr) STRATA_RETURN_IF_ERROR(RequireKernelTensor(*out, "Neg"));
  STRATA_RETURN_IF_ERROR(RequireData(a, "Neg"));
  if (DTypeOf(a).is_bool())
    return TypeError("Neg: negation of a bool Tensor is not supported");
  if (!IsArithmetic(DTypeOf(a))) {
    return TypeErrorCat("Neg: ", a.dtype().name(),
                        " is a storage type, not an arithmetic type");
  }
  if (out == nullptr) {
    STRATA_ASSIGN_OR_RETURN(Tensor result, Zeros(DTypeOf(a), ShapeOf(a)));
    NegInto(a, result);
    return result;
  }
  if (!IsArithmetic(DTypeOf(*out))) {
    return TypeErrorCat("Neg: out dtype ", out->dtype().name(),
                        " is a storage type, not an arithmetic type");
  }
  if (ShapeOf(*out) != ShapeOf(a)) {
    return ValueErrorCat("Neg: out has shape ", ShapeText(ShapeOf(*out)),
                         ", the input's is ", ShapeText(ShapeOf(a)));
  }
  STRATA_RETURN_IF_ERROR(RequireWritable(*out, "Neg"));
  if (MayOverlap(*out, a) && !SameView(*out, a)) {
    return ValueError(
        "Neg: out partially overlaps the input in the same "
        "carrier");
  }
  NegInto(a, *out);
  out->carrier()->BumpVersion();
  return *out;
}

}  // namespace

absl::StatusOr<Tensor> Neg(const Tensor& a) { return NegImpl(a, nullptr); }
absl::Status NegOut(const Tensor& a, const Tensor& out) {
  return NegImpl(a, &out).status();
}

absl::StatusOr<Tensor> Sum(const Tensor& a) {
  std::vector<int64_t> all(ShapeOf(a).size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return Sum(a, all);
}

absl::StatusOr<Tensor> Sum(const Tensor& a, absl::Span<const int64_t> modes) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(a, "Sum"));
  STRATA_RETURN_IF_ERROR(RequireData(a, "Sum"));
  const SimpleDType& d = DTypeOf(a);
  if (!IsArithmetic(d)) {
    return TypeErrorCat("Sum: ", d.name(),
                        " is a storage type, not an arithmetic type");
  }
  const std::vector<int64_t> shape = ShapeOf(a);
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t m : modes) {
    if (m < 0 || m >= static_cast<int64_t>(shape.size()) || reduced[m]) {
      return ValueErrorCat("Sum: mode ", m,
                           " is out of range or repeated for rank ",
                           shape.size());
    }
    reduced[m] = true;
  }
  std::vector<int64_t> out_shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!reduced[i]) out_shape.push_back(shape[i]);
  }
  const SimpleDType& result = d.is_floating() ? d : *dtypes::Int64();
  STRATA_ASSIGN_OR_RETURN(Tensor out, Zeros(result, out_shape));
  // The accumulator, seen through a layout of a's shape with stride 0 on
  // reduced modes.
  std::vector<ModeAccess> acc_access(shape.size());
  {
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      if (reduced[i]) continue;
      acc_access[i].stride = shape[i] == 1 ? 0 : stride;
      stride *= shape[i];
    }
  }
  const std::array<std::vector<ModeAccess>, 2> ops = {
      acc_access, AlignedAccess(a.layout(), shape)};
  const void* in = a.carrier()->data();
  void* o = out.carrier()->mutable_data();
  if (d.is_floating()) {
    std::vector<double> acc(out.size(), 0.0);
    ForEachIndex<2>(shape, ops, {0, a.offset()},
                    [&](const std::array<int64_t, 2>& i) {
                      acc[i[0]] += LoadDouble(d, in, i[1]);
                    });
    for (int64_t i = 0; i < out.size(); ++i) StoreDouble(result, o, i, acc[i]);
  } else {
    std::vector<int64_t> acc(out.size(), 0);
    ForEachIndex<2>(
        shape, ops, {0, a.offset()}, [&](const std::array<int64_t, 2>& i) {
          acc[i[0]] =
              static_cast<int64_t>(static_cast<uint64_t>(acc[i[0]]) +
                                   static_cast<uint64_t>(LoadInt(d, in, i[1])));
        });
    for (int64_t i = 0; i < out.size(); ++i) StoreInt(result, o, i, acc[i]);
  }
  return out;
}

bool IsCompactRowMajor(const Tensor& a) {
  if (a.size() <= 1) return true;
  auto modes = TopLevelModes(a.layout());
  std::reverse(modes.begin(), modes.end());
  auto reversed = MakeLayout(modes);
  if (!reversed.ok()) return false;
  const Layout c = Coalesce(*reversed);
  return c.shape().is_leaf() && c.stride().value() == 1;
}

absl::StatusOr<Tensor> Contiguous(const Tensor& a) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(a, "Contiguous"));
  STRATA_RETURN_IF_ERROR(RequireData(a, "Contiguous"));
  if (IsCompactRowMajor(a)) return a;
  return CompactCopy(a, DTypeOf(a));
}

absl::StatusOr<Tensor> Clone(const Tensor& a) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(a, "Clone"));
  STRATA_RETURN_IF_ERROR(RequireData(a, "Clone"));
  return CompactCopy(a, DTypeOf(a));
}

absl::StatusOr<Tensor> Cast(const Tensor& a, const SimpleDType& dtype) {
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(a, "Cast"));
  STRATA_RETURN_IF_ERROR(RequireScalarType(dtype, "Cast").status());
  STRATA_RETURN_IF_ERROR(RequireData(a, "Cast"));
  return CompactCopy(a, dtype);
}

absl::Status Scatter(const Tensor& dst, int64_t mode, const Tensor& index,
                     const Tensor& src) {
  for (const Tensor* t : {&dst, &index, &src}) {
    STRATA_RETURN_IF_ERROR(RequireKernelTensor(*t, "Scatter"));
    STRATA_RETURN_IF_ERROR(RequireData(*t, "Scatter"));
  }
  const SimpleDType& id = DTypeOf(index);
  if (&id != dtypes::Int64() && &id != dtypes::Int32()) {
    return TypeErrorCat("Scatter: index dtype ", id.name(),
                        " is not int64 or int32");
  }
  const std::vector<int64_t> dshape = ShapeOf(dst), ishape = ShapeOf(index),
                             sshape = ShapeOf(src);
  const int64_t rank = dshape.size();
  if (static_cast<int64_t>(ishape.size()) != rank ||
      static_cast<int64_t>(sshape.size()) != rank) {
    return ValueErrorCat("Scatter: dst ", ShapeText(dshape), ", index ",
                         ShapeText(ishape), " and src ", ShapeText(sshape),
                         " must have one rank");
  }
  if (mode < 0 || mode >= rank) {
    return ValueErrorCat("Scatter: mode ", mode, " is out of range for rank ",
                         rank);
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (ishape[d] > sshape[d] || (d != mode && ishape[d] > dshape[d])) {
      return ValueErrorCat("Scatter: index shape ", ShapeText(ishape),
                           " exceeds src ", ShapeText(sshape), " or dst ",
                           ShapeText(dshape), " at mode ", d);
    }
  }
  STRATA_RETURN_IF_ERROR(RequireWritable(dst, "Scatter"));
  const auto dmodes = TopLevelModes(dst.layout());
  std::vector<ModeAccess> dst_access =
      AlignedAccess(dst.layout(), ishape, true);
  dst_access[mode] = ModeAccess();  // The index value chooses this coordinate.
  const ModeAccess chosen = MakeModeAccess(dmodes[mode], false);
  const std::array<std::vector<ModeAccess>, 3> ops = {
      AlignedAccess(index.layout(), ishape, true),
      AlignedAccess(src.layout(), ishape, true), dst_access};
  const std::array<int64_t, 3> bases = {index.offset(), src.offset(),
                                        dst.offset()};
  const void* idx = index.carrier()->data();
  // Pass 1: every index value in range, before any write.
  absl::Status bad;
  int64_t position = 0;
  const int64_t limit = dshape[mode];
  auto report = [&](int64_t v) {
    bad = ValueErrorCat("Scatter: index value ", v, " at row-major position ",
                        position, " is outside [0, ", limit, ") of dst mode ",
                        mode);
  };
  if (&id == dtypes::Int64()) {
    const int64_t* ix = static_cast<const int64_t*>(idx);
    ForEachIndex<3>(ishape, ops, bases, [&](const std::array<int64_t, 3>& i) {
      const int64_t v = ix[i[0]];
      if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(limit) && bad.ok())
        report(v);
      ++position;
    });
  } else {
    ForEachIndex<3>(ishape, ops, bases, [&](const std::array<int64_t, 3>& i) {
      const int64_t v = LoadInt(id, idx, i[0]);
      if ((v < 0 || v >= limit) && bad.ok()) report(v);
      ++position;
    });
  }
  STRATA_RETURN_IF_ERROR(bad);
  // Pass 2: the writes (src may share dst's carrier: stage it first).
  Tensor from = src;
  if (MayOverlap(dst, src)) {
    STRATA_ASSIGN_OR_RETURN(from, CompactCopy(src, DTypeOf(src)));
  }
  std::array<std::vector<ModeAccess>, 3> ops2 = ops;
  ops2[1] = AlignedAccess(from.layout(), ishape, true);
  const std::array<int64_t, 3> bases2 = {index.offset(), from.offset(),
                                         dst.offset()};
  const SimpleDType& dd = DTypeOf(dst);
  const SimpleDType& sd = DTypeOf(from);
  const void* s = from.carrier()->data();
  void* o = dst.carrier()->mutable_data();
  bool done = false;
  if (&dd == &sd && &id == dtypes::Int64() && chosen.strided()) {
    auto typed = [&](auto tag) {
      using T = decltype(tag);
      T* out = static_cast<T*>(o);
      const T* in = static_cast<const T*>(s);
      const int64_t* ix = static_cast<const int64_t*>(idx);
      const int64_t step = chosen.stride;
      ForEachIndex<3>(ishape, ops2, bases2,
                      [&](const std::array<int64_t, 3>& i) {
                        out[i[2] + ix[i[0]] * step] = in[i[1]];
                      });
      done = true;
    };
    DispatchNative(dd, typed);
  }
  if (done) {
    dst.carrier()->BumpVersion();
    return absl::OkStatus();
  }
  ForEachIndex<3>(ishape, ops2, bases2, [&](const std::array<int64_t, 3>& i) {
    const int64_t target = i[2] + chosen.at(LoadInt(id, idx, i[0]));
    if (IsIntegral(dd) && IsIntegral(sd)) {
      StoreInt(dd, o, target, LoadInt(sd, s, i[1]));
    } else {
      StoreDouble(dd, o, target, LoadDouble(sd, s, i[1]));
    }
  });
  dst.carrier()->BumpVersion();
  return absl::OkStatus();
}

}  // namespace strata
