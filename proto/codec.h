// Dump a representation to protobuf (and its text format) and replay it.
//
// Replay rebuilds the carriers through the carrier-class registry and calls the
// framework-owned factory, so a replayed representation passes exactly the
// validation a live one does, in the same order, with the same error kinds.
// Faults of the text itself map onto the spec's classes (representation-cli.md,
// "Replay"):
//
// clang-format off
//   in the text                                    error
//   unknown dtype name (logical, storage, carrier) ValueError
//   unknown carrier class, unknown carrier id      TypeError (not a Carrier)
//   duplicate carrier id                           ValueError
//   placement/adjacent layout that is no layout    TypeError (not a Layout)
//   data whose length is not size x storage bits   ValueError
//   host/external carrier of a non-simple dtype    built as "recorded", so
//     or of a negative size                        validation reports it
//   mapped carrier with a file holding data        ValueError
//   mapped carrier with no file and no data, of    ValueError (an anonymous
//     more than 0 bytes                            mapping carries its bytes)
//   file/file_offset on a carrier not "mapped"     ValueError
//   mapped carrier of a non-simple dtype or a      built as "recorded"
//     negative size
//   mapped carrier whose file is missing,          ValueError naming the
//     unreadable, not a regular file, or shorter   carrier and the file
//     than file_offset + its bytes
//   host/external carrier that cannot be           ResourceExhaustedError
//     allocated: its bytes overflow int64, exceed  naming the carrier and
//     HostCarrier::kMaxHostBytes (2^46), or the    the bytes
//     kernel refuses them
// clang-format on
//
// Bounds (what a text may cost):
//   - ParseText refuses a text over kMaxTextBytes (64 MiB) before parsing it.
//   - Replay checks the numbers of subtensors and adjacent layouts against the
//     logical dtype's storage schema before it parses any layout or builds any
//     carrier (the error is Representation::Create's schema-count ValueError),
//     so it parses at most 2n-1 layouts for a schema of n entries.
//   - Every carrier of the text is checked (id, dtype, class, data length) in
//     one linear pass, but only the carriers that subtensors name are built:
//     at most n allocations, each bounded as above, whatever the number of
//     carriers listed. Unused carriers are allowed and never allocated.
//   - A carrier without data is zero-filled (large ones are mapped lazily and
//     never touched by replay), so replay writes no more carrier memory than
//     the text's data.
#ifndef STRATA_PROTO_CODEC_H_
#define STRATA_PROTO_CODEC_H_

#include <cstdint>
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

// The id ToProto gives the carrier first used at position `index` of the
// first-use order (snapshot order): "c0", "c1", ...
std::string CarrierId(int64_t index);

// Carriers are listed once each in first-use order with ids CarrierId(i);
// layouts in canonical notation. A mapped carrier (carrier/mapped_carrier.h)
// is dumped with its file (as it was given) and file_offset and no data; with
// include_data it is dumped as a "host" carrier holding a copy of its bytes
// (NOTE [ Dumps of mapped carriers ] in codec.cc). A mapped carrier over an
// anonymous mapping has no file: it is dumped as "mapped" with its bytes as
// data, and replayed into a new anonymous mapping (NOTE [ Anonymous mapped
// carriers ] in carrier/mapped_carrier.h). Deterministic: dump ->
// replay -> dump gives identical text.
proto::RepresentationProto ToProto(const Representation& representation,
                                   const DumpOptions& options = {});
proto::RepresentationProto ToProto(const Tensor& tensor,
                                   const DumpOptions& options = {});

struct Replayed {
  Tensor tensor;
  // The id of each carrier of the text, in first-use order (snapshot order).
  std::vector<std::pair<const Carrier*, std::string>> carrier_ids;
};

// Errors, in this order:
//   1. ValueError: unknown logical dtype; a dtype without a storage schema; a
//      number of subtensors or adjacent layouts other than the schema needs
//      (before any layout is parsed or carrier built).
//   2. Per carrier, in text order: ValueError for a duplicate id, an unknown
//      dtype, or data that a carrier cannot hold or whose length is not size x
//      bits; ResourceExhaustedError for a host/external carrier whose bytes
//      overflow or exceed HostCarrier::kMaxHostBytes.
//      A "mapped" carrier is built (its file mapped again; a relative path
//      resolves against the working directory) with the subtensor that first
//      names it: ValueError naming the carrier and the file when the file is
//      missing, unreadable or shorter than file_offset + its bytes. One with
//      no file is an anonymous mapping holding its data.
//   3. Per subtensor, in level order: ValueError for an unknown storage dtype;
//      ResourceExhaustedError when its carrier cannot be allocated (naming the
//      carrier and the bytes).
//   4. Exactly those of Representation::Create (not a Carrier, not a Layout,
//      bounds, the dtype's rules).
absl::StatusOr<Replayed> ReplayWithIds(const proto::RepresentationProto& proto);
absl::StatusOr<Tensor> Replay(const proto::RepresentationProto& proto);

// Protobuf text format.
std::string ToText(const proto::RepresentationProto& proto);

// The largest text ParseText accepts (and the strata tool reads): 64 MiB. A
// dump of a Tensor whose data fits in about 16 MiB (each byte escapes to at
// most four characters) is always below it.
inline constexpr int64_t kMaxTextBytes = int64_t{64} << 20;

// Errors:
//   ResourceExhaustedError: the text holds more than kMaxTextBytes bytes
//     (refused before parsing; the message names both sizes).
//   TypeError: the text is not a RepresentationProto; the message names the
//     line and column of the first fault. Nesting is bounded (recursion limit
//     16), so no text exhausts the stack.
absl::StatusOr<proto::RepresentationProto> ParseText(absl::string_view text);

}  // namespace strata

#endif  // STRATA_PROTO_CODEC_H_
