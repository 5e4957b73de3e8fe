// Strata's public API in one header: dtypes (and the
// RepresentationValidationContext protocol of representation rules), carriers,
// layouts and their algebra, Tensor, the views, the operations (quantization,
// DLPack and autograd included), the text codec, safetensors and GGUF
// checkpoints in and out (whole directories and split sets, WriteCheckpoint,
// WriteGguf) and converted (ConvertCheckpoint), the block-scaled family and
// shard planning.
// Multi-subtensor construction (core/representation.h) is not part of it.
#ifndef STRATA_STRATA_H_
#define STRATA_STRATA_H_

#include "carrier/carrier.h"               // IWYU pragma: export
#include "carrier/carrier_registry.h"      // IWYU pragma: export
#include "carrier/mapped_carrier.h"        // IWYU pragma: export
#include "checkpoint/checkpoint.h"         // IWYU pragma: export
#include "checkpoint/checkpoint_writer.h"  // IWYU pragma: export
#include "checkpoint/gguf.h"               // IWYU pragma: export
#include "checkpoint/safetensors.h"        // IWYU pragma: export
#include "checkpoint/tensor_to_write.h"    // IWYU pragma: export
#include "convert/convert.h"               // IWYU pragma: export
#include "core/mutation_snapshot.h"        // IWYU pragma: export
#include "core/tensor.h"                   // IWYU pragma: export
#include "dtype/block_scale_rule.h"        // IWYU pragma: export
#include "dtype/dtype.h"                   // IWYU pragma: export
#include "dtype/float_formats.h"           // IWYU pragma: export
#include "dtype/packing.h"                 // IWYU pragma: export
#include "dtype/registry.h"                // IWYU pragma: export
#include "dtype/representation_rule.h"     // IWYU pragma: export
#include "layout/algebra.h"                // IWYU pragma: export
#include "layout/int_tuple.h"              // IWYU pragma: export
#include "layout/layout.h"                 // IWYU pragma: export
#include "ops/autograd.h"                  // IWYU pragma: export
#include "ops/dlpack.h"                    // IWYU pragma: export
#include "ops/ops.h"                       // IWYU pragma: export
#include "ops/quantize.h"                  // IWYU pragma: export
#include "proto/codec.h"                   // IWYU pragma: export
#include "util/errors.h"                   // IWYU pragma: export
#include "util/status_macros.h"            // IWYU pragma: export
#include "views/shard_plan.h"              // IWYU pragma: export
#include "views/views.h"                   // IWYU pragma: export

#endif  // STRATA_STRATA_H_
