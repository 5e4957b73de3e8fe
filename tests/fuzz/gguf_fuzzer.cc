// libFuzzer target: the GGUF reader (checkpoint/gguf.h) on a fuzzed file --
// the header, the metadata, the tensor infos and the data all come from the
// input.
//
// Checks, beyond "never crash, hang or leak" (and no allocation beyond a
// constant times the input): every carrier of an imported Tensor is a
// read-only mapped carrier inside the file; plain Tensors' mapped bytes are
// the file's bytes at the data section plus their offset; for small quantized
// Tensors, every element code and scale reached through L_0, S_0 and L_1 is
// the file's byte the array-of-structs block layout names (NOTE [ GGUF blocks
// as strided placements ]); their Dequantize into float32 is each code times
// its scale (q8_0, q4_0: computed here from the file's bytes; mxfp4: checked
// for being a number where its scale is), and into bfloat16 the float32
// rounded to nearest even, through the SIMD rows' per-run code starts and
// ggml's split halves; metadata values render. And the writer: what was
// read (when every tensor imported and the file is small) is written by
// WriteGguf, read back with the same names, types, shapes and plain bytes,
// and written again to the same bytes (NOTE [ GGUF out ]).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "carrier/mapped_carrier.h"
#include "checkpoint/gguf.h"
#include "checkpoint/tensor_to_write.h"
#include "core/representation.h"
#include "core/tensor_access.h"
#include "dtype/float_formats.h"
#include "dtype/packing.h"
#include "dtype/registry.h"
#include "layout/layout.h"
#include "ops/dequantize.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_file.h"
#include "util/errors.h"

namespace {

using namespace strata;

constexpr int64_t kSmall = 1 << 14;

uint8_t FileByte(const uint8_t* data, size_t size, int64_t offset) {
  FUZZ_CHECK(offset >= 0 && static_cast<size_t>(offset) < size);
  return data[offset];
}

const MappedCarrier* Mapped(const Subtensor& s, size_t size) {
  const auto* m = dynamic_cast<const MappedCarrier*>(s.carrier.get());
  FUZZ_CHECK(m != nullptr && m->read_only());
  FUZZ_CHECK(s.carrier->mutable_data() == nullptr);
  FUZZ_CHECK(m->file_offset() >= 0 && m->file_offset() + m->size_in_bytes() <=
                                          static_cast<int64_t>(size));
  return m;
}

void CheckPlain(const Tensor& t, const uint8_t* data, size_t size) {
  const Subtensor& s = TensorAccess::representation(t).subtensor(0);
  const MappedCarrier* m = Mapped(s, size);
  FUZZ_CHECK(s.offset == 0);
  const auto* mapped = static_cast<const uint8_t*>(m->data());
  for (int64_t k = 0; k < m->size_in_bytes() && k < kSmall; ++k) {
    FUZZ_CHECK(mapped[k] == FileByte(data, size, m->file_offset() + k));
  }
}

void CheckBlocks(const Tensor& t, const uint8_t* data, size_t size) {
  const Representation& rep = TensorAccess::representation(t);
  FUZZ_CHECK(rep.num_levels() == 2);
  const Subtensor& v = rep.subtensor(0);
  const Subtensor& s = rep.subtensor(1);
  const MappedCarrier* vm = Mapped(v, size);
  const MappedCarrier* sm = Mapped(s, size);
  FUZZ_CHECK(vm->file_offset() == sm->file_offset());
  const bool q8 = &t.dtype() == dtypes::Q8_0();
  const bool mx = &t.dtype() == dtypes::MXFP4();
  FUZZ_CHECK(q8 || mx || &t.dtype() == dtypes::Q4_0());
  const int64_t block_bytes = q8 ? 34 : (mx ? 17 : 18);
  const int64_t qs = mx ? 1 : 2;
  if (t.size() > kSmall) return;
  const std::vector<int64_t> shape = t.shape();
  const int64_t k = shape.back();
  const auto l0 = TopLevelModes(v.placement);
  const auto s0 = TopLevelModes(rep.adjacent_layouts()[0]);
  std::vector<int64_t> coord(shape.size(), 0);
  const int64_t base = vm->file_offset();
  // Each value from the file's bytes (q8_0, q4_0), row-major.
  std::vector<float> want(t.size());
  for (int64_t r = 0; r < t.size(); ++r) {
    int64_t iv = v.offset, is = 0;
    for (size_t j = 0; j < shape.size(); ++j) {
      iv += l0[j](coord[j]);
      is += s0[j](coord[j]);
    }
    // Element c of row `row`: block c / 32, position c % 32.
    const int64_t row = r / k, c = r % k;
    const int64_t block = base + (row * (k / 32) + c / 32) * block_bytes;
    const int64_t e = c % 32;
    const uint16_t d =
        static_cast<uint16_t>(FileByte(data, size, block) |
                              (mx ? 0 : FileByte(data, size, block + 1) << 8));
    if (q8) {
      const uint8_t byte = FileByte(data, size, block + qs + e);
      FUZZ_CHECK(static_cast<const uint8_t*>(vm->data())[iv] == byte);
      want[r] = static_cast<float>(static_cast<int8_t>(byte)) * HalfToFloat(d);
    } else {
      const uint8_t byte = FileByte(data, size, block + qs + e % 16);
      const uint8_t nibble = e < 16 ? byte & 0xF : byte >> 4;
      FUZZ_CHECK(ReadPacked(static_cast<const uint8_t*>(vm->data()), 4, iv) ==
                 nibble);
      want[r] = static_cast<float>(nibble - 8) * HalfToFloat(d);
    }
    const int64_t si = s.offset + s.placement(is);
    const int width = mx ? 1 : 2;
    for (int b = 0; b < width; ++b) {
      FUZZ_CHECK(static_cast<const uint8_t*>(sm->data())[si * width + b] ==
                 FileByte(data, size, block + b));
    }
    for (size_t j = shape.size(); j-- > 0;) {
      if (++coord[j] < shape[j]) break;
      coord[j] = 0;
    }
  }
  auto f32 = Dequantize(t, *dtypes::Float32());
  auto bf16 = Dequantize(t, *dtypes::BFloat16());
  // Dequantize reads float16 scales aligned only: a file that places a
  // tensor's blocks at an odd offset gets a ValueError that says so.
  if (!mx && reinterpret_cast<uintptr_t>(sm->data()) % 2 != 0) {
    FUZZ_CHECK(IsValueError(f32.status()) && IsValueError(bf16.status()));
    return;
  }
  FUZZ_CHECK_STATUS(f32.ok(), f32.status());
  FUZZ_CHECK_STATUS(bf16.ok(), bf16.status());
  FUZZ_CHECK(f32->offset() == 0 && bf16->offset() == 0);
  const auto* got = static_cast<const float*>(f32->carrier()->data());
  const auto* rounded = static_cast<const uint16_t*>(bf16->carrier()->data());
  for (int64_t r = 0; r < t.size(); ++r) {
    uint32_t bits, want_bits;
    std::memcpy(&bits, &got[r], 4);
    std::memcpy(&want_bits, &want[r], 4);
    const bool nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
    if (!mx) FUZZ_CHECK(nan ? want[r] != want[r] : bits == want_bits);
    // Nearest even; a NaN quieted with its sign.
    const uint32_t upper = bits >> 16, lower = bits & 0xFFFF;
    const uint16_t nearest = static_cast<uint16_t>(
        nan ? upper | 0x40
            : upper + (lower > 0x8000 || (lower == 0x8000 && (upper & 1))));
    FUZZ_CHECK(rounded[r] == nearest);
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string& OutputDirectory() {
  static const std::string* dir = [] {
    const char* base = getenv("TEST_TMPDIR");
    std::string pattern =
        std::string(base != nullptr ? base : "/tmp") + "/gguf_fuzz_XXXXXX";
    FUZZ_CHECK(mkdtemp(pattern.data()) != nullptr);
    return new std::string(pattern);
  }();
  return *dir;
}

std::vector<TensorToWrite> Writes(const Gguf& gguf) {
  std::vector<TensorToWrite> out;
  for (const GgufTensor& t : gguf.tensors)
    out.push_back(ToWrite(t.name, *t.tensor));
  return out;
}

void CheckRewrite(const Gguf& read, size_t size) {
  if (size > (1 << 20)) return;
  for (const GgufTensor& t : read.tensors) {
    if (!t.tensor.ok()) return;
  }
  const std::string first = OutputDirectory() + "/first.gguf";
  const std::string second = OutputDirectory() + "/second.gguf";
  FUZZ_CHECK(WriteGguf(first, Writes(read), read.metadata).ok());
  auto again = ReadGguf(first);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->version == 3 && again->alignment == read.alignment);
  FUZZ_CHECK(again->tensors.size() == read.tensors.size());
  for (size_t i = 0; i < read.tensors.size(); ++i) {
    const GgufTensor& a = read.tensors[i];
    const GgufTensor& b = again->tensors[i];
    FUZZ_CHECK(b.tensor.ok() && a.name == b.name && a.ggml_type == b.ggml_type);
    FUZZ_CHECK(a.tensor->shape() == b.tensor->shape());
    if (a.tensor->num_subtensors() == 1 && a.tensor->size() > 0) {
      const auto* ma = static_cast<const uint8_t*>(a.tensor->carrier()->data());
      const auto* mb = static_cast<const uint8_t*>(b.tensor->carrier()->data());
      const int64_t bytes =
          *StorageBytes(*a.tensor->dtype().AsSimple(), a.tensor->size());
      FUZZ_CHECK(std::memcmp(ma, mb, bytes) == 0);
    }
  }
  FUZZ_CHECK(WriteGguf(second, Writes(*again), again->metadata).ok());
  FUZZ_CHECK(ReadAll(first) == ReadAll(second));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = strata::fuzz::InputAsFile(data, size, "gguf_fuzzer");
  if (fd < 0) return 0;
  auto read = ReadGgufFd(fd, "fuzz.gguf");
  close(fd);
  if (!read.ok()) return 0;
  FUZZ_CHECK(read->version == 2 || read->version == 3);
  FUZZ_CHECK(read->data_offset % read->alignment == 0);
  for (const auto& [key, value] : read->metadata) {
    FUZZ_CHECK(!value.ToString().empty());
  }
  for (const GgufTensor& t : read->tensors) {
    if (!t.tensor.ok()) continue;
    if (t.tensor->num_subtensors() == 1) {
      CheckPlain(*t.tensor, data, size);
    } else {
      CheckBlocks(*t.tensor, data, size);
    }
  }
  CheckRewrite(*read, size);
  return 0;
}
