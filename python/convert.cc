// Argument conversion as the spec reads Python's values (python.md, "Errors"),
// not as pybind11's casters would: a bool is not an integer, a float is not
// one either, numpy's integers are.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "layout/int_tuple.h"
#include "python/binding.h"

namespace strata {
namespace python {
namespace {

// numpy's scalar types, found in sys.modules (never imported here: an import
// may release the GIL mid-call, and before numpy is imported no numpy object
// exists). Looked up with the GIL held, kept for the process once found.
struct NumpyTypes {
  PyObject* generic = nullptr;
  PyObject* bool_ = nullptr;
};
const NumpyTypes& Numpy() {
  static NumpyTypes types;
  if (types.generic == nullptr) {
    PyObject* numpy = PyImport_GetModule(py::str("numpy").ptr());
    if (numpy != nullptr) {
      PyObject* generic = PyObject_GetAttrString(numpy, "generic");
      PyObject* bool_ = PyObject_GetAttrString(numpy, "bool_");
      if (generic != nullptr && bool_ != nullptr) {
        types.bool_ = bool_;
        types.generic = generic;
      } else {
        Py_XDECREF(generic);
        Py_XDECREF(bool_);
      }
      Py_DECREF(numpy);
    }
    PyErr_Clear();
  }
  return types;
}

bool IsNumpyBool(py::handle object) {
  const NumpyTypes& numpy = Numpy();
  return numpy.bool_ != nullptr &&
         PyObject_IsInstance(object.ptr(), numpy.bool_) == 1;
}

void AppendIntTuple(py::handle object, absl::string_view what,
                    const std::string& path, int depth,
                    std::vector<IntTuple>* out) {
  if (PyTuple_Check(object.ptr()) || PyList_Check(object.ptr())) {
    if (depth >= kMaxIntTupleDepth) {
      RaisePython(PyExc_ValueError, absl::StrCat(what, ": nesting deeper than ",
                                                 kMaxIntTupleDepth, " levels"));
    }
    std::vector<IntTuple> elements;
    const py::sequence sequence = py::reinterpret_borrow<py::sequence>(object);
    elements.reserve(sequence.size());
    for (size_t i = 0; i < sequence.size(); ++i) {
      AppendIntTuple(sequence[i], what, absl::StrCat(path, "[", i, "]"),
                     depth + 1, &elements);
    }
    out->push_back(IntTuple::Tuple(elements));
    return;
  }
  if (!IsInteger(object)) {
    RaisePython(
        PyExc_TypeError,
        absl::StrCat(what, " must be an int or a nested tuple of ints, not ",
                     TypeName(object), path.empty() ? "" : " at ", path));
  }
  out->push_back(IntTuple(ToInt64(object, absl::StrCat(what, path))));
}

}  // namespace

std::string TypeName(py::handle object) {
  return Py_TYPE(object.ptr())->tp_name;
}

bool IsInteger(py::handle object) {
  PyObject* o = object.ptr();
  if (PyLong_CheckExact(o)) return true;  // The common case, first.
  if (PyBool_Check(o)) return false;
  if (PyLong_Check(o)) return true;
  return PyIndex_Check(o) && !IsNumpyBool(object);
}

int64_t ToInt64(py::handle object, absl::string_view what) {
  if (PyLong_CheckExact(object.ptr())) {
    int overflow = 0;
    const long long value =
        PyLong_AsLongLongAndOverflow(object.ptr(), &overflow);
    if (overflow == 0) return value;
  }
  if (!IsInteger(object)) {
    RaisePython(PyExc_TypeError, absl::StrCat(what, " must be an integer, not ",
                                              TypeName(object)));
  }
  py::object index =
      py::reinterpret_steal<py::object>(PyNumber_Index(object.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) {
    RaisePython(PyExc_ValueError,
                absl::StrCat(what, " ", std::string(py::str(index)),
                             " does not fit in int64"));
  }
  if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
  return value;
}

IntTuple ToIntTuple(py::handle object, absl::string_view what) {
  std::vector<IntTuple> result;
  AppendIntTuple(object, what, "", 0, &result);
  return result[0];
}

py::object FromIntTuple(const IntTuple& tuple) {
  if (tuple.is_leaf()) return py::int_(tuple.value());
  py::tuple result(tuple.rank());
  for (int i = 0; i < tuple.rank(); ++i) {
    result[i] = FromIntTuple(tuple[i]);
  }
  return std::move(result);
}

std::vector<int64_t> ToInt64Vector(py::handle object, absl::string_view what) {
  if (PyUnicode_Check(object.ptr()) || PyBytes_Check(object.ptr()) ||
      !PySequence_Check(object.ptr())) {
    RaisePython(PyExc_TypeError,
                absl::StrCat(what, " must be a sequence of integers, not ",
                             TypeName(object)));
  }
  const py::sequence sequence = py::reinterpret_borrow<py::sequence>(object);
  std::vector<int64_t> values;
  values.reserve(sequence.size());
  for (size_t i = 0; i < sequence.size(); ++i) {
    values.push_back(ToInt64(sequence[i], absl::StrCat(what, "[", i, "]")));
  }
  return values;
}

bool Truth(py::handle object) {
  const int truth = PyObject_IsTrue(object.ptr());
  if (truth < 0) throw py::error_already_set();
  return truth == 1;
}

bool IsNumber(py::handle object) {
  PyObject* o = object.ptr();
  // Not IsInteger: an ndarray has __index__ too.
  if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o)) return true;
  // numpy's scalars (float32, float16, bool_, ...) are numpy.generic.
  const NumpyTypes& numpy = Numpy();
  return numpy.generic != nullptr &&
         PyObject_IsInstance(o, numpy.generic) == 1 && !PyComplex_Check(o) &&
         !PyUnicode_Check(o) && !PyBytes_Check(o);
}

std::vector<int64_t> ToInt64OrVector(py::handle object,
                                     absl::string_view what) {
  if (IsInteger(object)) return {ToInt64(object, what)};
  return ToInt64Vector(object, what);
}

int64_t NormalizeDim(int64_t dim, int64_t rank, int64_t extra) {
  return dim < 0 && dim >= -(rank + extra) ? dim + rank + extra : dim;
}

Scalar ToScalar(py::handle object, absl::string_view what) {
  PyObject* o = object.ptr();
  if (PyBool_Check(o) || IsNumpyBool(object)) {
    return Scalar::Bool(Truth(object));
  }
  if (IsInteger(object)) return Scalar::Int(ToInt64(object, what));
  if (PyFloat_Check(o) ||
      (Py_TYPE(o)->tp_as_number != nullptr &&
       Py_TYPE(o)->tp_as_number->nb_float != nullptr && !PyComplex_Check(o))) {
    const double value = PyFloat_AsDouble(o);
    if (value == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return Scalar::Float(value);
  }
  RaisePython(PyExc_TypeError,
              absl::StrCat(what, " must be a bool, an int or a float, not ",
                           TypeName(object)));
}

py::object FromScalar(const Scalar& scalar) {
  switch (scalar.kind()) {
    case Scalar::Kind::kBool:
      return py::bool_(scalar.as_bool());
    case Scalar::Kind::kInt:
      return py::int_(scalar.as_int());
    case Scalar::Kind::kFloat:
      break;
  }
  return py::float_(scalar.as_double());
}

std::string ToPath(py::handle object, absl::string_view what) {
  py::object path =
      py::reinterpret_steal<py::object>(PyOS_FSPath(object.ptr()));
  if (!path) {
    PyErr_Clear();
    RaisePython(PyExc_TypeError,
                absl::StrCat(what, " must be a str or an os.PathLike, not ",
                             TypeName(object)));
  }
  if (PyBytes_Check(path.ptr())) {
    return std::string(py::reinterpret_borrow<py::bytes>(path));
  }
  // os.fsencode: undecodable bytes of a name (surrogates) go back as bytes.
  py::object bytes =
      py::reinterpret_steal<py::object>(PyUnicode_EncodeFSDefault(path.ptr()));
  if (!bytes) throw py::error_already_set();
  return std::string(py::reinterpret_borrow<py::bytes>(bytes));
}

}  // namespace python
}  // namespace strata
