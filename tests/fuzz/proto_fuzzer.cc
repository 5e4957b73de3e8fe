// libFuzzer target: the protobuf binary parser, then replay and a stable text
// dump.
#include <cstddef>
#include <cstdint>
#include <string>

#include "proto/codec.h"
#include "proto/representation.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::proto::RepresentationProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto tensor = strata::Replay(proto);
  if (!tensor.ok()) return 0;
  const std::string text = strata::ToText(strata::ToProto(*tensor, {true}));
  auto again = strata::Replay(*strata::ParseText(text));
  if (!again.ok() || strata::ToText(strata::ToProto(*again, {true})) != text) {
    __builtin_trap();
  }
  return 0;
}
