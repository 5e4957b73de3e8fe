// strata.Tensor: the public constructor, the spec's queries, the eight views,
// indexing and the ops (python.md, "Names").
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "ops/ops.h"
#include "python/binding.h"
#include "util/errors.h"
#include "views/views.h"

namespace strata {
namespace python {
namespace {

int64_t Rank(const Tensor& t) {
  const Layout& layout = t.layout();
  return layout.shape().is_leaf() ? 1 : layout.rank();
}

// The dims of permute(*dims) and reshape(*shape): one sequence, or the
// integers themselves, or the sequence as the keyword `keyword` (python.md
// writes permute(dims), reshape(shape), broadcast_to(shape)).
std::vector<int64_t> VarIntegers(const py::args& args, const py::kwargs& kwargs,
                                 const char* keyword, const char* what) {
  if (kwargs.size() > 0) {
    if (args.size() > 0 || kwargs.size() != 1 || !kwargs.contains(keyword)) {
      RaisePython(PyExc_TypeError,
                  absl::StrCat(what, ": give the ", keyword,
                               " as integers, one sequence, or ", keyword,
                               "=sequence"));
    }
    return ToInt64Vector(kwargs[keyword], what);
  }
  if (args.size() == 1 && !IsInteger(args[0])) {
    return ToInt64Vector(args[0], what);
  }
  std::vector<int64_t> values;
  values.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    values.push_back(ToInt64(args[i], absl::StrCat(what, "[", i, "]")));
  }
  return values;
}

// A result Tensor as its Python object, or the error raised.
py::object Call(absl::StatusOr<Tensor> result) {
  return TensorObject(ValueOrRaise(std::move(result)));
}

PyTypeObject* tensor_type = nullptr;
const py::detail::type_info* tensor_info = nullptr;

const Tensor& Self(py::handle self) { return ToTensor(self, "self"); }

// A Python number as an operand of `like`: a rank-0 Tensor of the dtype
// PyTorch's result_type gives the pair (the Tensor's own where the number's
// kind is not above it; float32 for a float with an integral Tensor, int64
// for an int with a bool one). One difference stays: PyTorch computes with
// the number unrounded (in float for a float16 or bfloat16 Tensor), where
// this operand holds it rounded to the dtype first, so t * 3.14159 of a
// bfloat16 t multiplies by 3.140625 (a double rounding PyTorch avoids).
// A compound Tensor has no number dtype; the number is then float32 or int64,
// and the op refuses the Tensor (OneSubtensorRequiredError).
Tensor ScalarOperand(const Tensor& like, py::handle number, const char* op) {
  const Scalar value = ToScalar(number, absl::StrCat(op, ": operand"));
  const SimpleDType* dtype = like.dtype().AsSimple();
  if (dtype == nullptr) {
    dtype = value.is_float() ? dtypes::Float32() : dtypes::Int64();
  } else if (value.is_float() && !dtype->is_floating()) {
    dtype = dtypes::Float32();
  } else if (value.is_int() && dtype->is_bool()) {
    dtype = dtypes::Int64();
  }
  Tensor scalar = ValueOrRaise(Zeros(*dtype, {}));
  ThrowIfError(Fill(scalar, value));
  return scalar;
}

// The other operand of a binary operator: a Tensor, a number (numpy's
// scalars included), an array of another library (imported without a copy,
// through DLPack), or nothing (NotImplemented).
std::optional<Tensor> Operand(const Tensor& self, py::handle other,
                              const char* op) {
  if (const Tensor* tensor = ExactValue<Tensor>(other, tensor_type)) {
    return *tensor;
  }
  if (IsNumber(other)) return ScalarOperand(self, other, op);
  if (py::hasattr(other, "__dlpack__")) return ImportDLPack(other);
  return std::nullopt;
}

// The one value of a Tensor of one element, as Python reads it.
py::object Item(const Tensor& t, const char* what) {
  if (t.size() != 1) {
    RaisePython(PyExc_ValueError, absl::StrCat(what, ": a Tensor of ", t.size(),
                                               " values has no single value"));
  }
  const std::vector<int64_t> shape = t.shape();
  std::vector<IntTuple> zeros(shape.size(), IntTuple(0));
  const IntTuple coord =
      shape.size() == 1 ? IntTuple(0) : IntTuple::Tuple(zeros);
  return FromScalar(ValueOrRaise(GetItem(t, coord)));
}

py::object Binary(BinaryOp op, const Tensor& self, py::handle other,
                  bool reflected, const char* name) {
  std::optional<Tensor> operand = Operand(self, other, name);
  if (!operand.has_value()) {
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  }
  const Tensor& a = reflected ? *operand : self;
  const Tensor& b = reflected ? self : *operand;
  return Call(WithoutGil({&a, &b}, [&] { return BinaryOpTensor(op, a, b); }));
}

// ---- Indexing ----------------------------------------------------------

// NumPy's basic indexing on the dims: an integer selects (and drops) a dim,
// a slice with a positive step is a Slice view, None inserts a dim of extent
// 1 and Ellipsis stands for the dims not named. A key of one integer (or
// nested tuple, a hierarchical coordinate) per dim reads or writes one value.
struct Index {
  std::vector<py::object> items;  // The key as a sequence.
  bool coordinate = true;         // Only integers and nested tuples.
  int64_t dims_named = 0;         // Items that name a dim.
};

Index ParseKey(py::handle key) {
  Index index;
  if (PyTuple_Check(key.ptr())) {
    for (py::handle item : py::reinterpret_borrow<py::tuple>(key)) {
      index.items.push_back(py::reinterpret_borrow<py::object>(item));
    }
  } else {
    index.items.push_back(py::reinterpret_borrow<py::object>(key));
  }
  for (const py::object& item : index.items) {
    if (item.is_none()) {
      index.coordinate = false;
    } else if (item.ptr() == Py_Ellipsis) {
      index.coordinate = false;
    } else if (PySlice_Check(item.ptr())) {
      index.coordinate = false;
      ++index.dims_named;
    } else if (IsInteger(item) || PyTuple_Check(item.ptr())) {
      ++index.dims_named;
    } else {
      RaisePython(PyExc_TypeError,
                  "Tensor index: only integers, slices, None and ... are "
                  "valid indices (hierarchical coordinates as tuples), not " +
                      TypeName(item));
    }
  }
  return index;
}

int64_t CheckedIndex(py::handle item, int64_t extent, int64_t dim) {
  int64_t i = ToInt64(item, absl::StrCat("Tensor index ", dim));
  if (i < -extent || i >= extent) {
    RaisePython(PyExc_IndexError,
                absl::StrCat("index ", i, " is out of bounds for dim ", dim,
                             " of extent ", extent));
  }
  return i < 0 ? i + extent : i;
}

// The coordinate of a full integer key, or nullopt where the key is a view.
std::optional<IntTuple> Coordinate(const Tensor& t, const Index& index) {
  const int64_t rank = Rank(t);
  if (!index.coordinate || index.dims_named != rank) return std::nullopt;
  const std::vector<int64_t> shape = t.shape();
  std::vector<IntTuple> components;
  for (size_t d = 0; d < index.items.size(); ++d) {
    const py::object& item = index.items[d];
    if (PyTuple_Check(item.ptr())) {
      components.push_back(ToIntTuple(item, "Tensor index"));
    } else {
      components.push_back(
          IntTuple(CheckedIndex(item, shape[d], static_cast<int64_t>(d))));
    }
  }
  if (rank == 1 && !PyTuple_Check(index.items[0].ptr())) return components[0];
  return IntTuple::Tuple(components);
}

Tensor IndexView(const Tensor& t, const Index& index) {
  const int64_t rank = Rank(t);
  int64_t ellipses = 0;
  for (const py::object& item : index.items) {
    if (item.ptr() == Py_Ellipsis) ++ellipses;
  }
  if (ellipses > 1) {
    RaisePython(PyExc_IndexError,
                "Tensor index: an index can only have a single ellipsis");
  }
  if (index.dims_named > rank) {
    RaisePython(PyExc_IndexError,
                absl::StrCat("Tensor index: too many indices: ",
                             index.dims_named, " for a Tensor of rank ", rank));
  }
  Tensor view = t;
  int64_t dim = 0;
  for (const py::object& item : index.items) {
    const std::vector<int64_t> shape = view.shape();
    if (item.is_none()) {
      view = ValueOrRaise(Unsqueeze(view, dim));
      ++dim;
    } else if (item.ptr() == Py_Ellipsis) {
      dim += rank - index.dims_named;
    } else if (PySlice_Check(item.ptr())) {
      Py_ssize_t start = 0, stop = 0, step = 0;
      if (PySlice_Unpack(item.ptr(), &start, &stop, &step) != 0) {
        throw py::error_already_set();
      }
      if (step <= 0) {
        RaisePython(PyExc_ValueError,
                    absl::StrCat("Tensor index: step ", step, " of dim ", dim,
                                 ": a view slices with a positive step"));
      }
      PySlice_AdjustIndices(shape[dim], &start, &stop, step);
      view = ValueOrRaise(Slice(view, dim, start, std::max(start, stop), step));
      ++dim;
    } else if (PyTuple_Check(item.ptr())) {
      RaisePython(PyExc_TypeError,
                  "Tensor index: a hierarchical coordinate (a tuple) reads "
                  "one value; it cannot be mixed with slices");
    } else {
      const int64_t i = CheckedIndex(item, shape[dim], dim);
      view =
          ValueOrRaise(Squeeze(ValueOrRaise(Slice(view, dim, i, i + 1)), dim));
    }
  }
  return view;
}

py::object GetItemPy(const Tensor& t, py::handle key) {
  const Index index = ParseKey(key);
  if (std::optional<IntTuple> coord = Coordinate(t, index)) {
    return FromScalar(ValueOrRaise(GetItem(t, *coord)));
  }
  return TensorObject(IndexView(t, index));
}

void SetItemPy(const Tensor& t, py::handle key, py::handle value) {
  const Index index = ParseKey(key);
  if (std::optional<IntTuple> coord = Coordinate(t, index)) {
    ThrowIfError(SetItem(t, *coord, ToScalar(value, "Tensor item value")));
    return;
  }
  const Tensor view = IndexView(t, index);
  if (ExactValue<Tensor>(value, tensor_type) != nullptr ||
      py::hasattr(value, "__dlpack__")) {
    const Tensor source = ToTensorOrImport(value, "Tensor item value");
    ThrowIfError(
        WithoutGil({&view, &source}, [&] { return CopyFrom(view, source); }));
    return;
  }
  const Scalar scalar = ToScalar(value, "Tensor item value");
  ThrowIfError(WithoutGil({&view}, [&] { return Fill(view, scalar); }));
}

std::string Repr(const Tensor& t) {
  return absl::StrCat(
      "strata.Tensor(dtype=", t.dtype().name(), ", shape=(",
      absl::StrJoin(t.shape(), ", "), Rank(t) == 1 ? ",)" : ")",
      ", layout=", t.layout().ToString(), ", offset=", t.offset(),
      ", carrier=", t.carrier()->class_name(),
      t.num_subtensors() > 1 ? absl::StrCat(", levels=", t.num_subtensors())
                             : "",
      ")");
}

py::tuple SubtensorsOf(const Tensor& t) {
  const Representation& rep = TensorAccess::representation(t);
  py::tuple result(rep.num_levels());
  for (int i = 0; i < rep.num_levels(); ++i) {
    const Subtensor& s = rep.subtensor(i);
    result[i] = py::make_tuple(DTypeObject(s.storage_dtype),
                               CarrierObject(s.carrier), s.offset, s.placement);
  }
  return result;
}

std::vector<int64_t> ReshapeTarget(const Tensor& t,
                                   std::vector<int64_t> shape) {
  // One extent may be -1: the one that keeps the size (NumPy's and PyTorch's).
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (shape[i] >= 0 && known != 0) {
      if (__builtin_mul_overflow(known, shape[i], &known)) known = -1;
    }
  }
  if (inferred >= 0 && known > 0 && t.size() % known == 0) {
    shape[inferred] = t.size() / known;
  }
  return shape;
}

}  // namespace

py::object TensorObject(Tensor tensor) {
  return NewObject(std::move(tensor), tensor_info);
}

const Tensor& ToTensor(py::handle object, absl::string_view what) {
  const Tensor* tensor = ExactValue<Tensor>(object, tensor_type);
  if (tensor == nullptr) {
    RaisePython(
        PyExc_TypeError,
        absl::StrCat(what, " must be a strata.Tensor, not ", TypeName(object)));
  }
  return *tensor;
}

Tensor ToTensorOrImport(py::handle object, absl::string_view what) {
  if (const Tensor* tensor = ExactValue<Tensor>(object, tensor_type)) {
    return *tensor;
  }
  if (py::hasattr(object, "__dlpack__")) return ImportDLPack(object);
  RaisePython(
      PyExc_TypeError,
      absl::StrCat(what, " must be a strata.Tensor or support DLPack, not ",
                   TypeName(object)));
}

void BindTensor(py::module_& module) {
  py::class_<Tensor>(module, "Tensor", py::is_final(),
                     "A logical Tensor over carrier-backed storage. "
                     "Tensor(carrier, offset, layout) is the one public "
                     "constructor: it builds a one-subtensor Tensor.")
      .def(py::init([](py::handle carrier, py::handle offset,
                       py::handle layout) {
             std::shared_ptr<Carrier> held = CarrierArg(carrier);
             if (held == nullptr) {
               RaisePython(PyExc_TypeError,
                           "Tensor: carrier must be a strata.Carrier, not " +
                               TypeName(carrier));
             }
             const int64_t start = ToInt64(offset, "Tensor: offset");
             const Layout& placement = ToLayout(layout, "Tensor: layout");
             return ValueOrRaise(
                 Tensor::Create(std::move(held), start, placement));
           }),
           py::arg("carrier"), py::arg("offset"), py::arg("layout"))
      // The spec's queries: properties and methods as it writes them.
      .def_property_readonly("carrier",
                             [](py::handle self) {
                               const Tensor& t = Self(self);
                               return CarrierObject(t.carrier());
                             })
      .def_property_readonly(
          "offset", [](py::handle self) { return Self(self).offset(); })
      .def_property_readonly(
          "layout",
          [](py::handle self) { return LayoutObject(Self(self).layout()); })
      .def("dtype",
           [](py::handle self) {
             const Tensor& t = Self(self);
             return DTypeObject(&t.dtype());
           })
      .def(
          "size", [](py::handle self) { return Self(self).size(); },
          "The number of logical coordinates of subtensor 0's placement.")
      .def("carrier_type",
           [](py::handle self) {
             const Tensor& t = Self(self);
             return CarrierClassObject(t.carrier());
           })
      .def_property_readonly("shape",
                             [](py::handle self) {
                               const Tensor& t = Self(self);
                               const std::vector<int64_t> shape = t.shape();
                               py::tuple result(shape.size());
                               for (size_t i = 0; i < shape.size(); ++i) {
                                 result[i] = py::int_(shape[i]);
                               }
                               return result;
                             })
      .def_property_readonly("ndim",
                             [](py::handle self) { return Rank(Self(self)); })
      .def_property_readonly(
          "num_subtensors",
          [](py::handle self) { return Self(self).num_subtensors(); })
      .def_property_readonly(
          "subtensors",
          [](py::handle self) { return SubtensorsOf(Self(self)); },
          "Every level as (storage dtype, carrier, offset, placement).")
      .def_property_readonly(
          "adjacent_layouts",
          [](py::handle self) {
            const Tensor& t = Self(self);
            const auto adjacent =
                TensorAccess::representation(t).adjacent_layouts();
            return py::tuple(py::cast(
                std::vector<Layout>(adjacent.begin(), adjacent.end())));
          })
      .def(
          "mutation_snapshot",
          [](py::handle self) {
            const Tensor& t = Self(self);
            const Representation& rep = TensorAccess::representation(t);
            py::list result;
            for (const CarrierVersion& entry : t.Snapshot()) {
              for (const Subtensor& s : rep.subtensors()) {
                if (s.carrier.get() == entry.carrier) {
                  result.append(
                      py::make_tuple(CarrierObject(s.carrier), entry.version));
                  break;
                }
              }
            }
            return result;
          },
          "[(carrier, version), ...]: each distinct carrier once, in order "
          "of first use.")
      .def(
          "data_ptr",
          [](py::handle self) -> uintptr_t {
            const Tensor& t = Self(self);
            const void* data = t.carrier()->data();
            const SimpleDType* d = t.carrier()->dtype().AsSimple();
            if (data == nullptr || d == nullptr) return 0;
            return reinterpret_cast<uintptr_t>(data) +
                   static_cast<uintptr_t>(t.offset() * d->bits() / 8);
          },
          "The address of subtensor 0's element at the offset (0 without "
          "host data).")
      // The eight views.
      .def("permute",
           [](py::handle self, py::args dims, py::kwargs kwargs) {
             const Tensor& t = Self(self);
             std::vector<int64_t> perm =
                 VarIntegers(dims, kwargs, "dims", "permute: dims");
             const int64_t rank = Rank(t);
             for (int64_t& d : perm) d = NormalizeDim(d, rank);
             return Call(Permute(t, perm));
           })
      .def(
          "slice",
          [](py::handle self, py::handle dim, py::handle start, py::handle stop,
             py::handle step) {
            const Tensor& t = Self(self);
            return Call(Slice(
                t, NormalizeDim(ToInt64(dim, "slice: dim"), Rank(t)),
                ToInt64(start, "slice: start"), ToInt64(stop, "slice: stop"),
                ToInt64(step, "slice: step")));
          },
          py::arg("dim"), py::arg("start"), py::arg("stop"),
          py::arg("step") = 1)
      .def("reshape",
           [](py::handle self, py::args shape, py::kwargs kwargs) {
             const Tensor& t = Self(self);
             return Call(
                 Reshape(t, ReshapeTarget(t, VarIntegers(shape, kwargs, "shape",
                                                         "reshape: shape"))));
           })
      .def(
          "as_strided",
          [](py::handle self, py::handle layout, py::handle offset) {
            const Tensor& t = Self(self);
            return Call(AsStrided(t, ToLayout(layout, "as_strided: layout"),
                                  ToInt64(offset, "as_strided: offset")));
          },
          py::arg("layout"), py::arg("offset"))
      .def("broadcast_to",
           [](py::handle self, py::args shape, py::kwargs kwargs) {
             const Tensor& t = Self(self);
             return Call(BroadcastTo(t, VarIntegers(shape, kwargs, "shape",
                                                    "broadcast_to: shape")));
           })
      .def(
          "broadcast_in_dim",
          [](py::handle self, py::handle shape, py::handle dims) {
            const Tensor& t = Self(self);
            return Call(BroadcastInDim(
                t, ToInt64Vector(shape, "broadcast_in_dim: shape"),
                ToInt64Vector(dims, "broadcast_in_dim: dims")));
          },
          py::arg("shape"), py::arg("dims"))
      .def(
          "squeeze",
          [](py::handle self, py::handle dim) {
            const Tensor& t = Self(self);
            if (dim.is_none()) return Call(Squeeze(t));
            return Call(Squeeze(
                t, NormalizeDim(ToInt64(dim, "squeeze: dim"), Rank(t))));
          },
          py::arg("dim") = py::none())
      .def(
          "unsqueeze",
          [](py::handle self, py::handle dim) {
            const Tensor& t = Self(self);
            return Call(Unsqueeze(
                t, NormalizeDim(ToInt64(dim, "unsqueeze: dim"), Rank(t), 1)));
          },
          py::arg("dim"))
      // Indexing.
      .def("__getitem__",
           [](py::handle self, py::handle key) {
             return GetItemPy(Self(self), key);
           })
      .def("__setitem__",
           [](py::handle self, py::handle key, py::handle value) {
             SetItemPy(Self(self), key, value);
           })
      .def(
          "item", [](py::handle self) { return Item(Self(self), "item"); },
          "The value of a Tensor of one element.")
      .def("__bool__",
           [](py::handle self) { return Truth(Item(Self(self), "bool")); })
      .def(
          "__float__",
          [](py::handle self) { return py::float_(Item(Self(self), "float")); })
      .def("__int__",
           [](py::handle self) { return py::int_(Item(Self(self), "int")); })
      .def("__len__",
           [](py::handle self) {
             const Tensor& t = Self(self);
             const std::vector<int64_t> shape = t.shape();
             if (shape.empty()) {
               RaisePython(PyExc_TypeError, "len() of a rank-0 Tensor");
             }
             return shape[0];
           })
      // Arithmetic.
      .def("__add__",
           [](py::handle self, py::handle o) {
             const Tensor& t = Self(self);
             return Binary(BinaryOp::kAdd, t, o, false, "Add");
           })
      .def("__radd__",
           [](py::handle self, py::handle o) {
             const Tensor& t = Self(self);
             return Binary(BinaryOp::kAdd, t, o, true, "Add");
           })
      .def("__sub__",
           [](py::handle self, py::handle o) {
             const Tensor& t = Self(self);
             return Binary(BinaryOp::kSub, t, o, false, "Sub");
           })
      .def("__rsub__",
           [](py::handle self, py::handle o) {
             const Tensor& t = Self(self);
             return Binary(BinaryOp::kSub, t, o, true, "Sub");
           })
      .def("__mul__",
           [](py::handle self, py::handle o) {
             const Tensor& t = Self(self);
             return Binary(BinaryOp::kMul, t, o, false, "Mul");
           })
      .def("__rmul__",
           [](py::handle self, py::handle o) {
             const Tensor& t = Self(self);
             return Binary(BinaryOp::kMul, t, o, true, "Mul");
           })
      .def("__truediv__",
           [](py::handle self, py::handle o) {
             const Tensor& t = Self(self);
             return Binary(BinaryOp::kDiv, t, o, false, "Div");
           })
      .def("__rtruediv__",
           [](py::handle self, py::handle o) {
             const Tensor& t = Self(self);
             return Binary(BinaryOp::kDiv, t, o, true, "Div");
           })
      .def("__neg__",
           [](py::handle self) {
             const Tensor& t = Self(self);
             return Call(WithoutGil({&t}, [&] { return Neg(t); }));
           })
      // Ops.
      .def(
          "sum",
          [](py::handle self, py::handle dim) {
            const Tensor& t = Self(self);
            if (dim.is_none())
              return Call(WithoutGil({&t}, [&] { return Sum(t); }));
            std::vector<int64_t> dims = ToInt64OrVector(dim, "sum: dim");
            const int64_t rank = Rank(t);
            for (int64_t& d : dims) d = NormalizeDim(d, rank);
            return Call(WithoutGil({&t}, [&] { return Sum(t, dims); }));
          },
          py::arg("dim") = py::none(),
          "The sum of all values (rank 0), or along dim (an int or a "
          "sequence).")
      .def("contiguous",
           [](py::handle self) {
             const Tensor& t = Self(self);
             return Call(WithoutGil({&t}, [&] { return Contiguous(t); }));
           })
      .def("clone",
           [](py::handle self) {
             const Tensor& t = Self(self);
             return Call(WithoutGil({&t}, [&] { return Clone(t); }));
           })
      .def(
          "cast",
          [](py::handle self, py::handle dtype) {
            const Tensor& t = Self(self);
            const SimpleDType& target =
                ToSimpleDType(dtype, "cast: dtype", true);
            return Call(WithoutGil({&t}, [&] { return Cast(t, target); }));
          },
          py::arg("dtype"))
      .def(
          "fill",
          [](py::handle self, py::handle value) {
            const Tensor& t = Self(self);
            const Scalar scalar = ToScalar(value, "fill: value");
            ThrowIfError(WithoutGil({&t}, [&] { return Fill(t, scalar); }));
          },
          py::arg("v"))
      .def(
          "copy_from",
          [](py::handle self, py::handle other) {
            const Tensor& t = Self(self);
            const Tensor source = ToTensorOrImport(other, "copy_from: other");
            ThrowIfError(
                WithoutGil({&t, &source}, [&] { return CopyFrom(t, source); }));
          },
          py::arg("other"))
      .def(
          "is_contiguous",
          [](py::handle self) { return IsCompactRowMajor(Self(self)); },
          "Whether the values sit at consecutive carrier indices in "
          "row-major order.")
      // DLPack.
      .def(
          "__dlpack__",
          [](py::handle self, py::handle stream, py::handle max_version) {
            const Tensor& t = Self(self);
            return ExportDLPack(t, stream, max_version);
          },
          py::arg("stream") = py::none(), py::arg("max_version") = py::none())
      .def("__dlpack_device__",
           [](py::handle self) {
             Self(self);
             return py::make_tuple(1, 0);  // kDLCPU, device 0.
           })
      .def("__repr__", [](py::handle self) { return Repr(Self(self)); });

  tensor_info = py::detail::get_type_info(typeid(Tensor));
  tensor_type = tensor_info->type;
  // numpy leaves `array + tensor` to Tensor.__radd__ (which imports the
  // array), rather than iterating the Tensor into an object array.
  py::handle(reinterpret_cast<PyObject*>(tensor_type)).attr("__array_ufunc__") =
      py::none();
  RefusePickling(reinterpret_cast<PyObject*>(tensor_type), "strata.Tensor",
                 "strata.dump(t, include_data=True) and strata.replay(text) "
                 "carry a Tensor as text");

  module.def(
      "zeros",
      [](py::handle shape, py::handle dtype) {
        const SimpleDType& d = ToSimpleDType(dtype, "zeros: dtype", true);
        const std::vector<int64_t> extents =
            ToInt64OrVector(shape, "zeros: shape");
        return Call(Zeros(d, extents));
      },
      py::arg("shape"), py::arg("dtype"),
      "A zero-filled compact row-major Tensor over a new host carrier.");
}

}  // namespace python
}  // namespace strata
