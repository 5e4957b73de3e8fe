// libFuzzer target: the index of a sharded directory (checkpoints.md section
// 1; NOTE [ Sharded directories ]). The input is written as the directory's
// model.safetensors.index.json beside two fixed shards (a DeepSeek weight
// whose weight_scale_inv sits in the other shard, a group within a shard,
// plain tensors); ReadCheckpoint must answer with an error or with Tensors
// whose every level lies in its mapped file, and never crash, hang or grow
// without bound.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "carrier/carrier.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/checkpoint.h"
#include "checkpoint/safetensors.h"
#include "core/representation.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace strata;

Tensor Filled(const SimpleDType& dtype, const std::vector<int64_t>& shape,
              uint8_t byte) {
  int64_t count = 1;
  for (int64_t e : shape) count *= e;
  auto carrier = *HostCarrier::Create(dtype, count);
  std::memset(carrier->mutable_data(), byte, *StorageBytes(dtype, count));
  return *Tensor::Create(carrier, 0, *Layout::RowMajor(IntTuple::Flat(shape)));
}

// The directory, made once: two shards, the index written per input.
const std::string& Directory() {
  static const std::string* dir = [] {
    const char* base = getenv("TEST_TMPDIR");
    std::string pattern =
        std::string(base != nullptr ? base : "/tmp") + "/directory_fuzz_XXXXXX";
    FUZZ_CHECK(mkdtemp(pattern.data()) != nullptr);
    const std::string d = pattern;
    FUZZ_CHECK(WriteSafetensors(d + "/model-00001-of-00002.safetensors",
                                {{"a.weight", Filled(*dtypes::Float8E4M3FN(),
                                                     {130, 100}, 0x38)},
                                 {"e", Filled(*dtypes::Float32(), {2, 3}, 0)}})
                   .ok());
    FUZZ_CHECK(
        WriteSafetensors(
            d + "/model-00002-of-00002.safetensors",
            {{"a.weight_scale_inv", Filled(*dtypes::Float32(), {2, 1}, 0)},
             {"b.weight", Filled(*dtypes::Float8E4M3FN(), {4, 64}, 0x30)},
             {"b.weight_scale", Filled(*dtypes::Float32(), {}, 0)}})
            .ok());
    return new std::string(d);
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = Directory();
  {
    std::ofstream index(dir + "/model.safetensors.index.json",
                        std::ios::binary | std::ios::trunc);
    index.write(reinterpret_cast<const char*>(data), size);
  }
  auto read = ReadCheckpoint(dir);
  if (!read.ok()) return 0;
  for (const CheckpointTensor& t : read->tensors) {
    if (!t.tensor.ok()) continue;
    FUZZ_CHECK(!t.file.empty());
    // Every level's carrier lies in its file: read its first and last byte.
    const Representation& rep = TensorAccess::representation(*t.tensor);
    volatile uint8_t sink = 0;
    for (int k = 0; k < rep.num_levels(); ++k) {
      const auto* mapped =
          dynamic_cast<const MappedCarrier*>(rep.subtensor(k).carrier.get());
      FUZZ_CHECK(mapped != nullptr);
      const int64_t bytes = mapped->size_in_bytes();
      if (bytes == 0) continue;
      const auto* p = static_cast<const uint8_t*>(mapped->data());
      sink = sink + p[0] + p[bytes - 1];
    }
    (void)sink;
  }
  return 0;
}
