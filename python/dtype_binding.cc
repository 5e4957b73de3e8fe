// strata.dtype: the descriptors, user simple, compound (with Python rules,
// rule_binding.cc), category and block-scaled dtypes, and the registry.
#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dtype/block_scale_rule.h"
#include "dtype/dtype.h"
#include "dtype/registry.h"
#include "dtype/representation_rule.h"
#include "python/binding.h"
#include "util/errors.h"

namespace strata {
namespace python {
namespace {

PyTypeObject* simple_type = nullptr;
PyTypeObject* compound_type = nullptr;
PyTypeObject* category_type = nullptr;

// The Python predicate of each category made in Python, called directly by
// DTypeCategory.contains so that its exceptions propagate.
std::unordered_map<const DTypeCategory*, PyObject*>& PythonPredicates() {
  static auto* predicates =
      new std::unordered_map<const DTypeCategory*, PyObject*>();
  return *predicates;
}

std::string KindName(const DType& dtype) {
  return std::string(dtype.kind_name());
}

bool IsRegistered(const DType& dtype) {
  absl::StatusOr<const DType*> found =
      DTypeRegistry::Global().Lookup(dtype.name());
  return found.ok() && *found == &dtype;
}

const DType& DTypeSelf(py::handle self) { return ToDType(self, "self"); }

const SimpleDType& SimpleSelf(py::handle self) {
  const DType& d = DTypeSelf(self);
  if (d.AsSimple() == nullptr) {
    RaisePython(PyExc_TypeError, "self must be a SimpleDType, not " + d.name());
  }
  return *d.AsSimple();
}

const CompoundDType& CompoundSelf(py::handle self) {
  const DType& d = DTypeSelf(self);
  if (d.AsCompound() == nullptr) {
    RaisePython(PyExc_TypeError,
                "self must be a CompoundDType, not " + d.name());
  }
  return *d.AsCompound();
}

// A bit count: an integer, which SimpleDType::Create then judges; kept in
// int's range (ValueError beyond it) rather than wrapped into it.
int Width(py::handle object, const char* what) {
  const int64_t value = ToInt64(object, what);
  if (value < -(1 << 20) || value > (1 << 20)) {
    RaisePython(PyExc_ValueError,
                absl::StrCat(what, " ", value, " is not a bit count"));
  }
  return static_cast<int>(value);
}

NumericClass ToNumericClass(py::handle object) {
  const std::string text =
      PyUnicode_Check(object.ptr()) ? std::string(py::str(object)) : "";
  if (text == "bool") return NumericClass::kBool;
  if (text == "integer") return NumericClass::kInteger;
  if (text == "floating") return NumericClass::kFloating;
  RaisePython(PyExc_ValueError,
              "SimpleDType: numeric_class must be 'bool', 'integer' or "
              "'floating', not " +
                  std::string(py::repr(object)));
}

CompoundDType* MakeCompound(py::handle name, py::handle simple_types,
                            py::handle rules) {
  if (!PyUnicode_Check(name.ptr())) {
    RaisePython(PyExc_TypeError,
                "CompoundDType: name must be a str, not " + TypeName(name));
  }
  if (!PySequence_Check(simple_types.ptr()) ||
      PyUnicode_Check(simple_types.ptr())) {
    RaisePython(PyExc_TypeError,
                "CompoundDType: simple_types must be a sequence of "
                "SimpleDTypes, not " +
                    TypeName(simple_types));
  }
  std::vector<const SimpleDType*> schema;
  const py::sequence types = py::reinterpret_borrow<py::sequence>(simple_types);
  for (size_t i = 0; i < types.size(); ++i) {
    schema.push_back(&ToSimpleDType(
        types[i], absl::StrCat("CompoundDType: simple_types[", i, "]")));
  }
  std::vector<std::shared_ptr<const RepresentationRule>> rule_list;
  py::iterator items = py::iter(rules);
  for (size_t i = 0; items != py::iterator::sentinel(); ++items, ++i) {
    rule_list.push_back(ToRule(*items, i));
  }
  return const_cast<CompoundDType*>(ValueOrRaise(CompoundDType::Create(
      std::string(py::str(name)), std::move(schema), std::move(rule_list))));
}

}  // namespace

py::object DTypeObject(const DType* dtype) {
  if (dtype == nullptr) return py::none();
  // One object per descriptor, kept for the process as the descriptor is.
  static auto* objects = new std::unordered_map<const DType*, PyObject*>();
  auto it = objects->find(dtype);
  if (it != objects->end())
    return py::reinterpret_borrow<py::object>(it->second);
  py::object object =
      py::cast(const_cast<DType*>(dtype), py::return_value_policy::reference);
  (*objects)[dtype] = py::object(object).release().ptr();
  return object;
}

py::tuple DTypeTuple(absl::Span<const SimpleDType* const> schema) {
  py::tuple result(schema.size());
  for (size_t i = 0; i < schema.size(); ++i) {
    result[i] = DTypeObject(schema[i]);
  }
  return result;
}

const DType* ToDTypeOrNull(py::handle object) {
  // NOTE [ Casting without type lookups ]: the classes are final, so the
  // Python type tells the C++ one; an instance __init__ never built is none.
  PyTypeObject* type = Py_TYPE(object.ptr());
  if (type != simple_type && type != compound_type && type != category_type) {
    return nullptr;
  }
  void* value = reinterpret_cast<py::detail::instance*>(object.ptr())
                    ->get_value_and_holder()
                    .value_ptr();
  if (value == nullptr) return nullptr;
  if (type == simple_type) return static_cast<const SimpleDType*>(value);
  if (type == compound_type) return static_cast<const CompoundDType*>(value);
  return static_cast<const DTypeCategory*>(value);
}

const SimpleDType& ToSimpleDType(py::handle object, absl::string_view what,
                                 bool names) {
  const DType& dtype = ToDType(object, what, names);
  if (dtype.AsSimple() == nullptr) {
    RaisePython(PyExc_TypeError,
                absl::StrCat(what, " must be a SimpleDType; ", dtype.name(),
                             " is a ", dtype.kind_name(), " dtype"));
  }
  return *dtype.AsSimple();
}

const DType& ToDType(py::handle object, absl::string_view what, bool names) {
  if (const DType* dtype = ToDTypeOrNull(object)) return *dtype;
  if (names && PyUnicode_Check(object.ptr())) {
    return *ValueOrRaise(
        DTypeRegistry::Global().Lookup(std::string(py::str(object))));
  }
  RaisePython(PyExc_TypeError, absl::StrCat(what, " must be a strata dtype",
                                            names ? " or its name" : "",
                                            ", not ", TypeName(object)));
}

void BindDTypes(py::module_& module) {
  py::module_ dtype_module =
      module.def_submodule("dtype", "The dtype namespace (strata.dtype).");

  BindRules(module, dtype_module);

  using NoDelete = std::unique_ptr<DType, py::nodelete>;
  py::class_<DType, NoDelete> dtype_class(
      dtype_module, "DType",
      "A dtype descriptor; descriptors are compared by identity.");
  dtype_class
      .def_property_readonly(
          "name", [](py::handle self) { return DTypeSelf(self).name(); })
      .def_property_readonly(
          "kind", [](py::handle self) { return KindName(DTypeSelf(self)); })
      .def_property_readonly(
          "storage_schema",
          [](py::handle self) {
            return DTypeTuple(DTypeSelf(self).storage_schema());
          })
      .def("__str__", [](py::handle self) { return DTypeSelf(self).name(); })
      // Descriptors are process-lifetime singletons compared by identity:
      // a copy is the descriptor itself, and a registered one pickles by
      // its name.
      .def("__copy__",
           [](py::handle self) {
             return py::reinterpret_borrow<py::object>(self);
           })
      .def("__deepcopy__",
           [](py::handle self, py::handle) {
             return py::reinterpret_borrow<py::object>(self);
           })
      .def("__reduce__",
           [](py::handle self) -> py::object {
             const DType& d = DTypeSelf(self);
             if (!IsRegistered(d)) {
               RaisePython(PyExc_TypeError,
                           "dtype " + d.name() +
                               " is not registered: it pickles by its "
                               "registered name only");
             }
             return py::make_tuple(
                 py::module_::import("strata.dtype").attr("by_name"),
                 py::make_tuple(d.name()));
           })
      .def("__repr__", [](py::handle self) {
        const DType& d = DTypeSelf(self);
        if (IsRegistered(d)) return absl::StrCat("strata.dtype.", d.name());
        return absl::StrCat("<strata.dtype.",
                            d.kind() == DType::Kind::kSimple ? "SimpleDType"
                            : d.kind() == DType::Kind::kCompound
                                ? "CompoundDType"
                                : "DTypeCategory",
                            " '", d.name(), "'>");
      });

  py::class_<SimpleDType, DType, std::unique_ptr<SimpleDType, py::nodelete>>(
      dtype_module, "SimpleDType", py::is_final(),
      "One stored value per logical value.")
      .def(py::init([](py::handle name, py::handle bits,
                       py::handle numeric_class, py::handle is_signed,
                       py::handle exponent_bits, py::handle mantissa_bits) {
             if (!PyUnicode_Check(name.ptr())) {
               RaisePython(
                   PyExc_TypeError,
                   "SimpleDType: name must be a str, not " + TypeName(name));
             }
             SimpleDType::Spec spec;
             spec.name = std::string(py::str(name));
             spec.bits = Width(bits, "SimpleDType: bits");
             spec.numeric_class = ToNumericClass(numeric_class);
             spec.is_signed = Truth(is_signed);
             spec.exponent_bits =
                 Width(exponent_bits, "SimpleDType: exponent_bits");
             spec.mantissa_bits =
                 Width(mantissa_bits, "SimpleDType: mantissa_bits");
             return const_cast<SimpleDType*>(
                 ValueOrRaise(SimpleDType::Create(std::move(spec))));
           }),
           py::arg("name"), py::arg("bits"),
           py::arg("numeric_class") = "floating", py::arg("signed") = true,
           py::arg("exponent_bits") = 0, py::arg("mantissa_bits") = 0)
      .def_property_readonly(
          "bits", [](py::handle self) { return SimpleSelf(self).bits(); })
      .def_property_readonly(
          "is_floating",
          [](py::handle self) { return SimpleSelf(self).is_floating(); })
      .def_property_readonly(
          "is_integer",
          [](py::handle self) { return SimpleSelf(self).is_integer(); })
      .def_property_readonly(
          "is_bool", [](py::handle self) { return SimpleSelf(self).is_bool(); })
      .def_property_readonly(
          "is_signed",
          [](py::handle self) { return SimpleSelf(self).is_signed(); })
      .def_property_readonly(
          "exponent_bits",
          [](py::handle self) { return SimpleSelf(self).exponent_bits(); })
      .def_property_readonly("mantissa_bits", [](py::handle self) {
        return SimpleSelf(self).mantissa_bits();
      });

  py::class_<CompoundDType, DType,
             std::unique_ptr<CompoundDType, py::nodelete>>(
      dtype_module, "CompoundDType", py::is_final(),
      "Several stored levels per logical value (codes, scales, ...), linked "
      "by adjacent layouts; its rules run in order after universal "
      "validation.")
      .def(py::init(&MakeCompound), py::arg("name"), py::arg("simple_types"),
           py::arg("rules") = py::tuple())
      .def_property_readonly(
          "simple_types",
          [](py::handle self) {
            return DTypeTuple(CompoundSelf(self).simple_types());
          })
      .def_property_readonly("rules", [](py::handle self) {
        const CompoundDType& d = CompoundSelf(self);
        py::tuple rules(d.rules().size());
        for (size_t i = 0; i < d.rules().size(); ++i) {
          rules[i] = RuleObject(d.rules()[i]);
        }
        return rules;
      });

  py::class_<DTypeCategory, DType,
             std::unique_ptr<DTypeCategory, py::nodelete>>(
      dtype_module, "DTypeCategory", py::is_final(),
      "A set of dtypes (DType.Any, DType.Floating, DType.Integer); it has no "
      "storage schema.")
      .def(py::init([](py::handle name, py::handle contains) {
             if (!PyUnicode_Check(name.ptr())) {
               RaisePython(
                   PyExc_TypeError,
                   "DTypeCategory: name must be a str, not " + TypeName(name));
             }
             if (!PyCallable_Check(contains.ptr())) {
               RaisePython(PyExc_TypeError,
                           "DTypeCategory: contains must be callable, not " +
                               TypeName(contains));
             }
             PyObject* predicate = py::reinterpret_borrow<py::object>(contains)
                                       .release()
                                       .ptr();  // Kept for the process.
             const DTypeCategory* category = ValueOrRaise(DTypeCategory::Create(
                 std::string(py::str(name)), [predicate](const DType& d) {
                   if (!PythonAlive()) return false;
                   py::gil_scoped_acquire gil;
                   try {
                     return Truth(py::handle(predicate)(DTypeObject(&d)));
                   } catch (py::error_already_set& error) {
                     error.discard_as_unraisable("DTypeCategory predicate");
                   } catch (const std::exception&) {
                   }
                   return false;
                 }));
             PythonPredicates()[category] = predicate;
             return const_cast<DTypeCategory*>(category);
           }),
           py::arg("name"), py::arg("contains"))
      .def(
          "contains",
          [](py::handle self, py::handle dtype) -> bool {
            const DType& category = DTypeSelf(self);
            const DTypeCategory* c = category.AsCategory();
            if (c == nullptr) {
              RaisePython(
                  PyExc_TypeError,
                  "self must be a DTypeCategory, not " + category.name());
            }
            const DType& d = ToDType(dtype, "DTypeCategory.contains: dtype");
            auto it = PythonPredicates().find(c);
            if (it != PythonPredicates().end()) {
              // A predicate answers with its truth, as Python's do.
              return Truth(py::handle(it->second)(DTypeObject(&d)));
            }
            return c->Contains(d);
          },
          py::arg("dtype"))
      .def("__contains__", [](py::handle self, py::handle dtype) {
        return self.attr("contains")(dtype);
      });

  simple_type = py::detail::get_type_info(typeid(SimpleDType))->type;
  compound_type = py::detail::get_type_info(typeid(CompoundDType))->type;
  category_type = py::detail::get_type_info(typeid(DTypeCategory))->type;
  dtype_class.attr("Any") = DTypeObject(dtypes::Any());
  dtype_class.attr("Floating") = DTypeObject(dtypes::Floating());
  dtype_class.attr("Integer") = DTypeObject(dtypes::Integer());

  dtype_module.def(
      "by_name",
      [](py::handle name) {
        if (!PyUnicode_Check(name.ptr())) {
          RaisePython(PyExc_TypeError,
                      "by_name: the name must be a str, not " + TypeName(name));
        }
        absl::StatusOr<const DType*> found =
            DTypeRegistry::Global().Lookup(std::string(py::str(name)));
        if (!found.ok()) {
          RaisePython(PyExc_KeyError, std::string(found.status().message()));
        }
        return DTypeObject(*found);
      },
      py::arg("name"), "The registered dtype of that name (KeyError if none).");
  dtype_module.def(
      "names", [] { return DTypeRegistry::Global().Names(); },
      "Every registered dtype name, in registration order.");
  dtype_module.def(
      "block_scaled",
      [](py::handle name, py::handle element, py::handle scales,
         py::handle blocks, py::handle other_modes, py::handle ragged,
         py::handle chosen_mode) {
        if (!PyUnicode_Check(name.ptr())) {
          RaisePython(
              PyExc_TypeError,
              "block_scaled: name must be a str, not " + TypeName(name));
        }
        std::vector<const SimpleDType*> scale_types;
        const py::sequence sequence =
            py::reinterpret_borrow<py::sequence>(scales);
        for (size_t i = 0; i < sequence.size(); ++i) {
          scale_types.push_back(&ToSimpleDType(
              sequence[i], absl::StrCat("block_scaled: scales[", i, "]")));
        }
        BlockScaling scaling;
        const py::sequence block_list =
            py::reinterpret_borrow<py::sequence>(blocks);
        for (size_t i = 0; i < block_list.size(); ++i) {
          py::handle b = block_list[i];
          scaling.blocks.push_back(
              PyUnicode_Check(b.ptr()) && std::string(py::str(b)) == "whole"
                  ? kWholeMode
                  : ToInt64(b, absl::StrCat("block_scaled: blocks[", i, "]")));
        }
        if (PyUnicode_Check(other_modes.ptr()) &&
            std::string(py::str(other_modes)) == "whole") {
          scaling.other_modes = kWholeMode;
        } else {
          scaling.other_modes =
              ToInt64(other_modes, "block_scaled: other_modes");
        }
        scaling.ragged = Truth(ragged);
        scaling.chosen_mode = Truth(chosen_mode);
        return DTypeObject(ValueOrRaise(MakeBlockScaledDType(
            std::string(py::str(name)),
            &ToSimpleDType(element, "block_scaled: element"),
            std::move(scale_types), std::move(scaling))));
      },
      py::arg("name"), py::arg("element"), py::arg("scales"), py::arg("blocks"),
      py::arg("other_modes") = 1, py::arg("ragged") = false,
      py::arg("chosen_mode") = false,
      "A new block-scaled compound dtype (formats.md section 1): element codes "
      "times scales, with the block-scaling rule. blocks: the block extents of "
      "the blocked (last) modes, an int or 'whole'; other_modes: 1 or "
      "'whole'.");
}

}  // namespace python
}  // namespace strata
