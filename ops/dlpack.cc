#include "ops/dlpack.h"

#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "carrier/carrier.h"
#include "dtype/registry.h"
#include "dtype/scalar_type.h"
#include "layout/algebra.h"
#include "ops/internal/checks.h"
#include "ops/internal/require.h"
#include "util/checked_math.h"
#include "util/errors.h"
#include "util/internal/block_cache.h"
#include "util/status_macros.h"

namespace strata {

using ops_internal::EmptyTensors;
using ops_internal::RequireHostData;
using ops_internal::RequireKernelTensor;
namespace {

struct ExportContext {
  std::shared_ptr<Carrier>
      carrier;  // Keeps the storage alive; never released here.
  // Inline up to rank 8: the export is one block (ExportAllocator below).
  absl::InlinedVector<int64_t, 8> shape;
  absl::InlinedVector<int64_t, 8> strides;
  DLManagedTensor managed;
};

// The export's one block, recycled as the representations' are (NOTE
// [ Recycled representation blocks ] in core/representation.cc): an export
// and its deleter in a loop allocate nothing. The deleter may run on another
// thread, which the cache allows.
using ExportAllocator = util_internal::CachedBlockAllocator<ExportContext>;

// Destroys a context and returns its block: the consumer's deleter, and the
// owner of a context until the export hands it over.
struct ExportContextDeleter {
  void operator()(ExportContext* context) const {
    context->~ExportContext();
    ExportAllocator().deallocate(context, 1);
  }
};

// The export pins the storage until the consumer's deleter runs, so a
// Release() meanwhile cannot free what the consumer still addresses
// (NOTE [ Pinned storage ] in carrier/carrier.h).
void DeleteExport(DLManagedTensor* managed) {
  auto* context = static_cast<ExportContext*>(managed->manager_ctx);
  context->carrier->UnpinStorage();
  ExportContextDeleter()(context);
}

// The DLPack 0.6 code of each built-in dtype (NOTE [ One dtype switch ]).
absl::StatusOr<DLDataType> DataTypeOf(const SimpleDType& d) {
  STRATA_ASSIGN_OR_RETURN(const ScalarType type,
                          RequireScalarType(d, "ToDLPack"));
  DLDataType t;
  t.lanes = 1;
  t.bits = static_cast<uint8_t>(d.bits());
  switch (type) {
    case ScalarType::kBool:  // As PyTorch 1.13 exports bool.
    case ScalarType::kUInt8:
      t.code = kDLUInt;
      return t;
    case ScalarType::kInt8:
    case ScalarType::kInt16:
    case ScalarType::kInt32:
    case ScalarType::kInt64:
      t.code = kDLInt;
      return t;
    case ScalarType::kBFloat16:
      t.code = kDLBfloat;
      return t;
    case ScalarType::kFloat16:
    case ScalarType::kFloat32:
    case ScalarType::kFloat64:
      t.code = kDLFloat;
      return t;
    case ScalarType::kFloat4E2M1FN:
    case ScalarType::kUInt4:
      return ValueErrorCat("ToDLPack: ", d.name(), " is sub-byte storage (",
                           d.bits(),
                           " bits per value); DLPack addresses whole bytes");
    case ScalarType::kFloat8E4M3FN:
    case ScalarType::kFloat8E5M2:
    case ScalarType::kFloat8E8M0FNU:
      break;
  }
  return ValueErrorCat("ToDLPack: ", d.name(), " has no DLPack 0.6 type code");
}

absl::StatusOr<const SimpleDType*> DTypeOfCode(DLDataType t) {
  if (t.lanes != 1) return TypeErrorCat("FromDLPack: ", t.lanes, " lanes");
  if (t.code == kDLFloat && t.bits == 16) return dtypes::Float16();
  if (t.code == kDLFloat && t.bits == 32) return dtypes::Float32();
  if (t.code == kDLFloat && t.bits == 64) return dtypes::Float64();
  if (t.code == kDLBfloat && t.bits == 16) return dtypes::BFloat16();
  if (t.code == kDLInt && t.bits == 8) return dtypes::Int8();
  if (t.code == kDLInt && t.bits == 16) return dtypes::Int16();
  if (t.code == kDLInt && t.bits == 32) return dtypes::Int32();
  if (t.code == kDLInt && t.bits == 64) return dtypes::Int64();
  if (t.code == kDLUInt && t.bits == 8) return dtypes::UInt8();
  return TypeErrorCat("FromDLPack: unsupported DLPack type code ", t.code,
                      " with ", t.bits, " bits");
}

}  // namespace

absl::StatusOr<DLManagedTensor*> ToDLPack(const Tensor& tensor) {
  if (tensor.num_subtensors() > 1) {
    // The spec refuses the export; values.md says where the values are.
    return OneSubtensorRequiredError(absl::StrCat(
        "ToDLPack requires a one-subtensor Tensor; got ",
        tensor.num_subtensors(), " subtensors (logical dtype ",
        tensor.dtype().name(),
        "): export a block-scaled Tensor's values with dequantize "
        "(ops/dequantize.h Dequantize) or its levels one by one (levels)"));
  }
  STRATA_RETURN_IF_ERROR(RequireKernelTensor(tensor, "ToDLPack"));
  const SimpleDType& d = *tensor.dtype().AsSimple();
  STRATA_ASSIGN_OR_RETURN(DLDataType type, DataTypeOf(d));
  STRATA_RETURN_IF_ERROR(
      RequireHostData(tensor, "ToDLPack", EmptyTensors::kNeedHostData));
  std::unique_ptr<ExportContext, ExportContextDeleter> context(
      new (ExportAllocator().allocate(1)) ExportContext());
  const Layout& layout = tensor.layout();
  const IntTuple::Elements elements = layout.shape().TopElements();
  for (int i = 0; i < elements.size(); ++i) {
    int64_t extent, stride;
    if (!ModeAsSingleStride(layout, elements, i, &extent, &stride)) {
      const Layout mode = layout.mode(i);
      return ValueErrorCat("ToDLPack: dim ", i, " (layout mode ",
                           mode.ToString(), ") of ", layout.ToString(),
                           " does not coalesce to one extent and one stride");
    }
    context->shape.push_back(extent);
    context->strides.push_back(stride);
  }
  context->carrier = tensor.carrier();
  DLTensor& t = context->managed.dl_tensor;
  // A read-only (mapped) carrier exports its address too: the consumer must
  // not write through it (NOTE [ Read-only carriers ] in carrier/carrier.h).
  t.data = static_cast<uint8_t*>(const_cast<void*>(tensor.carrier()->data())) +
           tensor.offset() * (d.bits() / 8);
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int32_t>(context->shape.size());
  t.dtype = type;
  t.shape = context->shape.data();
  t.strides = context->strides.data();
  t.byte_offset = 0;
  context->managed.manager_ctx = context.get();
  context->managed.deleter = DeleteExport;
  context->carrier->PinStorage();
  return &context.release()->managed;
}

absl::StatusOr<Tensor> FromDLPack(DLManagedTensor* managed) {
  if (managed == nullptr) return ValueError("FromDLPack: null managed tensor");
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type != kDLCPU) {
    return ValueErrorCat("FromDLPack: device type ", t.device.device_type,
                         " is not CPU");
  }
  STRATA_ASSIGN_OR_RETURN(const SimpleDType* dtype, DTypeOfCode(t.dtype));
  if (t.ndim < 0 || (t.ndim > 0 && t.shape == nullptr)) {
    return ValueError("FromDLPack: missing shape");
  }
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  std::vector<int64_t> strides(t.ndim);
  int64_t running = 1;
  for (int k = t.ndim; k-- > 0;) {  // Compact row-major when strides are null.
    if (shape[k] < 0) {
      return ValueErrorCat("FromDLPack: negative extent ", shape[k],
                           " in dimension ", k);
    }
    strides[k] = t.strides != nullptr ? t.strides[k] : running;
    if (!CheckedMul(running, shape[k] > 0 ? shape[k] : 1, &running)) {
      return ValueErrorCat(
          "FromDLPack: the shape's element count overflows "
          "64 bits at dimension ",
          k);
    }
  }
  STRATA_ASSIGN_OR_RETURN(
      Layout layout, t.ndim == 1 ? Layout::Create(shape[0], strides[0])
                                 : Layout::Create(IntTuple::Flat(shape),
                                                  IntTuple::Flat(strides)));
  const int64_t element = dtype->bits() / 8;
  // The carrier spans exactly what the layout reaches, from its smallest index.
  const int64_t first = layout.min_index();
  const int64_t span = layout.size() == 0 ? 0 : layout.max_index() - first + 1;
  uint8_t* origin = static_cast<uint8_t*>(t.data) + t.byte_offset;
  void* base = origin + first * element;
  // Strata's own export of a read-only carrier comes back read-only.
  const bool read_only =
      managed->deleter == DeleteExport &&
      static_cast<ExportContext*>(managed->manager_ctx)->carrier->read_only();
  // The producer's deleter is armed only once the Tensor exists: on any error
  // the carrier goes without running it, and the caller still owns `managed`.
  auto armed = std::make_shared<bool>(false);
  STRATA_ASSIGN_OR_RETURN(auto carrier,
                          ExternalCarrier::Create(
                              *dtype, span, span > 0 ? base : origin,
                              [managed, armed] {
                                if (*armed && managed->deleter != nullptr)
                                  managed->deleter(managed);
                              },
                              /*version=*/0, read_only));
  absl::StatusOr<Tensor> tensor =
      Tensor::Create(std::move(carrier), -first, layout);
  if (tensor.ok()) *armed = true;
  return tensor;
}

bool IsStrataExport(const DLManagedTensor* managed) {
  return managed != nullptr && managed->deleter == DeleteExport;
}

}  // namespace strata
