// The GIL around kernels, and what may run while it is released (NOTE
// [ Releases while a kernel runs ] in binding.h).
#include <memory>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "python/binding.h"

namespace strata {
namespace python {

bool PythonAlive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

namespace {

// Kernels using each carrier, and the carriers whose release waits for them
// (NOTE [ Releases while a kernel runs ]). Read and written with the GIL
// held only.
struct CarrierUse {
  int kernels = 0;
  bool release_deferred = false;
};
std::unordered_map<Carrier*, CarrierUse>& Uses() {
  static auto* uses = new std::unordered_map<Carrier*, CarrierUse>();
  return *uses;
}

}  // namespace

CarriersInUse::CarriersInUse(absl::Span<const Tensor* const> tensors) {
  for (const Tensor* t : tensors) {
    for (const Subtensor& s : TensorAccess::representation(*t).subtensors()) {
      auto it = Uses().find(s.carrier.get());
      if (it != Uses().end() && it->second.release_deferred) {
        // Released, waiting for the kernels that ran first: no new one
        // starts (the carrier would otherwise never be freed).
        RaisePython(PyExc_ValueError,
                    absl::StrCat(s.carrier->Describe(),
                                 " was released; it holds no data"));
      }
      carriers_.push_back(s.carrier);
    }
  }
  for (const std::shared_ptr<Carrier>& carrier : carriers_) {
    ++Uses()[carrier.get()].kernels;
  }
}

CarriersInUse::~CarriersInUse() {
  // Without the GIL only when a thread is made to exit at finalization:
  // nothing is released then.
  if (!PythonAlive() || !PyGILState_Check()) return;
  for (const std::shared_ptr<Carrier>& carrier : carriers_) {
    auto it = Uses().find(carrier.get());
    if (it == Uses().end() || --it->second.kernels > 0) continue;
    const bool release = it->second.release_deferred;
    Uses().erase(it);
    if (release) carrier->Release();
  }
}

bool DeferRelease(Carrier* carrier) {
  auto it = Uses().find(carrier);
  if (it == Uses().end()) return false;
  it->second.release_deferred = true;
  return true;
}

}  // namespace python
}  // namespace strata
