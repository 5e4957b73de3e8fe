// The extension module strata._strata; strata/__init__.py is its public face.
#include "python/binding.h"

PYBIND11_MODULE(_strata, module) {
  namespace python = strata::python;
  module.doc() =
      "Strata's C++ library: layouts, dtypes, carriers, Tensors, views, ops, "
      "DLPack, quantization, checkpoints, shard planning, dump and replay.";
  python::RegisterErrors(module);
  python::BindLayout(module);
  python::BindDTypes(module);
  python::BindCarriers(module);
  python::BindTensor(module);
  python::BindInterop(module);
  python::BindCheckpoints(module);
}
