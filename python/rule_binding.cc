// Representation rules from Python: rules written in Python (any object with
// validate(context)), the built-in rules as objects, and the read-only
// RepresentationValidationContext they receive (python.md, "Custom carriers
// and rules").
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dtype/dtype.h"
#include "dtype/representation_rule.h"
#include "python/binding.h"
#include "util/errors.h"

namespace strata {
namespace python {
namespace {

PyTypeObject* context_type = nullptr;
PyTypeObject* native_rule_type = nullptr;

py::tuple LayoutTuple(absl::Span<const Layout> layouts) {
  py::tuple result(layouts.size());
  for (size_t i = 0; i < layouts.size(); ++i) {
    result[i] = LayoutObject(layouts[i]);
  }
  return result;
}

// The context a rule reads, copied out of the validation's frozen one: a rule
// may keep it past the call, and it is read-only in Python (properties
// without setters, no instance dict). It is also a C++ context, so that a
// built-in rule can validate it (Rule.validate).
class PythonContext final : public RepresentationValidationContext {
 public:
  explicit PythonContext(const RepresentationValidationContext& context)
      : logical_dtype_(&context.logical_dtype()),
        storage_dtypes_(context.storage_dtypes().begin(),
                        context.storage_dtypes().end()),
        placements_(context.placement_layouts().begin(),
                    context.placement_layouts().end()),
        adjacent_(context.adjacent_layouts().begin(),
                  context.adjacent_layouts().end()),
        level_shapes_(context.level_shapes().begin(),
                      context.level_shapes().end()) {}

  // Whether `context` describes the same candidate.
  bool Describes(const RepresentationValidationContext& context) const {
    return logical_dtype_ == &context.logical_dtype() &&
           absl::MakeConstSpan(storage_dtypes_) == context.storage_dtypes() &&
           absl::MakeConstSpan(placements_) == context.placement_layouts() &&
           absl::MakeConstSpan(adjacent_) == context.adjacent_layouts();
  }

  const DType& logical_dtype() const override { return *logical_dtype_; }
  absl::Span<const SimpleDType* const> storage_dtypes() const override {
    return storage_dtypes_;
  }
  absl::Span<const Layout> placement_layouts() const override {
    return placements_;
  }
  absl::Span<const Layout> adjacent_layouts() const override {
    return adjacent_;
  }
  absl::Span<const IntTuple> level_shapes() const override {
    return level_shapes_;
  }

 private:
  const DType* logical_dtype_;
  std::vector<const SimpleDType*> storage_dtypes_;
  std::vector<Layout> placements_;
  std::vector<Layout> adjacent_;
  std::vector<IntTuple> level_shapes_;
};

// The spec: "each representation rule receives the same frozen context". The
// C++ validation hands every rule of one candidate the same context object;
// the Python object made for the first rule is kept (one per thread) and
// given to the next rules while it describes the same candidate.
// A rule may itself build a compound Tensor, whose validation comes in
// between: the contexts of the validations under way are kept, the latest
// few (kNested) per thread.
py::object ContextObject(const RepresentationValidationContext& context) {
  constexpr int kNested = 8;
  struct Kept {
    const RepresentationValidationContext* address = nullptr;
    PyObject* object = nullptr;  // A strong reference.
    const PythonContext* frozen = nullptr;
  };
  struct Recent {
    std::array<Kept, kNested> kept;
    int next = 0;
  };
  thread_local Recent* recent = new Recent();  // Never destroyed (errors.cc).
  for (const Kept& k : recent->kept) {
    if (k.address == &context && k.object != nullptr &&
        k.frozen->Describes(context)) {
      return py::reinterpret_borrow<py::object>(k.object);
    }
  }
  auto frozen = std::make_unique<PythonContext>(context);
  const PythonContext* raw = frozen.get();
  py::object object = py::cast(std::move(frozen));
  Kept& slot = recent->kept[recent->next];
  recent->next = (recent->next + 1) % kNested;
  Py_XDECREF(slot.object);
  slot = {&context, py::object(object).release().ptr(), raw};
  return object;
}

std::string RuleName(py::handle rule) {
  py::object name = py::getattr(rule, "name", py::none());
  if (PyUnicode_Check(name.ptr())) return std::string(py::str(name));
  if (PyType_Check(rule.ptr())) {
    return std::string(py::str(rule.attr("__qualname__")));
  }
  return std::string(py::str(py::type::of(rule).attr("__qualname__")));
}

// repr(object), or its type's name where repr raises.
std::string Describe(py::handle object) {
  PyObject* text = PyObject_Repr(object.ptr());
  if (text == nullptr) {
    PyErr_Clear();
    return absl::StrCat("a ", TypeName(object));
  }
  std::string result = py::str(py::reinterpret_steal<py::object>(text));
  return result;
}

// A rule written in Python: any object with validate(context).
class PythonRule final : public RepresentationRule {
 public:
  PythonRule(py::object rule, std::string name)
      : rule_(std::move(rule)), name_(std::move(name)) {}
  ~PythonRule() override {
    if (!PythonAlive()) {
      rule_.release();  // The interpreter is gone: nothing to drop.
      return;
    }
    py::gil_scoped_acquire gil;
    rule_ = py::object();
  }

  absl::string_view name() const override { return name_; }
  const py::object& object() const { return rule_; }

  absl::Status Validate(
      const RepresentationValidationContext& context) const override {
    if (!PythonAlive()) {
      return ValueErrorCat("representation rule ", name_,
                           ": the interpreter is shutting down");
    }
    py::gil_scoped_acquire gil;
    try {
      py::object result = rule_.attr("validate")(ContextObject(context));
      if (!result.is_none()) {
        return TypeErrorCat("representation rule ", name_,
                            ": validate(context) returned ", Describe(result),
                            ", not None");
      }
    } catch (py::error_already_set& error) {
      return PythonErrorStatus(error,
                               absl::StrCat("representation rule ", name_));
    } catch (const std::exception& error) {
      return ValueErrorCat("representation rule ", name_, ": ", error.what());
    }
    return absl::OkStatus();
  }

 private:
  py::object rule_;
  std::string name_;
};

// A rule written in C++ (a built-in format's), as a Python object.
struct NativeRule {
  std::shared_ptr<const RepresentationRule> rule;
};

}  // namespace

py::object RuleObject(const std::shared_ptr<const RepresentationRule>& rule) {
  if (const auto* python = dynamic_cast<const PythonRule*>(rule.get())) {
    return python->object();
  }
  return py::cast(NativeRule{rule});
}

std::shared_ptr<const RepresentationRule> ToRule(py::handle rule, size_t i) {
  if (const NativeRule* native =
          ExactValue<NativeRule>(rule, native_rule_type)) {
    return native->rule;
  }
  py::object validate = py::getattr(rule, "validate", py::none());
  if (!PyCallable_Check(validate.ptr())) {
    RaisePython(PyExc_TypeError,
                absl::StrCat("CompoundDType: rules[", i, "] (", Describe(rule),
                             ") has no callable validate(context)"));
  }
  return std::make_shared<PythonRule>(py::reinterpret_borrow<py::object>(rule),
                                      RuleName(rule));
}

void BindRules(py::module_& module, py::module_& dtype_module) {
  auto context_self = [](py::handle self) -> const PythonContext& {
    const PythonContext* context =
        ExactValue<PythonContext>(self, context_type);
    if (context == nullptr) {
      RaisePython(PyExc_TypeError,
                  "self must be a RepresentationValidationContext, not " +
                      TypeName(self));
    }
    return *context;
  };
  py::class_<PythonContext>(
      dtype_module, "RepresentationValidationContext", py::is_final(),
      "The read-only description of a universally validated candidate "
      "representation that each representation rule receives.")
      .def_property_readonly(
          "logical_dtype",
          [=](py::handle self) {
            return DTypeObject(&context_self(self).logical_dtype());
          })
      .def_property_readonly(
          "storage_dtypes",
          [=](py::handle self) {
            return DTypeTuple(context_self(self).storage_dtypes());
          })
      .def_property_readonly(
          "placement_layouts",
          [=](py::handle self) {
            return LayoutTuple(context_self(self).placement_layouts());
          })
      .def_property_readonly(
          "adjacent_layouts",
          [=](py::handle self) {
            return LayoutTuple(context_self(self).adjacent_layouts());
          })
      .def_property_readonly("level_shapes", [=](py::handle self) {
        const PythonContext& c = context_self(self);
        py::tuple shapes(c.level_shapes().size());
        for (size_t i = 0; i < c.level_shapes().size(); ++i) {
          shapes[i] = FromIntTuple(c.level_shapes()[i]);
        }
        return shapes;
      });
  module.attr("RepresentationValidationContext") =
      dtype_module.attr("RepresentationValidationContext");
  context_type = py::detail::get_type_info(typeid(PythonContext))->type;
  RefusePickling(reinterpret_cast<PyObject*>(context_type),
                 "a RepresentationValidationContext",
                 "read its fields instead");

  auto rule_self = [](py::handle self) -> const RepresentationRule& {
    const NativeRule* rule = ExactValue<NativeRule>(self, native_rule_type);
    if (rule == nullptr) {
      RaisePython(PyExc_TypeError,
                  "self must be a strata.dtype.Rule, not " + TypeName(self));
    }
    return *rule->rule;
  };
  py::class_<NativeRule>(dtype_module, "Rule", py::is_final(),
                         "A representation rule written in C++ (a built-in "
                         "format's); it may be given to a CompoundDType.")
      .def_property_readonly(
          "name",
          [=](py::handle self) { return std::string(rule_self(self).name()); })
      .def(
          "validate",
          [=](py::handle self, py::handle context) {
            const RepresentationRule& rule = rule_self(self);
            const PythonContext* frozen =
                ExactValue<PythonContext>(context, context_type);
            if (frozen == nullptr) {
              RaisePython(PyExc_TypeError,
                          "Rule.validate: context must be a "
                          "RepresentationValidationContext, not " +
                              TypeName(context));
            }
            ThrowIfError(rule.Validate(*frozen));
          },
          py::arg("context"))
      .def("__repr__", [=](py::handle self) {
        return absl::StrCat("<strata.dtype.Rule '", rule_self(self).name(),
                            "'>");
      });
  native_rule_type = py::detail::get_type_info(typeid(NativeRule))->type;
  RefusePickling(reinterpret_cast<PyObject*>(native_rule_type),
                 "a built-in rule", "its dtype pickles by name");
}

}  // namespace python
}  // namespace strata
