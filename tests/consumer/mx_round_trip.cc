#include "mx_round_trip.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "strata.h"

namespace consumer {

double SourceValue(int64_t row, int64_t col) {
  return std::ldexp(1.0 + static_cast<double>(row % 7) / 8.0,
                    static_cast<int>(col));
}

absl::StatusOr<MxRoundTrip> RunMxRoundTrip() {
  STRATA_ASSIGN_OR_RETURN(
      strata::Tensor source,
      strata::Zeros(*strata::dtypes::Float32(), {kRows, kCols}));
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) {
      STRATA_RETURN_IF_ERROR(
          strata::SetItem(source, strata::IntTuple::Tuple({r, c}),
                          strata::Scalar::Float(SourceValue(r, c))));
    }
  }
  STRATA_ASSIGN_OR_RETURN(strata::Tensor view, strata::Permute(source, {1, 0}));
  STRATA_ASSIGN_OR_RETURN(strata::Tensor doubled, strata::Add(view, view));
  STRATA_ASSIGN_OR_RETURN(
      strata::Tensor quantized,
      strata::QuantizeBlockScaled(doubled, *strata::dtypes::MXFP8E4M3(),
                                  /*blocked_mode=*/1));

  strata::DumpOptions with_data;
  with_data.include_data = true;
  std::string text = strata::ToText(strata::ToProto(quantized, with_data));
  STRATA_ASSIGN_OR_RETURN(strata::proto::RepresentationProto parsed,
                          strata::ParseText(text));
  STRATA_ASSIGN_OR_RETURN(strata::Tensor replayed, strata::Replay(parsed));
  std::string replayed_text =
      strata::ToText(strata::ToProto(replayed, with_data));
  return MxRoundTrip{std::move(source),       std::move(view),
                     std::move(doubled),      std::move(quantized),
                     std::move(text),         std::move(replayed),
                     std::move(replayed_text)};
}

}  // namespace consumer
