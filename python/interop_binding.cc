// quantize, the checkpoint readers and writer, shard planning, dump and
// replay, and the framework-owned factory (python.md, "Names").
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/gguf.h"
#include "checkpoint/safetensors.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/registry.h"
#include "ops/dequantize.h"
#include "ops/quantize.h"
#include "ops/requantize.h"
#include "proto/codec.h"
#include "python/binding.h"
#include "util/errors.h"
#include "views/shard_plan.h"

namespace strata {
namespace python {

py::str Utf8(const std::string& text) {
  // Names and metadata of a file are its bytes: undecodable ones are kept as
  // surrogates (os.fsdecode's way) rather than failing the read.
  return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(
      text.data(), static_cast<Py_ssize_t>(text.size()), "surrogateescape"));
}

namespace {

py::object TensorOrException(const absl::StatusOr<Tensor>& tensor) {
  if (tensor.ok()) return TensorObject(*tensor);
  return ExceptionObject(tensor.status());
}

// name -> Tensor, or the exception that refused it, in file order.
template <typename Entry>
py::dict TensorsByName(const std::vector<Entry>& entries) {
  py::dict tensors;
  for (const Entry& entry : entries) {
    tensors[Utf8(entry.name)] = TensorOrException(entry.tensor);
  }
  return tensors;
}

py::object GgufValueObject(const GgufValue& value) {
  switch (value.type) {
    case GgufType::kBool:
      return py::bool_(value.AsInt64() != 0);
    case GgufType::kFloat32:
    case GgufType::kFloat64:
      return py::float_(value.AsDouble());
    case GgufType::kUInt64:
      return py::int_(value.AsUInt64());
    case GgufType::kString:
      return Utf8(value.text);
    case GgufType::kArray: {
      py::list items;
      if (value.items.empty()) {
        for (uint64_t i = 0; i < value.count; ++i) {
          items.append(GgufValueObject(value.Element(i)));
        }
      } else {
        for (const GgufValue& item : value.items) {
          items.append(GgufValueObject(item));
        }
      }
      return std::move(items);
    }
    default:
      return py::int_(value.AsInt64());
  }
}

ScaleLayout ToScaleLayout(py::handle object) {
  const std::string name =
      PyUnicode_Check(object.ptr()) ? std::string(py::str(object)) : "";
  if (name == "row_major") return ScaleLayout::kRowMajor;
  if (name == "swizzled_128x4") return ScaleLayout::kSwizzled128x4;
  RaisePython(PyExc_ValueError,
              "quantize: scale_layout must be 'row_major' or "
              "'swizzled_128x4', not " +
                  std::string(py::repr(object)));
}

// A subtensor of create_representation: (storage dtype, carrier, offset,
// layout), each field as the spec's universal validation judges it (a
// non-Carrier is a null carrier, a non-Layout a status), in the factory's
// order; only an offset that is not an integer is refused here, before the
// factory and so before any rule.
SubtensorCandidate ToCandidate(py::handle object, size_t i) {
  if (!PyTuple_Check(object.ptr()) || PyTuple_Size(object.ptr()) != 4) {
    RaisePython(PyExc_TypeError,
                absl::StrCat("create_representation: subtensor ", i,
                             " must be a tuple (storage dtype, carrier, "
                             "offset, layout), not ",
                             TypeName(object)));
  }
  const py::tuple fields = py::reinterpret_borrow<py::tuple>(object);
  SubtensorCandidate candidate;
  candidate.storage_dtype = ToDTypeOrNull(fields[0]);
  if (candidate.storage_dtype == nullptr) {
    RaisePython(PyExc_TypeError, absl::StrCat("subtensor ", i,
                                              ": storage dtype is not a "
                                              "strata dtype: ",
                                              TypeName(fields[0])));
  }
  candidate.carrier = CarrierArg(fields[1]);
  if (!IsInteger(fields[2])) {
    RaisePython(
        PyExc_TypeError,
        absl::StrCat("subtensor ", i, ": offset must be an integer, not ",
                     TypeName(fields[2])));
  }
  candidate.offset =
      ToInt64(fields[2], absl::StrCat("subtensor ", i, ": offset"));
  candidate.placement =
      ToLayoutOrStatus(fields[3], absl::StrCat("subtensor ", i, ": placement"));
  return candidate;
}

}  // namespace

void BindInterop(py::module_& module) {
  module.def(
      "from_dlpack", [](py::handle object) { return ImportDLPack(object); },
      py::arg("obj"),
      "A Tensor over the memory of any DLPack producer (an object with "
      "__dlpack__, or a \"dltensor\" capsule), without a copy; the producer "
      "lives while the Tensor's carrier does.");

  module.def(
      "quantize",
      [](py::handle tensor, py::handle format, py::handle blocked_dim,
         py::handle scale_layout) {
        const Tensor& source = ToTensor(tensor, "quantize: t");
        const DType& dtype = ToDType(format, "quantize: format", true);
        const CompoundDType* compound = dtype.AsCompound();
        if (compound == nullptr) {
          RaisePython(PyExc_ValueError,
                      absl::StrCat("quantize: format ", dtype.name(),
                                   " is not a block-scaled dtype (it is ",
                                   dtype.kind_name(), ")"));
        }
        int64_t dim = kBlocksOfTheFormat;
        if (!blocked_dim.is_none()) {
          dim = ToInt64(blocked_dim, "quantize: blocked_dim");
          const int64_t rank = static_cast<int64_t>(source.shape().size());
          dim = NormalizeDim(dim, rank);
        }
        const ScaleLayout layout = ToScaleLayout(scale_layout);
        return TensorObject(ValueOrRaise(WithoutGil({&source}, [&] {
          return QuantizeBlockScaled(source, *compound, dim, layout);
        })));
      },
      py::arg("t"), py::arg("format"), py::arg("blocked_dim") = py::none(),
      py::arg("scale_layout") = "row_major",
      "Quantizes a float Tensor into a block-scaled format (a compound dtype "
      "or its name); blocked_dim is the blocked dim of formats whose caller "
      "chooses it, None for those whose blocks the format fixes.");

  module.def(
      "dequantize",
      [](py::handle tensor, py::handle dtype, py::handle out) -> py::object {
        const Tensor& source = ToTensor(tensor, "dequantize: t");
        const SimpleDType* to =
            dtype.is_none() ? nullptr
                            : &ToSimpleDType(dtype, "dequantize: dtype", true);
        if (out.is_none()) {
          const SimpleDType& into = to != nullptr ? *to : *dtypes::Float32();
          return TensorObject(ValueOrRaise(
              WithoutGil({&source}, [&] { return Dequantize(source, into); })));
        }
        const Tensor target = ToTensorOrImport(out, "dequantize: out");
        if (to != nullptr && &target.dtype() != to) {
          RaisePython(
              PyExc_TypeError,
              absl::StrCat("dequantize: out is ", target.dtype().name(),
                           " and dtype is ", to->name(), "; pass one of them"));
        }
        ThrowIfError(WithoutGil({&source, &target}, [&] {
          return DequantizeInto(target, source);
        }));
        return py::reinterpret_borrow<py::object>(out);
      },
      py::arg("t"), py::arg("dtype") = py::none(), py::arg("out") = py::none(),
      "The values of a block-scaled Tensor (values.md section 1) as a new "
      "float32, bfloat16 or float16 Tensor, or written into `out` (a "
      "one-level Tensor or any DLPack array of the same shape and a float "
      "dtype, whatever its strides), which is returned.");

  module.def(
      "requantize",
      [](py::handle tensor, py::handle format, py::handle blocked_dim,
         py::handle scale_layout) {
        const Tensor& source = ToTensor(tensor, "requantize: t");
        const DType& dtype = ToDType(format, "requantize: format", true);
        const CompoundDType* compound = dtype.AsCompound();
        if (compound == nullptr) {
          RaisePython(PyExc_ValueError,
                      absl::StrCat("requantize: format ", dtype.name(),
                                   " is not a block-scaled dtype (it is ",
                                   dtype.kind_name(), ")"));
        }
        QuantizeOptions options;
        if (!blocked_dim.is_none()) {
          options.blocked_dim =
              NormalizeDim(ToInt64(blocked_dim, "requantize: blocked_dim"),
                           static_cast<int64_t>(source.shape().size()));
        }
        options.scale_layout = ToScaleLayout(scale_layout);
        return TensorObject(ValueOrRaise(WithoutGil({&source}, [&] {
          return Requantize(source, *compound, options);
        })));
      },
      py::arg("t"), py::arg("format"), py::arg("blocked_dim") = py::none(),
      py::arg("scale_layout") = "row_major",
      "The values of a block-scaled Tensor quantized into `format` (values.md "
      "section 2) in bounded chunks; the same format with only another scale "
      "layout moves the scales and shares the codes.");

  module.def(
      "_levels",
      [](py::handle tensor) {
        const Tensor& t = ToTensor(tensor, "levels: t");
        std::vector<Tensor> levels = ValueOrRaise(Levels(t));
        py::tuple out(levels.size());
        for (size_t k = 0; k < levels.size(); ++k) {
          out[k] = TensorObject(std::move(levels[k]));
        }
        return out;
      },
      py::arg("t"));

  module.def(
      "_level_bytes",
      [](py::handle tensor) {
        return TensorObject(
            ValueOrRaise(LevelBytes(ToTensor(tensor, "bytes: self"))));
      },
      py::arg("t"));

  module.def(
      "_read_safetensors",
      [](py::handle path) {
        Safetensors file = ValueOrRaise(
            ReadSafetensors(ToPath(path, "read_safetensors: path")));
        py::dict metadata;
        for (const auto& [key, value] : file.metadata) {
          metadata[Utf8(key)] = Utf8(value);
        }
        return py::make_tuple(TensorsByName(file.tensors), metadata);
      },
      py::arg("path"));
  module.def(
      "_read_gguf",
      [](py::handle path) {
        Gguf file = ValueOrRaise(ReadGguf(ToPath(path, "read_gguf: path")));
        py::dict metadata;
        for (const auto& [key, value] : file.metadata) {
          metadata[Utf8(key)] = GgufValueObject(value);
        }
        return py::make_tuple(TensorsByName(file.tensors), metadata);
      },
      py::arg("path"));
  module.def(
      "_read_checkpoint",
      [](py::handle path) {
        Checkpoint file =
            ValueOrRaise(ReadCheckpoint(ToPath(path, "read_checkpoint: path")));
        py::dict metadata;
        for (const auto& [key, value] : file.metadata) {
          metadata[Utf8(key)] = Utf8(value);
        }
        return py::make_tuple(file.format, TensorsByName(file.tensors),
                              metadata);
      },
      py::arg("path"));
  module.def(
      "write_safetensors",
      [](py::handle path, py::handle tensors, py::handle metadata) {
        const std::string file = ToPath(path, "write_safetensors: path");
        if (!PyDict_Check(tensors.ptr())) {
          RaisePython(PyExc_TypeError,
                      "write_safetensors: tensors must be a dict of name -> "
                      "Tensor, not " +
                          TypeName(tensors));
        }
        std::vector<std::pair<std::string, Tensor>> entries;
        for (auto [name, tensor] : py::reinterpret_borrow<py::dict>(tensors)) {
          if (!PyUnicode_Check(name.ptr())) {
            RaisePython(PyExc_TypeError,
                        "write_safetensors: a tensor name must be a str, not " +
                            TypeName(name));
          }
          entries.emplace_back(
              std::string(py::str(name)),
              ToTensor(tensor, "write_safetensors: tensors[" +
                                   std::string(py::str(name)) + "]"));
        }
        std::vector<std::pair<std::string, std::string>> pairs;
        if (!metadata.is_none()) {
          if (!PyDict_Check(metadata.ptr())) {
            RaisePython(PyExc_TypeError,
                        "write_safetensors: metadata must be a dict of str -> "
                        "str, not " +
                            TypeName(metadata));
          }
          for (auto [key, value] : py::reinterpret_borrow<py::dict>(metadata)) {
            if (!PyUnicode_Check(key.ptr()) || !PyUnicode_Check(value.ptr())) {
              RaisePython(PyExc_TypeError,
                          "write_safetensors: metadata keys and values must "
                          "be str");
            }
            pairs.emplace_back(std::string(py::str(key)),
                               std::string(py::str(value)));
          }
        }
        std::vector<const Tensor*> written;
        for (const auto& entry : entries) written.push_back(&entry.second);
        ThrowIfError(WithoutGil(
            written, [&] { return WriteSafetensors(file, entries, pairs); }));
      },
      py::arg("path"), py::arg("tensors"), py::arg("metadata") = py::none(),
      "Writes Tensors (a dict name -> Tensor, in its order) as a safetensors "
      "file, each block-scaled format as its checkpoint convention.");

  module.def(
      "shard_granule",
      [](py::handle tensor, py::handle dim) {
        const Tensor& t = ToTensor(tensor, "shard_granule: t");
        return ValueOrRaise(ShardGranule(
            t, NormalizeDim(ToInt64(dim, "shard_granule: dim"),
                            static_cast<int64_t>(t.shape().size()))));
      },
      py::arg("t"), py::arg("dim"),
      "The smallest g such that every union of consecutive g-ranges of the "
      "dim is a view (NOTE [ The shard granule ]).");
  module.def(
      "plan_shards",
      [](py::handle tensor, py::handle dim, py::handle parts) {
        const Tensor& t = ToTensor(tensor, "plan_shards: t");
        const ShardPlan plan = ValueOrRaise(
            PlanShards(t,
                       NormalizeDim(ToInt64(dim, "plan_shards: dim"),
                                    static_cast<int64_t>(t.shape().size())),
                       ToInt64(parts, "plan_shards: parts")));
        py::list views;
        for (const ShardPart& part : plan.parts) {
          py::object view = TensorOrException(part.view);
          // What a rule raised that is no Exception (KeyboardInterrupt,
          // SystemExit) is not a part's answer: it stops the call.
          if (PyExceptionInstance_Check(view.ptr()) &&
              !PyObject_IsInstance(view.ptr(), PyExc_Exception)) {
            PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(view.ptr())),
                            view.ptr());
            throw py::error_already_set();
          }
          views.append(view);
        }
        return py::make_tuple(plan.granule, views, plan.pad);
      },
      py::arg("t"), py::arg("dim"), py::arg("parts"),
      "(granule, [Tensor or exception per part], pad): the parts as even as "
      "the granule allows, each the view or why it is not one, and the "
      "extent an even split would need.");

  module.def(
      "dump",
      [](py::handle tensor, bool include_data) {
        DumpOptions options;
        options.include_data = include_data;
        return ToText(ToProto(ToTensor(tensor, "dump: t"), options));
      },
      py::arg("t"), py::arg("include_data") = false,
      "The representation as protobuf text (representation-cli.md).");
  module.def(
      "replay",
      [](py::handle text) {
        if (!PyUnicode_Check(text.ptr()) && !PyBytes_Check(text.ptr())) {
          RaisePython(PyExc_TypeError,
                      "replay: the text must be a str, not " + TypeName(text));
        }
        const std::string input =
            PyBytes_Check(text.ptr())
                ? std::string(py::reinterpret_borrow<py::bytes>(text))
                : std::string(py::str(text));
        return ValueOrRaise(Replay(ValueOrRaise(ParseText(input))));
      },
      py::arg("text"), "The Tensor a dump describes, validated anew.");

  py::module_ framework = module.def_submodule(
      "_framework",
      "Framework-owned construction (not public API): validated "
      "multi-subtensor representations.");
  framework.def(
      "create_representation",
      [](py::handle logical_dtype, py::handle subtensors,
         py::handle adjacent_layouts) {
        const DType& logical =
            ToDType(logical_dtype, "create_representation: logical_dtype");
        std::vector<SubtensorCandidate> candidates;
        const py::sequence levels =
            py::reinterpret_borrow<py::sequence>(subtensors);
        for (size_t i = 0; i < levels.size(); ++i) {
          candidates.push_back(ToCandidate(levels[i], i));
        }
        std::vector<absl::StatusOr<Layout>> adjacent;
        const py::sequence maps =
            py::reinterpret_borrow<py::sequence>(adjacent_layouts);
        for (size_t i = 0; i < maps.size(); ++i) {
          adjacent.push_back(
              ToLayoutOrStatus(maps[i], absl::StrCat("adjacent level ", i)));
        }
        return MakeTensor(ValueOrRaise(Representation::Create(
            &logical, std::move(candidates), std::move(adjacent))));
      },
      py::arg("logical_dtype"), py::arg("subtensors"),
      py::arg("adjacent_layouts"));
}

}  // namespace python
}  // namespace strata
