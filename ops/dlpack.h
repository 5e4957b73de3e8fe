// DLPack exchange (Debian's DLPack 0.6 header).
#ifndef STRATA_OPS_DLPACK_H_
#define STRATA_OPS_DLPACK_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "dlpack/dlpack.h"

namespace strata {

// Exports a one-subtensor Tensor: device CPU, the dtype's DLPack code and bits
// (bool as kDLUInt 8, as PyTorch 1.13 exports it; DLPack 0.6 has no bool or fp8
// codes), one extent and one stride (in elements) per top-level mode, `data`
// pointing at the first element and byte_offset 0 (PyTorch 1.13's importer
// ignores byte_offset). The managed tensor holds a reference to the carrier
// until the consumer calls its deleter, exactly once; it never releases the
// carrier. Errors: OneSubtensorRequired for several levels; ValueError for a
// mode that does not coalesce to one extent and stride, sub-byte or DLPack-less
// dtypes (float8_*, float4_*), or a carrier without host data (e.g. "recorded",
// or released).
//
// A Tensor over a read-only carrier (a "mapped" one: a region of a file,
// carrier/mapped_carrier.h) exports as usual, DLPack 0.6 having no read-only
// flag: the consumer must not write through `data` (a write that does lands
// in the process's private copy of the page, never in the file: NOTE
// [ Private writable mappings ]), and a FromDLPack of that export (Strata's
// own) gives a read-only external carrier whose writes are refused as the
// mapped carrier's are.
absl::StatusOr<DLManagedTensor*> ToDLPack(const Tensor& tensor);

// Imports a CPU tensor as a one-subtensor Tensor over an ExternalCarrier
// spanning exactly the elements it reaches; the carrier's deleter calls the
// producer's deleter exactly once (when the carrier is released or its last
// owner goes). Errors (ValueError/ TypeError): null, non-CPU device,
// unsupported dtype, negative extents; on error the producer's deleter is not
// called: the caller still owns `managed`.
absl::StatusOr<Tensor> FromDLPack(DLManagedTensor* managed);
// Whether `managed` is an export ToDLPack made (whose deleter needs no lock of
// a foreign runtime, and whose import keeps the carrier's read-only flag).
bool IsStrataExport(const DLManagedTensor* managed);

}  // namespace strata

#endif  // STRATA_OPS_DLPACK_H_
