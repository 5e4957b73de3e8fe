// Elementwise arithmetic and type promotion: PromoteTypes, Add/Sub/Mul/Div
// (+ Out), Neg (+ Out) (ops.h).
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "dtype/float_formats.h"
#include "dtype/registry.h"
#include "dtype/scalar_type.h"
#include "ops/internal/checks.h"
#include "ops/internal/element_io.h"
#include "ops/internal/iterate.h"
#include "ops/internal/require.h"
#include "ops/ops.h"
#include "util/errors.h"
#include "util/status_macros.h"

namespace strata {

using ops_internal::AlignedAccess;
using ops_internal::BroadcastShapes;
using ops_internal::DispatchNative;
using ops_internal::DTypeOf;
using ops_internal::ForEachIndex;
using ops_internal::IsArithmetic;
using ops_internal::IsIntegral;
using ops_internal::LoadDouble;
using ops_internal::LoadInt;
using ops_internal::MayOverlap;
using ops_internal::ModeAccess;
using ops_internal::RequireData;
using ops_internal::RequireKernelTensor;
using ops_internal::RequireWritable;
using ops_internal::SameView;
using ops_internal::ShapeText;
using ops_internal::StoreDouble;
using ops_internal::StoreInt;
using ops_internal::WrapToIntegral;

namespace {

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
  const std::vector<int64_t> shape = out.shape();
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
               WrapToIntegral(compute, ApplyInt(op, LoadInt(ad, x, i[1]),
                                                LoadInt(bd, y, i[2]))));
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

bool IsRank0(const Tensor& t) {
  const IntTuple& shape = t.layout().shape();
  return !shape.is_leaf() && shape.rank() == 0;
}

int Category(const SimpleDType& d) {
  return d.is_bool() ? 0 : d.is_floating() ? 2 : 1;
}

// NOTE [ Rank-0 operands ]
// PyTorch promotes a rank-0 Tensor with one of rank >= 1 by category only
// (its result_type: the dimensioned operand's dtype, unless the rank-0 one is
// of a higher category -- bool < integer < floating -- and then the two
// promote as usual): int8 [3] + int64 [] is int8, bfloat16 [3] + float32 []
// is bfloat16, int16 [3] + float64 [] is float64. Operands of equal standing
// (both rank 0, or neither) promote by PromoteTypes. Python numbers reach the
// ops as rank-0 Tensors of the dtype PyTorch gives a wrapped number
// (python/tensor_binding.cc), so they follow the same rule.
absl::StatusOr<const SimpleDType*> ResultType(BinaryOp op, const Tensor& a,
                                              const Tensor& b) {
  STRATA_ASSIGN_OR_RETURN(const SimpleDType* promoted,
                          PromoteTypes(DTypeOf(a), DTypeOf(b), op));
  const bool a_rank0 = IsRank0(a);
  if (a_rank0 == IsRank0(b)) return promoted;
  const SimpleDType& dimensioned = a_rank0 ? DTypeOf(b) : DTypeOf(a);
  const SimpleDType& rank0 = a_rank0 ? DTypeOf(a) : DTypeOf(b);
  const SimpleDType* result =
      Category(rank0) > Category(dimensioned) ? promoted : &dimensioned;
  if (op == BinaryOp::kDiv && !result->is_floating()) {
    result = dtypes::Float32();
  }
  return result;
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
  STRATA_ASSIGN_OR_RETURN(const SimpleDType* compute, ResultType(op, a, b));
  if (!IsArithmetic(DTypeOf(out))) {
    return TypeErrorCat(OpName(op), ": out dtype ", out.dtype().name(),
                        " is a storage type, not an arithmetic type");
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                          BroadcastShapes(OpName(op), a.shape(), b.shape()));
  if (out.shape() != shape) {
    return ValueErrorCat(OpName(op), ": out has shape ", ShapeText(out.shape()),
                         ", the broadcast shape is ", ShapeText(shape));
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
  STRATA_ASSIGN_OR_RETURN(const SimpleDType* compute, ResultType(op, a, b));
  STRATA_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                          BroadcastShapes(OpName(op), a.shape(), b.shape()));
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
absl::Status AddOut(const Tensor& out, const Tensor& a, const Tensor& b) {
  return BinaryOut(BinaryOp::kAdd, a, b, out);
}
absl::Status SubOut(const Tensor& out, const Tensor& a, const Tensor& b) {
  return BinaryOut(BinaryOp::kSub, a, b, out);
}
absl::Status MulOut(const Tensor& out, const Tensor& a, const Tensor& b) {
  return BinaryOut(BinaryOp::kMul, a, b, out);
}
absl::Status DivOut(const Tensor& out, const Tensor& a, const Tensor& b) {
  return BinaryOut(BinaryOp::kDiv, a, b, out);
}

namespace {

// out = -a in a's dtype (converted to out's): integers wrap, floats flip
// their sign bit, so Neg(+0.0) is -0.0 as in PyTorch.
void NegInto(const Tensor& a, const Tensor& out) {
  const std::vector<int64_t> shape = out.shape();
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
               WrapToIntegral(
                   ad, static_cast<int64_t>(
                           0 - static_cast<uint64_t>(LoadInt(ad, x, i[1])))));
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
    STRATA_ASSIGN_OR_RETURN(Tensor result, Zeros(DTypeOf(a), a.shape()));
    NegInto(a, result);
    return result;
  }
  if (!IsArithmetic(DTypeOf(*out))) {
    return TypeErrorCat("Neg: out dtype ", out->dtype().name(),
                        " is a storage type, not an arithmetic type");
  }
  if (out->shape() != a.shape()) {
    return ValueErrorCat("Neg: out has shape ", ShapeText(out->shape()),
                         ", the input's is ", ShapeText(a.shape()));
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
absl::Status NegOut(const Tensor& out, const Tensor& a) {
  return NegImpl(a, &out).status();
}

}  // namespace strata
