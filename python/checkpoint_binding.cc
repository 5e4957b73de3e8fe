// strata.convert and strata.write_checkpoint (python.md; checkpoints.md
// section 2).
#include <Python.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_writer.h"
#include "checkpoint/tensor_to_write.h"
#include "convert/convert.h"
#include "distributed/rank_shards.h"
#include "ops/quantize.h"
#include "python/binding.h"
#include "util/errors.h"

namespace strata {
namespace python {
namespace {

// Runs `op` without the GIL; every chunk it reports, the GIL is taken back
// for a moment to run Python's signal handlers, so that Ctrl-C stops it (its
// temporary files removed) and raises KeyboardInterrupt.
template <typename F>
auto Interruptible(WriteControl& control, F op) -> decltype(op()) {
  std::atomic<bool> cancel{false};
  bool python_error = false;
  control.cancel = &cancel;
  control.progress = [&](const WriteProgress&) {
    PyGILState_STATE gil = PyGILState_Ensure();
    if (PyErr_CheckSignals() != 0) {
      python_error = true;
      cancel.store(true, std::memory_order_relaxed);
    }
    PyGILState_Release(gil);
  };
  auto result = WithoutGil({}, op);
  if (python_error) throw py::error_already_set();
  return result;
}

int64_t ShardSize(py::handle size, const char* who) {
  if (PyLong_Check(size.ptr())) {
    const int64_t bytes = size.cast<int64_t>();
    if (bytes < 1) {
      RaisePython(PyExc_ValueError,
                  std::string(who) + ": max_shard_size must be >= 1 byte");
    }
    return bytes;
  }
  if (PyUnicode_Check(size.ptr())) {
    return ValueOrRaise(ParseShardSize(std::string(py::str(size))));
  }
  RaisePython(PyExc_TypeError, std::string(who) +
                                   ": max_shard_size must be an int or a "
                                   "str such as \"5GB\", not " +
                                   TypeName(size));
}

std::vector<ShardRule> RulesArg(py::handle rules) {
  std::vector<ShardRule> out;
  if (py::isinstance<py::str>(rules)) {
    return ValueOrRaise(ParseShardRules(std::string(py::str(rules))));
  }
  for (py::handle rule : rules) {
    py::tuple pair = py::reinterpret_borrow<py::object>(rule);
    if (!py::isinstance<py::tuple>(rule) || pair.size() != 2 ||
        !py::isinstance<py::str>(pair[0]) || !PyLong_Check(pair[1].ptr())) {
      RaisePython(PyExc_TypeError,
                  "load_shard: rules must be (regex, dim) pairs, not " +
                      TypeName(rule));
    }
    out.push_back({std::string(py::str(pair[0])), pair[1].cast<int64_t>()});
  }
  return out;
}

py::list PlanObject(const CheckpointShardPlan& plan) {
  py::list out;
  for (const TensorShardPlan& t : plan.tensors) {
    py::dict d;
    d["name"] = Utf8(t.name);
    d["kind"] = t.kind == TensorShardPlan::Kind::kSplit        ? "split"
                : t.kind == TensorShardPlan::Kind::kReplicated ? "replicated"
                                                               : "refused";
    d["dim"] = t.dim;
    d["granule"] = t.granule;
    d["pad"] = t.pad;
    d["ranges"] = t.ranges;
    d["error"] = t.kind == TensorShardPlan::Kind::kRefused
                     ? ExceptionObject(RefusalError(t))
                     : py::object(py::none());
    out.append(d);
  }
  return out;
}

}  // namespace

void BindCheckpoints(py::module_& module) {
  module.def(
      "_plan_shards",
      [](py::handle path, py::handle rules, int64_t parts) {
        const std::vector<ShardRule> parsed = RulesArg(rules);
        Checkpoint checkpoint =
            ValueOrRaise(ReadCheckpoint(ToPath(path, "plan_shards: path")));
        return PlanObject(
            ValueOrRaise(PlanCheckpointShards(checkpoint, parsed, parts)));
      },
      py::arg("path"), py::arg("rules"), py::arg("parts"));
  module.def(
      "_load_shard",
      [](py::handle path, py::handle rules, int64_t rank, int64_t parts) {
        const std::vector<ShardRule> parsed = RulesArg(rules);
        Checkpoint checkpoint =
            ValueOrRaise(ReadCheckpoint(ToPath(path, "load_shard: path")));
        const CheckpointShardPlan plan =
            ValueOrRaise(PlanCheckpointShards(checkpoint, parsed, parts));
        TensorMap shard = ValueOrRaise(LoadRankShard(checkpoint, plan, rank));
        py::dict tensors;
        for (const auto& [name, tensor] : shard.tensors) {
          tensors[Utf8(name)] = TensorObject(tensor);
        }
        return py::make_tuple(tensors, shard.mapped_bytes, shard.whole_bytes,
                              PlanObject(plan));
      },
      py::arg("path"), py::arg("rules"), py::arg("rank"), py::arg("parts"));
  module.def(
      "_convert",
      [](py::handle src, py::handle dst, const std::string& to,
         py::handle scale_layout, const std::string& only,
         const std::string& skip, py::handle max_shard_size, bool overwrite) {
        ConvertOptions options;
        options.to = to;
        if (!scale_layout.is_none()) {
          const std::string name = py::str(scale_layout);
          if (name == ScaleLayoutName(ScaleLayout::kRowMajor)) {
            options.scale_layout = ScaleLayout::kRowMajor;
          } else if (name == ScaleLayoutName(ScaleLayout::kSwizzled128x4)) {
            options.scale_layout = ScaleLayout::kSwizzled128x4;
          } else {
            RaisePython(PyExc_ValueError,
                        "convert: scale_layout \"" + name +
                            "\" is not row_major or swizzled_128x4");
          }
        }
        options.only = only;
        options.skip = skip;
        options.max_shard_size = ShardSize(max_shard_size, "convert");
        options.overwrite = overwrite;
        const std::string from = ToPath(src, "convert: src");
        const std::string into = ToPath(dst, "convert: dst");
        ConvertReport report = ValueOrRaise(Interruptible(options.control, [&] {
          return ConvertCheckpoint(from, into, options);
        }));
        py::dict refused;
        for (const auto& [name, status] : report.refused) {
          refused[Utf8(name)] = ExceptionObject(status);
        }
        py::dict out;
        out["converted"] = report.converted;
        out["copied"] = report.copied;
        out["refused"] = refused;
        out["files"] = report.files;
        out["other_files"] = report.other_files;
        out["input_bytes"] = report.input_bytes;
        out["output_bytes"] = report.output_bytes;
        return out;
      },
      py::arg("src"), py::arg("dst"), py::arg("to"), py::arg("scale_layout"),
      py::arg("only"), py::arg("skip"), py::arg("max_shard_size"),
      py::arg("overwrite"));
  module.def(
      "_write_checkpoint",
      [](py::handle dir, py::handle tensors, py::handle max_shard_size,
         bool overwrite) {
        const std::string path = ToPath(dir, "write_checkpoint: dir");
        if (!PyDict_Check(tensors.ptr())) {
          RaisePython(PyExc_TypeError,
                      "write_checkpoint: tensors must be a dict of name -> "
                      "Tensor, not " +
                          TypeName(tensors));
        }
        std::vector<Tensor> held;
        std::vector<TensorToWrite> writes;
        for (auto [name, tensor] : py::reinterpret_borrow<py::dict>(tensors)) {
          if (!PyUnicode_Check(name.ptr())) {
            RaisePython(PyExc_TypeError,
                        "write_checkpoint: a tensor name must be a str, not " +
                            TypeName(name));
          }
          const std::string key = py::str(name);
          held.push_back(
              ToTensor(tensor, "write_checkpoint: tensors[" + key + "]"));
          writes.push_back(ToWrite(key, held.back()));
        }
        WriteCheckpointOptions options;
        options.max_shard_size = ShardSize(max_shard_size, "write_checkpoint");
        options.overwrite = overwrite;
        std::vector<const Tensor*> in_use;
        for (const Tensor& t : held) in_use.push_back(&t);
        WrittenCheckpoint written = ValueOrRaise(WithoutGil(in_use, [&] {
          return WriteCheckpoint(path, std::move(writes), options);
        }));
        return written.files;
      },
      py::arg("dir"), py::arg("tensors"), py::arg("max_shard_size"),
      py::arg("overwrite"));
}

}  // namespace python
}  // namespace strata
