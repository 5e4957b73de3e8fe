// libFuzzer target: the protobuf binary parser, then replay and a stable text
// dump.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/representation.h"
#include "core/tensor_access.h"
#include "proto/codec.h"
#include "proto/representation.pb.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::proto::RepresentationProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto tensor = strata::Replay(proto);
  if (!tensor.ok()) return 0;
  // Values travel in the dump only for small carriers (a valid text may name a
  // carrier of gigabytes that is never touched).
  int64_t values = 0;
  for (const auto& s :
       strata::TensorAccess::representation(*tensor).subtensors())
    values += s.carrier->size();
  const bool with_data = values <= (int64_t{1} << 20);
  const std::string text =
      strata::ToText(strata::ToProto(*tensor, {with_data}));
  auto again = strata::Replay(*strata::ParseText(text));
  FUZZ_CHECK_STATUS(again.ok(), again.status());
  FUZZ_CHECK(strata::ToText(strata::ToProto(*again, {with_data})) == text);
  return 0;
}
