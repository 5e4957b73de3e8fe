// The consumer's binary: runs the mxfp8 round trip and prints the replayed
// text.
#include <iostream>

#include "mx_round_trip.h"
#include "strata.h"

int main() {
  auto result = consumer::RunMxRoundTrip();
  if (!result.ok()) {
    std::cerr << "consumer: " << strata::FormatError(result.status()) << "\n";
    return 1;
  }
  std::cout << result->replayed_text;
  const bool same = result->replayed_text == result->text;
  std::cerr << "consumer: " << result->quantized.dtype().name() << " with "
            << result->quantized.num_subtensors() << " subtensors; replay "
            << (same ? "reproduces" : "DIFFERS FROM") << " the dump\n";
  return same ? 0 : 1;
}
