// strata.Layout and strata.layout: the layout algebra of layout/algebra.h.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "layout/algebra.h"
#include "layout/layout.h"
#include "python/binding.h"
#include "util/errors.h"

namespace strata {
namespace python {
namespace {

// One layout, or a tuple (or list) of layouts: a by-mode tiler.
bool IsTiler(py::handle object) {
  return PyTuple_Check(object.ptr()) || PyList_Check(object.ptr());
}

std::vector<Layout> ToTiler(py::handle object, absl::string_view what) {
  std::vector<Layout> tiler;
  const py::sequence sequence = py::reinterpret_borrow<py::sequence>(object);
  for (size_t i = 0; i < sequence.size(); ++i) {
    tiler.push_back(ToLayout(sequence[i], absl::StrCat(what, "[", i, "]")));
  }
  return tiler;
}

// f(a, b) for a Layout b, or the by-mode form g(a, tiler).
template <typename F, typename G>
Layout WithLayoutOrTiler(py::handle a, py::handle b, const char* name, F f,
                         G g) {
  const Layout& left = ToLayout(a, absl::StrCat(name, ": A"));
  if (IsTiler(b)) {
    const std::vector<Layout> tiler = ToTiler(b, absl::StrCat(name, ": B"));
    return ValueOrRaise(g(left, absl::MakeConstSpan(tiler)));
  }
  return ValueOrRaise(f(left, ToLayout(b, absl::StrCat(name, ": B"))));
}

PyTypeObject* layout_type = nullptr;
const py::detail::type_info* layout_info = nullptr;

const Layout& LayoutSelf(py::handle self) { return ToLayout(self, "self"); }

}  // namespace

absl::StatusOr<Layout> ToLayoutOrStatus(py::handle object,
                                        absl::string_view what) {
  const Layout* layout = ExactValue<Layout>(object, layout_type);
  if (layout == nullptr) {
    return TypeErrorCat(what, " is not a strata.Layout: ", TypeName(object));
  }
  return *layout;
}

const Layout& ToLayout(py::handle object, absl::string_view what) {
  const Layout* layout = ExactValue<Layout>(object, layout_type);
  if (layout == nullptr) {
    RaisePython(
        PyExc_TypeError,
        absl::StrCat(what, " must be a strata.Layout, not ", TypeName(object)));
  }
  return *layout;
}

py::object LayoutObject(Layout layout) {
  return NewObject(std::move(layout), layout_info);
}

void BindLayout(py::module_& module) {
  py::class_<Layout>(module, "Layout", py::is_final(),
                     "A CuTe layout SHAPE:STRIDE: a function from coordinates "
                     "to integer indices (layout-cli.md).")
      .def(py::init([](py::handle shape, py::handle stride) {
             return ValueOrRaise(
                 Layout::Create(ToIntTuple(shape, "Layout shape"),
                                ToIntTuple(stride, "Layout stride")));
           }),
           py::arg("shape"), py::arg("stride"))
      .def_static(
          "parse",
          [](py::handle text) {
            if (!PyUnicode_Check(text.ptr())) {
              RaisePython(PyExc_TypeError,
                          "Layout.parse: the text must be a str, not " +
                              TypeName(text));
            }
            return ValueOrRaise(ParseLayout(std::string(py::str(text))));
          },
          py::arg("text"), "Parses the notation \"(4,8):(8,1)\".")
      .def_static(
          "row_major",
          [](py::handle shape) {
            return ValueOrRaise(
                Layout::RowMajor(ToIntTuple(shape, "Layout shape")));
          },
          py::arg("shape"), "The compact layout, last leaf fastest (C order).")
      .def_static(
          "column_major",
          [](py::handle shape) {
            return ValueOrRaise(
                Layout::ColumnMajor(ToIntTuple(shape, "Layout shape")));
          },
          py::arg("shape"), "The compact layout, first leaf fastest (CuTe's).")
      .def_property_readonly("shape",
                             [](py::handle self) {
                               const Layout& l = LayoutSelf(self);
                               return FromIntTuple(l.shape());
                             })
      .def_property_readonly("stride",
                             [](py::handle self) {
                               const Layout& l = LayoutSelf(self);
                               return FromIntTuple(l.stride());
                             })
      .def_property_readonly(
          "size", [](py::handle self) { return LayoutSelf(self).size(); })
      .def_property_readonly(
          "cosize", [](py::handle self) { return LayoutSelf(self).cosize(); })
      .def_property_readonly(
          "rank", [](py::handle self) { return LayoutSelf(self).rank(); })
      .def_property_readonly(
          "depth", [](py::handle self) { return LayoutSelf(self).depth(); })
      .def(
          "mode",
          [](py::handle self, py::handle i) {
            const Layout& l = LayoutSelf(self);
            const int64_t mode = ToInt64(i, "Layout.mode: i");
            if (mode < 0 || mode >= l.rank()) {
              RaisePython(PyExc_ValueError,
                          absl::StrCat("Layout.mode: mode ", mode,
                                       " is out of range for rank ", l.rank(),
                                       " layout ", l.ToString()));
            }
            return l.mode(static_cast<int>(mode));
          },
          py::arg("i"))
      .def(
          "__call__",
          [](py::handle self, py::handle coord) {
            const Layout& l = LayoutSelf(self);
            return ValueOrRaise(l.Crd2Idx(ToIntTuple(coord, "coordinate")));
          },
          py::arg("coord"),
          "L(c): the index of a linear or hierarchical coordinate.")
      .def("__str__",
           [](py::handle self) { return LayoutSelf(self).ToString(); })
      .def("__repr__",
           [](py::handle self) {
             const Layout& l = LayoutSelf(self);
             return absl::StrCat("strata.Layout.parse('", l.ToString(), "')");
           })
      .def("__eq__",
           [](py::handle self, py::handle other) -> py::object {
             const Layout& l = LayoutSelf(self);
             const Layout* right = ExactValue<Layout>(other, layout_type);
             if (right == nullptr) {
               return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             }
             return py::bool_(l == *right);
           })
      .def("__hash__",
           [](py::handle self) {
             const Layout& l = LayoutSelf(self);
             return py::hash(py::make_tuple(FromIntTuple(l.shape()),
                                            FromIntTuple(l.stride())));
           })
      .def("__reduce__", [](py::handle self) {
        return py::make_tuple(
            py::type::of(self),
            py::make_tuple(self.attr("shape"), self.attr("stride")));
      });
  layout_info = py::detail::get_type_info(typeid(Layout));
  layout_type = layout_info->type;

  py::module_ algebra = module.def_submodule(
      "layout", "The CuTe layout algebra, always admissibility-checked.");
  algebra.def(
      "coalesce",
      [](py::handle l) { return Coalesce(ToLayout(l, "coalesce: layout")); },
      py::arg("layout"));
  algebra.def(
      "composition",
      [](py::handle a, py::handle b) {
        return WithLayoutOrTiler(
            a, b, "composition",
            [](const Layout& x, const Layout& y) { return Composition(x, y); },
            [](const Layout& x, absl::Span<const Layout> t) {
              return Composition(x, t);
            });
      },
      py::arg("a"), py::arg("b"));
  algebra.def(
      "complement",
      [](py::handle l, py::handle cotarget) {
        const Layout& layout = ToLayout(l, "complement: layout");
        return ValueOrRaise(Complement(
            layout, cotarget.is_none()
                        ? layout.cosize()
                        : ToInt64(cotarget, "complement: cotarget")));
      },
      py::arg("layout"), py::arg("cotarget") = py::none());
  algebra.def(
      "right_inverse",
      [](py::handle l) {
        return ValueOrRaise(RightInverse(ToLayout(l, "right_inverse: layout")));
      },
      py::arg("layout"));
  algebra.def(
      "left_inverse",
      [](py::handle l) {
        return ValueOrRaise(LeftInverse(ToLayout(l, "left_inverse: layout")));
      },
      py::arg("layout"));
  algebra.def(
      "logical_divide",
      [](py::handle a, py::handle b) {
        return WithLayoutOrTiler(
            a, b, "logical_divide",
            [](const Layout& x, const Layout& y) {
              return LogicalDivide(x, y);
            },
            [](const Layout& x, absl::Span<const Layout> t) {
              return LogicalDivide(x, t);
            });
      },
      py::arg("a"), py::arg("b"));
  algebra.def(
      "zipped_divide",
      [](py::handle a, py::handle b) {
        return WithLayoutOrTiler(
            a, b, "zipped_divide",
            [](const Layout& x, const Layout& y) { return ZippedDivide(x, y); },
            [](const Layout& x, absl::Span<const Layout> t) {
              return ZippedDivide(x, t);
            });
      },
      py::arg("a"), py::arg("b"));
  algebra.def(
      "tiled_divide",
      [](py::handle a, py::handle b) {
        return WithLayoutOrTiler(
            a, b, "tiled_divide",
            [](const Layout& x, const Layout& y) { return TiledDivide(x, y); },
            [](const Layout& x, absl::Span<const Layout> t) {
              return TiledDivide(x, t);
            });
      },
      py::arg("a"), py::arg("b"));
  algebra.def(
      "logical_product",
      [](py::handle a, py::handle b) {
        return ValueOrRaise(LogicalProduct(ToLayout(a, "logical_product: A"),
                                           ToLayout(b, "logical_product: B")));
      },
      py::arg("a"), py::arg("b"));
  algebra.def(
      "blocked_product",
      [](py::handle a, py::handle b) {
        return ValueOrRaise(BlockedProduct(ToLayout(a, "blocked_product: A"),
                                           ToLayout(b, "blocked_product: B")));
      },
      py::arg("a"), py::arg("b"));
  algebra.def(
      "raked_product",
      [](py::handle a, py::handle b) {
        return ValueOrRaise(RakedProduct(ToLayout(a, "raked_product: A"),
                                         ToLayout(b, "raked_product: B")));
      },
      py::arg("a"), py::arg("b"));
  algebra.def(
      "make_layout",
      [](py::args modes) {
        std::vector<Layout> layouts;
        for (size_t i = 0; i < modes.size(); ++i) {
          layouts.push_back(
              ToLayout(modes[i], absl::StrCat("make_layout: mode ", i)));
        }
        return ValueOrRaise(MakeLayout(layouts));
      },
      "The layout whose modes are the arguments, in order.");
}

}  // namespace python
}  // namespace strata
