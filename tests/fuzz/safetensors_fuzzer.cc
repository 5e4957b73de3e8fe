// libFuzzer target: the safetensors reader (checkpoint/safetensors.h) on a
// fuzzed file -- the 8-byte header length, the JSON header and the data buffer
// all come from the input.
//
// Checks, beyond "never crash, hang or leak": every imported Tensor's mapped
// bytes are exactly the file's bytes its data_offsets name (plain tensors:
// every value; MXFP4 pairs: every element code and scale reached through L_0,
// S_0 and L_1, for small pairs); and whatever imports writes, reads back and
// writes again to identical bytes.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "carrier/mapped_carrier.h"
#include "checkpoint/safetensors.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/layout.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_file.h"

namespace {

using namespace strata;

constexpr int64_t kSmall = 1 << 14;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The file's byte `offset`, as the reader must have mapped it.
uint8_t FileByte(const uint8_t* data, size_t size, int64_t offset) {
  FUZZ_CHECK(offset >= 0 && static_cast<size_t>(offset) < size);
  return data[offset];
}

void CheckPlain(const Tensor& t, const uint8_t* data, size_t size) {
  const auto* m = dynamic_cast<const MappedCarrier*>(t.carrier().get());
  FUZZ_CHECK(m != nullptr && m->read_only() && t.offset() == 0);
  FUZZ_CHECK(m->version() == 0 && t.carrier()->mutable_data() == nullptr);
  const int64_t bytes = m->size_in_bytes();
  FUZZ_CHECK(m->file_offset() >= 8 &&
             m->file_offset() + bytes <= int64_t(size));
  const auto* mapped = static_cast<const uint8_t*>(m->data());
  FUZZ_CHECK(mapped != nullptr);
  for (int64_t k = 0; k < bytes && k < kSmall; ++k) {
    FUZZ_CHECK(mapped[k] == FileByte(data, size, m->file_offset() + k));
  }
}

void CheckPair(const Tensor& t, const uint8_t* data, size_t size) {
  const Representation& rep = TensorAccess::representation(t);
  FUZZ_CHECK(rep.num_levels() == 2 && &t.dtype() == dtypes::MXFP4());
  const Subtensor& v = rep.subtensor(0);
  const Subtensor& s = rep.subtensor(1);
  const auto* vm = dynamic_cast<const MappedCarrier*>(v.carrier.get());
  const auto* sm = dynamic_cast<const MappedCarrier*>(s.carrier.get());
  FUZZ_CHECK(vm != nullptr && sm != nullptr);
  const std::vector<int64_t> shape = t.shape();
  FUZZ_CHECK(!shape.empty() && shape.back() % 32 == 0);
  if (t.size() > kSmall) return;
  const int64_t n = shape.back(), groups = n / 32;
  const Layout& s0 = rep.adjacent_layouts()[0];
  const auto modes = TopLevelModes(v.placement);
  const auto s0_modes = TopLevelModes(s0);
  std::vector<int64_t> coord(shape.size(), 0);
  for (int64_t r = 0; r < t.size(); ++r) {
    int64_t iv = 0, is = 0;
    for (size_t j = 0; j < shape.size(); ++j) {
      iv += modes[j](coord[j]);
      is += s0_modes[j](coord[j]);
    }
    // Row-major element r: nibble r of the blocks, scale r / 32.
    const uint8_t byte = FileByte(data, size, vm->file_offset() + r / 2);
    const uint8_t nibble = r % 2 == 0 ? byte & 0xF : byte >> 4;
    FUZZ_CHECK(ReadPacked(static_cast<const uint8_t*>(vm->data()), 4,
                          v.offset + iv) == nibble);
    const int64_t si = s.offset + s.placement(is);
    FUZZ_CHECK(static_cast<const uint8_t*>(sm->data())[si] ==
               FileByte(data, size, sm->file_offset() + r / 32));
    (void)groups;
    for (size_t j = shape.size(); j-- > 0;) {
      if (++coord[j] < shape[j]) break;
      coord[j] = 0;
    }
  }
}

// A convention group (NOTE [ Checkpoint conventions ]): every level a
// read-only mapped carrier holding the file's bytes.
void CheckGroup(const Tensor& t, const uint8_t* data, size_t size) {
  for (const Subtensor& s : TensorAccess::representation(t).subtensors()) {
    const auto* m = dynamic_cast<const MappedCarrier*>(s.carrier.get());
    FUZZ_CHECK(m != nullptr && m->read_only() && s.offset == 0);
    const int64_t bytes = m->size_in_bytes();
    FUZZ_CHECK(m->file_offset() >= 8 &&
               m->file_offset() + bytes <= int64_t(size));
    const auto* mapped = static_cast<const uint8_t*>(m->data());
    for (int64_t k = 0; k < bytes && k < kSmall; ++k) {
      FUZZ_CHECK(mapped[k] == FileByte(data, size, m->file_offset() + k));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = strata::fuzz::InputAsFile(data, size, "safetensors_fuzzer");
  if (fd < 0) return 0;
  auto read = ReadSafetensorsFd(fd, "fuzz.safetensors");
  close(fd);
  if (!read.ok()) return 0;
  std::vector<std::pair<std::string, Tensor>> imported;
  int64_t total = 0;
  for (const SafetensorsTensor& t : read->tensors) {
    if (!t.tensor.ok()) continue;
    if (t.tensor->num_subtensors() == 1) {
      CheckPlain(*t.tensor, data, size);
    } else if (&t.tensor->dtype() == dtypes::MXFP4()) {
      CheckPair(*t.tensor, data, size);
    } else {
      CheckGroup(*t.tensor, data, size);
    }
    total += t.tensor->size();
    imported.emplace_back(t.name, *t.tensor);
  }
  // Write -> read -> write (bounded: the input is small, values are few
  // unless shapes hold zero-size F4/BOOL of many values; skip huge ones).
  if (total > (int64_t{1} << 22)) return 0;
  const std::string base =
      absl::StrCat("/tmp/strata_safetensors_fuzzer_", getpid());
  const std::string first = base + "_a", second = base + "_b";
  const absl::Status wrote = WriteSafetensors(first, imported, read->metadata);
  if (!wrote.ok()) {
    // Only names written twice (a pair P beside a tensor P.blocks, say) may
    // refuse: everything that imported has a safetensors form.
    FUZZ_CHECK(std::string(wrote.message()).find("written twice") !=
               std::string::npos);
    return 0;
  }
  auto again = ReadSafetensors(first);
  FUZZ_CHECK(again.ok());
  std::vector<std::pair<std::string, Tensor>> reimported;
  for (const SafetensorsTensor& t : again->tensors) {
    FUZZ_CHECK(t.tensor.ok());
    reimported.emplace_back(t.name, *t.tensor);
  }
  FUZZ_CHECK(WriteSafetensors(second, reimported, again->metadata).ok());
  FUZZ_CHECK(ReadAll(first) == ReadAll(second));
  unlink(first.c_str());
  unlink(second.c_str());
  return 0;
}
