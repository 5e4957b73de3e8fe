// DLPack both ways (python.md, "Interop"): Tensor.__dlpack__ exports a
// "dltensor" capsule, strata.from_dlpack imports any producer's without a
// copy.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "dlpack/dlpack.h"
#include "ops/dlpack.h"
#include "python/binding.h"

namespace strata {
namespace python {
namespace {

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

// A capsule nobody consumed still owns its export: its destructor runs the
// export's deleter (the protocol's rule).
void DeleteUnconsumed(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kUsedCapsuleName)) return;
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  auto* managed = static_cast<DLManagedTensor*>(
      PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed == nullptr) {
    PyErr_WriteUnraisable(capsule);
  } else if (managed->deleter != nullptr) {
    managed->deleter(managed);
  }
  PyErr_Restore(type, value, traceback);
}

// A producer's export as Strata's carrier holds it: the producer's deleter
// runs with the GIL held (numpy 1.24's drops a reference to the array
// without taking the GIL), whenever and on whichever thread the carrier goes.
struct Imported {
  DLManagedTensor outer;
  DLManagedTensor* producer;

  static void Delete(DLManagedTensor* self) {
    auto* imported = reinterpret_cast<Imported*>(self->manager_ctx);
    DLManagedTensor* producer = imported->producer;
    delete imported;
    if (producer->deleter == nullptr || !PythonAlive()) return;
    py::gil_scoped_acquire gil;
    producer->deleter(producer);
  }
};

}  // namespace

py::object ExportDLPack(const Tensor& tensor, py::handle stream,
                        py::handle max_version) {
  if (!stream.is_none()) {
    RaisePython(PyExc_ValueError,
                "__dlpack__: a CPU Tensor takes stream=None, not " +
                    std::string(py::repr(stream)));
  }
  // DLPack 0.6 (Debian's header) has no versioned capsule: whatever version
  // the consumer can take, it gets the unversioned one, as the protocol
  // allows.
  if (!max_version.is_none() && !PyTuple_Check(max_version.ptr())) {
    RaisePython(PyExc_TypeError,
                "__dlpack__: max_version must be a (major, minor) tuple or "
                "None, not " +
                    TypeName(max_version));
  }
  DLManagedTensor* managed = ValueOrRaise(ToDLPack(tensor));
  PyObject* capsule = PyCapsule_New(managed, kCapsuleName, &DeleteUnconsumed);
  if (capsule == nullptr) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

Tensor ImportDLPack(py::handle object) {
  py::object capsule;
  if (PyCapsule_CheckExact(object.ptr())) {
    capsule = py::reinterpret_borrow<py::object>(object);
  } else if (py::hasattr(object, "__dlpack__")) {
    capsule = object.attr("__dlpack__")();
    if (!PyCapsule_CheckExact(capsule.ptr())) {
      RaisePython(PyExc_TypeError, "from_dlpack: __dlpack__() returned " +
                                       TypeName(capsule) + ", not a capsule");
    }
  } else {
    RaisePython(PyExc_TypeError,
                "from_dlpack: expected an object with __dlpack__ or a "
                "\"dltensor\" capsule, not " +
                    TypeName(object));
  }
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsuleName)) {
    RaisePython(PyExc_ValueError,
                "from_dlpack: the capsule is not an unconsumed \"dltensor\" "
                "(each export is imported once)");
  }
  auto* producer = static_cast<DLManagedTensor*>(
      PyCapsule_GetPointer(capsule.ptr(), kCapsuleName));
  if (IsStrataExport(producer)) {
    // Strata's own: imported as it is, read-only where its carrier is.
    Tensor tensor = ValueOrRaise(FromDLPack(producer));
    PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
    return tensor;
  }
  auto imported = std::make_unique<Imported>();
  imported->outer.dl_tensor = producer->dl_tensor;
  imported->outer.manager_ctx = imported.get();
  imported->outer.deleter = &Imported::Delete;
  imported->producer = producer;
  absl::StatusOr<Tensor> tensor = FromDLPack(&imported->outer);
  if (!tensor.ok()) Raise(tensor.status());  // The capsule still owns it.
  imported.release();  // The carrier's deleter owns it now.
  PyCapsule_SetName(capsule.ptr(), kUsedCapsuleName);
  return *std::move(tensor);
}

}  // namespace python
}  // namespace strata
