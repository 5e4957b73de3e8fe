// What the files of the Python binding (`_strata`, python.md) share: argument
// conversion that follows the spec rather than pybind11's defaults, the
// mapping of Strata's error kinds onto Python's exceptions, and the one Python
// object of each dtype, carrier and Tensor.
//
// NOTE [ Python objects of Strata's values ]
// - A dtype descriptor lives for the process (NOTE [ DType identity and
//   lifetime ] in dtype/dtype.h), so its Python object does too: DTypeObject
//   returns the one object of a descriptor, and `is` is dtype identity.
// - A carrier made in C++ (host, mapped, external, recorded) is owned by
//   std::shared_ptr; its Python object holds one.
// - A carrier of a Python class (strata.Carrier or a subclass) is owned by
//   its Python object, which may carry the subclass's own state. A Tensor
//   over it holds a shared_ptr whose control block holds a reference to that
//   Python object (CarrierArg), so the object, and so the carrier, lives while
//   any Tensor does; `t.carrier` returns that same object.
// - A Tensor is a value (it shares its immutable representation); its Python
//   object holds a copy.
//
// NOTE [ Casting without type lookups ]
// pybind11 finds a C++ type's Python type by hashing its mangled name on every
// isinstance, argument cast and returned object: a quarter of a Tensor's
// construction from Python. The hot paths (construction, the views, the
// Tensor, Layout and Carrier arguments, returned Tensors and Layouts) compare
// Python types by pointer instead, with the types kept at binding time, and
// read the value (or holder) of the pybind11 instance directly; a Python
// subclass is possible of strata.Carrier only (the other classes are final),
// whose holder is a std::shared_ptr<Carrier>.
#ifndef STRATA_PYTHON_BINDING_H_
#define STRATA_PYTHON_BINDING_H_

#include <cxxabi.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "carrier/carrier.h"
#include "core/tensor.h"
#include "dtype/dtype.h"
#include "dtype/representation_rule.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "ops/scalar.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"

namespace strata {
namespace python {

namespace py = pybind11;

// ---- Fast casts (NOTE [ Casting without type lookups ]) -------------------
// The value of a pybind11 instance whose Python type is exactly `type` (a
// final class), or nullptr: another type, or an instance whose __init__ never
// ran (Class.__new__(Class)).
template <typename T>
T* ExactValue(py::handle object, PyTypeObject* type) {
  if (Py_TYPE(object.ptr()) != type) return nullptr;
  auto* instance = reinterpret_cast<py::detail::instance*>(object.ptr());
  return instance->get_value_and_holder().value_ptr<T>();
}
// A new Python object of the bound class `info` holding `value`.
template <typename T>
py::object NewObject(T&& value, const py::detail::type_info* info) {
  using Value = std::decay_t<T>;
  return py::reinterpret_steal<py::object>(
      py::detail::type_caster_generic::cast(
          &value, py::return_value_policy::move, py::handle(), info, nullptr,
          [](const void* source) -> void* {
            return new Value(std::move(
                *const_cast<Value*>(static_cast<const Value*>(source))));
          }));
}

// ---- The GIL (tensor_binding.cc) -------------------------------------------
// Whether Python objects may be touched from C++ now: the interpreter is up
// and not finalizing (a daemon thread still running at exit may not take the
// GIL: it would be made to exit inside a destructor).
bool PythonAlive();

// NOTE [ Releases while a kernel runs ]
// A kernel runs without the GIL, so another Python thread may call
// Carrier.release() meanwhile; a kernel reads a carrier's data() more than
// once, and a released carrier answers nullptr at once. So every carrier of
// the Tensors a kernel runs on is marked in use (under the GIL) for its
// duration, and release() of a carrier in use is deferred to the end of the
// last kernel using it: the carrier reads as released from then on.
class CarriersInUse {
 public:
  explicit CarriersInUse(absl::Span<const Tensor* const> tensors);
  ~CarriersInUse();
  CarriersInUse(const CarriersInUse&) = delete;
  CarriersInUse& operator=(const CarriersInUse&) = delete;

 private:
  std::vector<std::shared_ptr<Carrier>> carriers_;
};
// Whether `carrier` is in use by a kernel, in which case its release is
// recorded to happen when the last one ends (and true is returned).
bool DeferRelease(Carrier* carrier);

// Runs `op`, a kernel over the data of `tensors` that touches no Python
// object, without the GIL (python.md, "Interop"), their carriers in use. The
// GIL is taken back by a plain call, not a destructor: a daemon thread that
// finds the interpreter finalizing is made to exit there, and unwinding
// through a noexcept destructor would terminate the process.
template <typename F>
auto WithoutGil(absl::Span<const Tensor* const> tensors, F op)
    -> decltype(op()) {
  using Result = decltype(op());
  CarriersInUse in_use(tensors);
  std::optional<Result> result;
  std::exception_ptr error;
  PyThreadState* state = PyEval_SaveThread();
  try {
    result.emplace(op());
  } catch (abi::__forced_unwind&) {
    // A thread made to exit (a rule taking the GIL at finalization): it
    // must unwind on, and has no GIL to take back.
    throw;
  } catch (...) {  // std::bad_alloc: Strata itself never throws.
    error = std::current_exception();
  }
  PyEval_RestoreThread(state);
  if (error) std::rethrow_exception(error);
  return *std::move(result);
}

// A __reduce__ that refuses to pickle (TypeError naming `what`, and what to
// use instead): pybind11's default path for pickle protocols 0 and 1 aborts
// the process on its classes.
void RefusePickling(py::handle cls, const char* what, const char* instead);

// ---- Errors (errors.cc) ----------------------------------------------------
// Kind -> exception: TypeError -> TypeError, ValueError -> ValueError,
// OneSubtensorRequired -> strata.OneSubtensorRequiredError (a ValueError),
// ResourceExhausted -> MemoryError, anything else -> RuntimeError; the message
// is the C++ message. A status that carries a Python exception a rule raised
// (PythonErrorStatus) raises that same exception object.
void RegisterErrors(py::module_& module);
[[noreturn]] void Raise(const absl::Status& status);
inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) Raise(status);
}
template <typename T>
T ValueOrRaise(absl::StatusOr<T> value) {
  if (!value.ok()) Raise(value.status());
  return *std::move(value);
}
// The exception `status` would raise, as an object (for the per-tensor
// results of the readers and the shard planner).
py::object ExceptionObject(const absl::Status& status);
// The status of the Python exception `error` (now fetched): of kind TypeError
// when it is one, else ValueError, with `context` before its text, and
// carrying the exception object, so that Raise raises it again unchanged.
absl::Status PythonErrorStatus(py::error_already_set& error,
                               absl::string_view context);
// Raises a Python exception of `type` with `message`.
[[noreturn]] void RaisePython(PyObject* type, const std::string& message);

// ---- Arguments (convert.cc) ------------------------------------------------
// "float", "NoneType", ...: the type of `object`, for messages.
std::string TypeName(py::handle object);
// A file's name or text as a str, undecodable bytes kept as surrogates
// (os.fsdecode's way).
py::str Utf8(const std::string& text);
// Whether `object` is an integer as the spec reads it: an int or anything
// with __index__ (numpy integers), but not a bool.
bool IsInteger(py::handle object);
// The integer `object` is. TypeError naming `what` for anything else (a float,
// a str, None, a bool); ValueError when it does not fit in int64.
int64_t ToInt64(py::handle object, absl::string_view what);
// An int or a nested tuple (or list) of ints.
IntTuple ToIntTuple(py::handle object, absl::string_view what);
py::object FromIntTuple(const IntTuple& tuple);
// A sequence of ints (a tuple, a list, or any iterable but a str).
std::vector<int64_t> ToInt64Vector(py::handle object, absl::string_view what);
// One integer, or a sequence of them (a dim or dims, a shape).
std::vector<int64_t> ToInt64OrVector(py::handle object, absl::string_view what);
// A dim of a Tensor of rank `rank`, negative dims counting from the end as in
// NumPy; `extra` is 1 where one past the last dim is a position (unsqueeze).
// Out of range: passed on unchanged, so that the C++ view names it.
int64_t NormalizeDim(int64_t dim, int64_t rank, int64_t extra = 0);
// bool(object), raising what its __bool__ raises.
bool Truth(py::handle object);
// A Python number: a bool, an int or a float, or a numpy scalar of one.
bool IsNumber(py::handle object);
// bool, int (numpy integers too) or float (numpy floats too).
Scalar ToScalar(py::handle object, absl::string_view what);
py::object FromScalar(const Scalar& scalar);
// A str or an os.PathLike.
std::string ToPath(py::handle object, absl::string_view what);

// ---- Layouts (layout_binding.cc) -------------------------------------------
void BindLayout(py::module_& module);
// TypeError naming `what` when `object` is not a strata.Layout.
const Layout& ToLayout(py::handle object, absl::string_view what);
// The Layout, or a TypeError status ("not a Layout") for the factory's order.
absl::StatusOr<Layout> ToLayoutOrStatus(py::handle object,
                                        absl::string_view what);

// ---- Dtypes (dtype_binding.cc) ---------------------------------------------
void BindDTypes(py::module_& module);
py::object DTypeObject(const DType* dtype);
// A strata DType object, or a registered name where `names` is set.
// TypeError naming `what` otherwise; ValueError for an unknown name.
const DType& ToDType(py::handle object, absl::string_view what,
                     bool names = false);
const DType* ToDTypeOrNull(py::handle object);
// ToDType, and TypeError naming `what` where the dtype is not simple.
const SimpleDType& ToSimpleDType(py::handle object, absl::string_view what,
                                 bool names = false);

// The dtypes as a tuple of their objects.
py::tuple DTypeTuple(absl::Span<const SimpleDType* const> dtypes);

// ---- Rules (rule_binding.cc) -----------------------------------------------
// RepresentationValidationContext and Rule, in strata.dtype (the context in
// strata too).
void BindRules(py::module_& module, py::module_& dtype_module);
// rules[i] of a CompoundDType: a built-in Rule's C++ rule, or a rule written
// in Python (TypeError when it has no callable validate).
std::shared_ptr<const RepresentationRule> ToRule(py::handle rule, size_t i);
// The object of a rule: the Python rule itself, or a built-in one's Rule.
py::object RuleObject(const std::shared_ptr<const RepresentationRule>& rule);

// ---- Carriers (carrier_binding.cc) -----------------------------------------
void BindCarriers(py::module_& module);
// The carrier of a strata.Carrier object as a Tensor holds it, or nullptr
// when `object` is not one (NOTE [ Python objects of Strata's values ]).
std::shared_ptr<Carrier> CarrierArg(py::handle object);
py::object CarrierObject(const std::shared_ptr<Carrier>& carrier);
// The carrier's exact class: the Python class of a Python carrier, else the
// class bound for its C++ type.
py::object CarrierClassObject(const std::shared_ptr<Carrier>& carrier);

// ---- Tensors (tensor_binding.cc, dlpack_binding.cc) ------------------------
void BindTensor(py::module_& module);
py::object TensorObject(Tensor tensor);
py::object LayoutObject(Layout layout);
// TypeError naming `what` when `object` is not a strata.Tensor.
const Tensor& ToTensor(py::handle object, absl::string_view what);
// A Tensor, or an object with __dlpack__ imported without a copy.
Tensor ToTensorOrImport(py::handle object, absl::string_view what);
py::object ExportDLPack(const Tensor& tensor, py::handle stream,
                        py::handle max_version);
Tensor ImportDLPack(py::handle object);

// ---- The rest (interop_binding.cc) -----------------------------------------
// quantize, the checkpoint readers and writer, shard planning, dump and
// replay, and the framework-owned factory.
void BindInterop(py::module_& module);

// ---- Whole checkpoints (checkpoint_binding.cc) ------------------------------
// _convert (strata.convert, convert/convert.h) and _write_checkpoint
// (strata.write_checkpoint, checkpoint/checkpoint_writer.h).
void BindCheckpoints(py::module_& module);

}  // namespace python
}  // namespace strata

#endif  // STRATA_PYTHON_BINDING_H_
