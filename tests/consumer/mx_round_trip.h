// What a repository that uses Strata writes: "strata.h" and @strata//:strata
// only.
//
// RunMxRoundTrip() builds a (64,4) float32 Tensor, takes a view of it (permute
// to (4,64)), runs an op on the view (Add(view, view)), quantizes the sum to
// mxfp8_e4m3 in blocks of 32 along mode 1, dumps the two-level result as text
// (carrier data included) and replays that text.
#ifndef STRATA_CONSUMER_MX_ROUND_TRIP_H_
#define STRATA_CONSUMER_MX_ROUND_TRIP_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "strata.h"

namespace consumer {

inline constexpr int64_t kRows = 64;  // of the source; the view has kCols rows
inline constexpr int64_t kCols = 4;

// The source value at (row, col): (1 + (row % 7) / 8) * 2^col. Three mantissa
// bits and a block maximum of 1.75 * 2^k, so the mxfp8 quantization of twice it
// is exact.
double SourceValue(int64_t row, int64_t col);

struct MxRoundTrip {
  strata::Tensor source;      // (64,4) float32, SourceValue
  strata::Tensor view;        // Permute(source, {1, 0}): (4,64), same carrier
  strata::Tensor doubled;     // Add(view, view): (4,64), a fresh carrier
  strata::Tensor quantized;   // QuantizeBlockScaled(doubled, mxfp8_e4m3, 1)
  std::string text;           // ToText(ToProto(quantized)), with carrier data
  strata::Tensor replayed;    // Replay(ParseText(text))
  std::string replayed_text;  // ToText(ToProto(replayed)), with carrier data
};

absl::StatusOr<MxRoundTrip> RunMxRoundTrip();

}  // namespace consumer

#endif  // STRATA_CONSUMER_MX_ROUND_TRIP_H_
