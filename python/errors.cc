// Strata's error kinds as Python's exceptions (python.md, "Errors").
#include "util/errors.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "python/binding.h"

namespace strata {
namespace python {
namespace {

PyObject* one_subtensor_required_error = nullptr;

// NOTE [ Exceptions a rule raised ]
// A Python rule's exception crosses the C++ validation as a status whose
// payload names it; the exception object waits here, on its thread, until
// Raise finds it, so that construction raises that same object (the spec:
// "propagate that exception"). Some C++ callers drop a failed status on
// purpose (a planner's trial slice), so the objects wait in a ring of
// kPending: an old one is dropped, never an unbounded heap. A status raised
// after its object was dropped raises by kind with the same text.
constexpr absl::string_view kPythonExceptionPayload =
    "strata.dev/PythonException";
constexpr int kPending = 256;

struct PendingException {
  uint64_t id = 0;
  PyObject* exception = nullptr;  // A strong reference, or null.
};

struct PendingRing {
  std::array<PendingException, kPending> slots;
};

// Ids across all threads: a status raised on another thread than the rule's
// finds no slot of its id there, never another exception.
std::atomic<uint64_t> next_pending_id{1};

PendingRing& Pending() {
  // Never destroyed: a thread's objects may outlive the interpreter's
  // finalization, when no reference may be dropped.
  thread_local PendingRing* ring = new PendingRing();
  return *ring;
}

uint64_t Keep(py::object exception) {
  PendingRing& ring = Pending();
  const uint64_t id = next_pending_id.fetch_add(1, std::memory_order_relaxed);
  PendingException& slot = ring.slots[id % kPending];
  Py_XDECREF(slot.exception);
  slot.id = id;
  slot.exception = exception.release().ptr();
  return id;
}

// The kept exception of the status, removed from the ring; null if none.
py::object TakeKept(const absl::Status& status) {
  const absl::optional<absl::Cord> payload =
      status.GetPayload(kPythonExceptionPayload);
  uint64_t id = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &id)) {
    return py::object();
  }
  PendingException& slot = Pending().slots[id % kPending];
  if (slot.id != id || slot.exception == nullptr) return py::object();
  PyObject* exception = slot.exception;
  slot.exception = nullptr;
  return py::reinterpret_steal<py::object>(exception);
}

PyObject* ExceptionType(const absl::Status& status) {
  switch (GetErrorKind(status)) {
    case ErrorKind::kTypeError:
      return PyExc_TypeError;
    case ErrorKind::kValueError:
      return PyExc_ValueError;
    case ErrorKind::kOneSubtensorRequired:
      return one_subtensor_required_error;
    case ErrorKind::kResourceExhausted:
      return PyExc_MemoryError;
    case ErrorKind::kNone:
      break;
  }
  return PyExc_RuntimeError;
}

}  // namespace

void RegisterErrors(py::module_& module) {
  one_subtensor_required_error = PyErr_NewExceptionWithDoc(
      "strata.OneSubtensorRequiredError",
      "An operation that needs a one-subtensor Tensor was given a "
      "multi-subtensor one (a block-scaled Tensor, say).",
      PyExc_ValueError, nullptr);
  if (one_subtensor_required_error == nullptr) throw py::error_already_set();
  // The module holds the type for the process (never released).
  module.attr("OneSubtensorRequiredError") =
      py::reinterpret_borrow<py::object>(one_subtensor_required_error);
}

void RaisePython(PyObject* type, const std::string& message) {
  // The whole message, NULs included; bytes that are not UTF-8 (a file's
  // name, a header's key) escaped rather than losing the text.
  PyObject* text = PyUnicode_DecodeUTF8(message.data(),
                                        static_cast<Py_ssize_t>(message.size()),
                                        "backslashreplace");
  if (text == nullptr) throw py::error_already_set();
  PyErr_SetObject(type, text);
  Py_DECREF(text);
  throw py::error_already_set();
}

void Raise(const absl::Status& status) {
  py::object kept = TakeKept(status);
  if (kept) {
    PyObject* exception = kept.ptr();
    PyErr_Restore(Py_NewRef(reinterpret_cast<PyObject*>(Py_TYPE(exception))),
                  kept.release().ptr(), PyException_GetTraceback(exception));
    throw py::error_already_set();
  }
  RaisePython(ExceptionType(status), std::string(status.message()));
}

py::object ExceptionObject(const absl::Status& status) {
  py::object kept = TakeKept(status);
  if (kept) return kept;
  const absl::string_view message = status.message();
  py::object text = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(
      message.data(), static_cast<Py_ssize_t>(message.size()),
      "backslashreplace"));
  if (!text) throw py::error_already_set();
  return py::reinterpret_borrow<py::object>(ExceptionType(status))(text);
}

void RefusePickling(py::handle cls, const char* what, const char* instead) {
  const std::string message = absl::StrCat(what, " does not pickle; ", instead);
  py::setattr(
      cls, "__reduce__",
      py::cpp_function(
          [message](py::handle) { RaisePython(PyExc_TypeError, message); },
          py::is_method(cls)));
}

absl::Status PythonErrorStatus(py::error_already_set& error,
                               absl::string_view context) {
  py::object exception = error.value();
  const bool type_error =
      PyObject_IsInstance(exception.ptr(), PyExc_TypeError) == 1;
  // str() of the exception may raise in turn: then its type names it.
  std::string text;
  py::object str =
      py::reinterpret_steal<py::object>(PyObject_Str(exception.ptr()));
  py::object bytes =
      str ? py::reinterpret_steal<py::object>(PyUnicode_AsEncodedString(
                str.ptr(), "utf-8", "backslashreplace"))
          : py::object();
  if (bytes) {
    text = std::string(py::reinterpret_borrow<py::bytes>(bytes));
  } else {
    PyErr_Clear();
  }
  absl::Status status =
      MakeError(type_error ? ErrorKind::kTypeError : ErrorKind::kValueError,
                absl::StrCat(context, ": ", Py_TYPE(exception.ptr())->tp_name,
                             text.empty() ? "" : ": ", text));
  status.SetPayload(kPythonExceptionPayload,
                    absl::Cord(absl::StrCat(Keep(std::move(exception)))));
  return status;
}

}  // namespace python
}  // namespace strata
