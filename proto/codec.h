// Dump a representation to protobuf (and its text format) and replay it.
//
// Replay rebuilds the carriers through the carrier-class registry and calls the
// framework-owned factory, so a replayed representation passes exactly the
// validation a live one does, in the same order, with the same error kinds.
// Faults of the text itself map onto the spec's classes (representation-cli.md,
// "Replay"):
//   unknown dtype name (logical, storage or carrier)       ValueError
//   unknown carrier class, or an unknown carrier id        TypeError (not a
//   Carrier) duplicate carrier id                                   ValueError
//   placement/adjacent layout that is not a layout         TypeError (not a
//   Layout) data whose length is not size x storage bits           ValueError
//   host/external carrier of a non-simple dtype or a       built as "recorded",
//   so negative size                                          validation
//   reports it
#ifndef STRATA_PROTO_CODEC_H_
#define STRATA_PROTO_CODEC_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "proto/representation.pb.h"

namespace strata {

class Representation;  // core/representation.h, for Strata's own packages.

struct DumpOptions {
  // Include each carrier's values as packed little-endian bytes.
  bool include_data = false;
};

// Carriers are listed once each in first-use order with ids "c0", "c1", ...;
// layouts in canonical notation. Deterministic: dump -> replay -> dump gives
// identical text.
proto::RepresentationProto ToProto(const Representation& representation,
                                   const DumpOptions& options = {});
proto::RepresentationProto ToProto(const Tensor& tensor,
                                   const DumpOptions& options = {});

struct Replayed {
  Tensor tensor;
  // The id of each carrier of the text, in first-use order (snapshot order).
  std::vector<std::pair<const Carrier*, std::string>> carrier_ids;
};

// Errors: as the table above, then exactly those of Representation::Create.
absl::StatusOr<Replayed> ReplayWithIds(const proto::RepresentationProto& proto);
absl::StatusOr<Tensor> Replay(const proto::RepresentationProto& proto);

// Protobuf text format.
std::string ToText(const proto::RepresentationProto& proto);
// Errors (TypeError): the text is not a RepresentationProto; the message names
// the line and column of the first fault.
absl::StatusOr<proto::RepresentationProto> ParseText(absl::string_view text);

}  // namespace strata

#endif  // STRATA_PROTO_CODEC_H_
