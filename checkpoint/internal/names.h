// What the checkpoint readers and writers share: the safetensors dtype names
// and the text of names and shapes in messages.
#ifndef STRATA_CHECKPOINT_INTERNAL_NAMES_H_
#define STRATA_CHECKPOINT_INTERNAL_NAMES_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "dtype/dtype.h"

namespace strata {
namespace checkpoint_internal {

// The key of a safetensors header's metadata object.
inline constexpr absl::string_view kMetadataKey = "__metadata__";

// The Strata dtype of a safetensors dtype name (the table of
// checkpoint/safetensors.h), or nullptr.
const SimpleDType* FromSafetensorsName(absl::string_view name);
// The safetensors name of a dtype, or empty.
absl::string_view ToSafetensorsName(const DType& dtype);

// "\"NAME\"", cut after 80 characters ("...").
std::string Quoted(absl::string_view s);
// "(2,3,64)".
std::string ShapeText(absl::Span<const int64_t> shape);

}  // namespace checkpoint_internal
}  // namespace strata

#endif  // STRATA_CHECKPOINT_INTERNAL_NAMES_H_
