// strata.Carrier (Python subclasses allowed), strata.HostCarrier and the
// carriers Strata makes (mapped, external, recorded) (python.md, "Custom
// carriers and rules"; NOTE [ Python objects of Strata's values ]).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "dtype/packing.h"
#include "python/binding.h"
#include "util/errors.h"

namespace strata {
namespace python {
namespace {

// "module.Class" of the object's class.
std::string QualifiedName(py::handle object) {
  const py::handle type = reinterpret_cast<PyObject*>(Py_TYPE(object.ptr()));
  return absl::StrCat(std::string(py::str(type.attr("__module__"))), ".",
                      std::string(py::str(type.attr("__qualname__"))));
}

// The C++ side of a strata.Carrier object: owned by that object. Its storage
// is zero-filled host memory it owns (buffer=None), or the memory of a
// Python buffer it holds an export of (read-only where the buffer is), or
// none (a dtype that is not simple, or a negative size: such a carrier can
// only be refused by validation).
class PythonCarrier final : public Carrier {
 public:
  static std::shared_ptr<PythonCarrier> Create(const DType& dtype, int64_t size,
                                               py::handle buffer) {
    const SimpleDType* simple = dtype.AsSimple();
    if (buffer.is_none()) {
      std::shared_ptr<HostCarrier> owned;
      if (simple != nullptr && size >= 0) {
        owned = ValueOrRaise(HostCarrier::Create(*simple, size));
      }
      return std::shared_ptr<PythonCarrier>(
          new PythonCarrier(&dtype, size, std::move(owned)));
    }
    if (simple == nullptr || size < 0) {
      RaisePython(PyExc_ValueError,
                  absl::StrCat("Carrier: a buffer holds values of a simple "
                               "dtype and a non-negative size; got ",
                               dtype.name(), " (", dtype.kind_name(),
                               ") and size ", size));
    }
    const int64_t bytes = ValueOrRaise(StorageBytes(*simple, size));
    auto view = std::make_unique<Py_buffer>();
    bool read_only = false;
    if (PyObject_GetBuffer(buffer.ptr(), view.get(),
                           PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
      PyErr_Clear();
      if (PyObject_GetBuffer(buffer.ptr(), view.get(), PyBUF_C_CONTIGUOUS) !=
          0) {
        PyErr_Clear();
        RaisePython(PyExc_TypeError,
                    "Carrier: buffer must support the buffer protocol with "
                    "C-contiguous memory; " +
                        TypeName(buffer) + " does not");
      }
      read_only = true;
    }
    if (view->len < bytes) {
      const int64_t length = view->len;
      PyBuffer_Release(view.get());
      RaisePython(
          PyExc_ValueError,
          absl::StrCat("Carrier: buffer holds ", length, " bytes; ", size,
                       " values of ", dtype.name(), " need ", bytes));
    }
    return std::shared_ptr<PythonCarrier>(
        new PythonCarrier(&dtype, size, std::move(view), read_only));
  }

  ~PythonCarrier() override { Release(); }

  absl::string_view class_name() const override { return class_name_; }
  const void* foreign_class() const override { return python_class_; }

  // The Python object that owns this carrier, recorded (with its class) when
  // the object is first given to Strata (CarrierArg): its class is the
  // carrier's exact class.
  void Bind(py::handle self) {
    self_ = self.ptr();
    if (python_class_ != Py_TYPE(self.ptr())) {
      python_class_ = Py_TYPE(self.ptr());
      class_name_ = QualifiedName(self);
    }
  }
  PyObject* self() const { return self_; }

  // A shared_ptr that keeps the owning object alive: one control block per
  // carrier while any Tensor holds it.
  std::shared_ptr<Carrier> Held(py::handle self) {
    if (std::shared_ptr<Carrier> held = held_.lock()) return held;
    PyObject* object = py::reinterpret_borrow<py::object>(self).release().ptr();
    std::shared_ptr<void> keeper(object, [](void* p) {
      if (!PythonAlive()) return;  // At exit: nothing to drop.
      py::gil_scoped_acquire gil;
      Py_DECREF(static_cast<PyObject*>(p));
    });
    std::shared_ptr<Carrier> held(keeper, this);
    held_ = held;
    return held;
  }

 private:
  PythonCarrier(const DType* dtype, int64_t size,
                std::shared_ptr<HostCarrier> owned)
      : Carrier(dtype, size, /*version=*/0),
        owned_(std::move(owned)),
        data_(owned_ ? owned_->mutable_data() : nullptr) {}
  PythonCarrier(const DType* dtype, int64_t size,
                std::unique_ptr<Py_buffer> view, bool read_only)
      : Carrier(dtype, size, /*version=*/0, read_only),
        view_(std::move(view)),
        data_(view_->buf) {}

  void* raw_data() const override { return data_; }
  void ReleaseStorage() override {
    data_ = nullptr;
    if (owned_) owned_->Release();
    if (view_) {
      if (PythonAlive()) {
        py::gil_scoped_acquire gil;
        PyBuffer_Release(view_.get());
      }
      view_.reset();
    }
  }

  std::shared_ptr<HostCarrier> owned_;
  std::unique_ptr<Py_buffer> view_;
  void* data_;
  PyObject* self_ = nullptr;
  PyTypeObject* python_class_ = nullptr;
  std::string class_name_ = "strata.Carrier";
  std::weak_ptr<Carrier> held_;
};

py::object DataPointer(const Carrier& carrier) {
  return py::int_(reinterpret_cast<uintptr_t>(carrier.data()));
}

// The bound carrier classes (NOTE [ Casting without type lookups ]).
PyTypeObject* carrier_type = nullptr;
PyTypeObject* host_type = nullptr;
PyTypeObject* external_type = nullptr;
PyTypeObject* recorded_type = nullptr;
PyTypeObject* mapped_type = nullptr;

template <typename T>
std::shared_ptr<Carrier> HolderAs(const py::detail::value_and_holder& v) {
  return v.holder<std::shared_ptr<T>>();
}

std::shared_ptr<Carrier> CarrierSelf(py::handle self) {
  std::shared_ptr<Carrier> carrier = CarrierArg(self);
  if (carrier == nullptr) {
    RaisePython(
        PyExc_TypeError,
        "self must be an initialized strata.Carrier, not " + TypeName(self));
  }
  return carrier;
}

const MappedCarrier& MappedSelf(py::handle self) {
  const std::shared_ptr<Carrier> carrier = CarrierSelf(self);
  const auto* mapped = dynamic_cast<const MappedCarrier*>(carrier.get());
  if (mapped == nullptr) {
    RaisePython(PyExc_TypeError,
                "self must be a strata.MappedCarrier, not " + TypeName(self));
  }
  return *mapped;  // The object holds it.
}

}  // namespace

std::shared_ptr<Carrier> CarrierArg(py::handle object) {
  PyTypeObject* type = Py_TYPE(object.ptr());
  if (!PyType_IsSubtype(type, carrier_type)) return nullptr;
  const py::detail::value_and_holder v =
      reinterpret_cast<py::detail::instance*>(object.ptr())
          ->get_value_and_holder();
  if (v.value_ptr() == nullptr || !v.holder_constructed()) {
    return nullptr;  // Carrier.__new__ without __init__: not a carrier yet.
  }
  // The final classes hold their own type; strata.Carrier and its Python
  // subclasses a Carrier.
  if (type == host_type) return HolderAs<HostCarrier>(v);
  if (type == mapped_type) return HolderAs<MappedCarrier>(v);
  if (type == external_type) return HolderAs<ExternalCarrier>(v);
  if (type == recorded_type) return HolderAs<RecordedCarrier>(v);
  auto* python = dynamic_cast<PythonCarrier*>(v.value_ptr<Carrier>());
  if (python == nullptr) return HolderAs<Carrier>(v);  // A C++ class unbound.
  python->Bind(object);
  return python->Held(object);
}

py::object CarrierObject(const std::shared_ptr<Carrier>& carrier) {
  if (auto* python = dynamic_cast<PythonCarrier*>(carrier.get())) {
    if (python->self() != nullptr) {
      return py::reinterpret_borrow<py::object>(python->self());
    }
  }
  return py::cast(carrier);
}

py::object CarrierClassObject(const std::shared_ptr<Carrier>& carrier) {
  return py::reinterpret_borrow<py::object>(
      reinterpret_cast<PyObject*>(Py_TYPE(CarrierObject(carrier).ptr())));
}

void BindCarriers(py::module_& module) {
  py::class_<Carrier, std::shared_ptr<Carrier>>(
      module, "Carrier",
      "Typed storage with a mutation version. Subclass it in Python with "
      "super().__init__(dtype, size, buffer=None): without a buffer the "
      "carrier owns zero-filled memory; with one (any C-contiguous buffer) it "
      "stores its values there, read-only where the buffer is. The exact "
      "class of a carrier is its Python class.")
      .def(py::init([](py::handle dtype, py::handle size, py::handle buffer) {
             return std::static_pointer_cast<Carrier>(
                 PythonCarrier::Create(ToDType(dtype, "Carrier: dtype"),
                                       ToInt64(size, "Carrier: size"), buffer));
           }),
           py::arg("dtype"), py::arg("size"), py::arg("buffer") = py::none())
      .def_property_readonly("dtype",
                             [](py::handle self) {
                               return DTypeObject(&CarrierSelf(self)->dtype());
                             })
      .def(
          "size", [](py::handle self) { return CarrierSelf(self)->size(); },
          "The number of stored values.")
      .def(
          "version",
          [](py::handle self) { return CarrierSelf(self)->version(); },
          "The mutation version.")
      .def(
          "bump_version",
          [](py::handle self) { return CarrierSelf(self)->BumpVersion(); },
          "Records one mutation made outside Strata; returns the new "
          "version (unchanged for a read-only carrier).")
      .def(
          "release",
          [](py::handle self) {
            const std::shared_ptr<Carrier> carrier = CarrierSelf(self);
            if (!DeferRelease(carrier.get())) carrier->Release();
          },
          "Frees the storage now (idempotent); while a kernel of another "
          "thread runs on it, when that kernel ends; while a DLPack export "
          "holds it, when the export goes (it reads as released at once). "
          "A Tensor never calls it.")
      .def("released",
           [](py::handle self) { return CarrierSelf(self)->released(); })
      .def_property_readonly(
          "read_only",
          [](py::handle self) { return CarrierSelf(self)->read_only(); })
      .def_property_readonly(
          "class_name",
          [](py::handle self) {
            return std::string(CarrierSelf(self)->class_name());
          })
      .def(
          "tobytes",
          [](py::handle self) {
            const std::shared_ptr<Carrier> held = CarrierSelf(self);
            const Carrier& c = *held;
            const SimpleDType* simple = c.dtype().AsSimple();
            if (simple == nullptr || c.size() < 0 || c.data() == nullptr) {
              RaisePython(PyExc_ValueError, "Carrier.tobytes: " + c.Describe() +
                                                " holds no host data");
            }
            const int64_t bytes = ValueOrRaise(StorageBytes(*simple, c.size()));
            return py::bytes(static_cast<const char*>(c.data()),
                             static_cast<size_t>(bytes));
          },
          "A copy of the stored bytes (packed little-endian, as dumps "
          "hold them).")
      .def(
          "data_ptr",
          [](py::handle self) { return DataPointer(*CarrierSelf(self)); },
          "The address of the stored bytes (0 without host data).")
      .def("__repr__", [](py::handle self) {
        const std::shared_ptr<Carrier> held = CarrierSelf(self);
        const Carrier& c = *held;  // A Python class named.
        return absl::StrCat("<", QualifiedName(self), " ", c.Describe(),
                            ", version ", c.version(), ">");
      });

  // For tests: that a failed operation allocated nothing.
  module.def("_host_carriers_created", &HostCarrier::created);

  py::class_<HostCarrier, Carrier, std::shared_ptr<HostCarrier>>(
      module, "HostCarrier", py::is_final(),
      "Owned, 64-byte aligned, zero-filled host memory.")
      .def(py::init([](py::handle dtype, py::handle size) {
             return ValueOrRaise(
                 HostCarrier::Create(ToDType(dtype, "HostCarrier: dtype"),
                                     ToInt64(size, "HostCarrier: size")));
           }),
           py::arg("dtype"), py::arg("size"));

  py::class_<ExternalCarrier, Carrier, std::shared_ptr<ExternalCarrier>>(
      module, "ExternalCarrier", py::is_final(),
      "Memory another library owns (a DLPack import), given back to it when "
      "released.");

  py::class_<RecordedCarrier, Carrier, std::shared_ptr<RecordedCarrier>>(
      module, "RecordedCarrier", py::is_final(),
      "What a dump recorded of a carrier: dtype, size, version; no data.");

  py::class_<MappedCarrier, Carrier, std::shared_ptr<MappedCarrier>>(
      module, "MappedCarrier", py::is_final(),
      "A read-only mapping of a file region (a checkpoint's tensor data).")
      .def_property_readonly(
          "file", [](py::handle self) { return MappedSelf(self).file(); })
      .def_property_readonly("file_offset", [](py::handle self) {
        return MappedSelf(self).file_offset();
      });

  carrier_type = py::detail::get_type_info(typeid(Carrier))->type;
  RefusePickling(reinterpret_cast<PyObject*>(carrier_type), "a strata carrier",
                 "a dump with data (strata.dump) carries its values");
  host_type = py::detail::get_type_info(typeid(HostCarrier))->type;
  external_type = py::detail::get_type_info(typeid(ExternalCarrier))->type;
  recorded_type = py::detail::get_type_info(typeid(RecordedCarrier))->type;
  mapped_type = py::detail::get_type_info(typeid(MappedCarrier))->type;
}

}  // namespace python
}  // namespace strata
