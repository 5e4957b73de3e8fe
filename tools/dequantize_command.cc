#include "tools/dequantize_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/checkpoint.h"
#include "core/tensor.h"
#include "dtype/float_formats.h"
#include "dtype/registry.h"
#include "ops/dequantize.h"
#include "proto/codec.h"
#include "tools/text_file.h"
#include "util/errors.h"

namespace strata {
namespace {

constexpr char kDequantizeUsage[] =
    "usage: strata dequantize FILE NAME [--dtype float32|bfloat16|float16] "
    "[--out OUT.npy]   (FILE a checkpoint; FILE and NAME '-' for a text dump "
    "on standard input)\n";

// The shortest decimal that reads back to the same float32 ("nan", "inf",
// "-inf" for those).
std::string Shortest(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char text[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, v);
    if (std::strtof(text, nullptr) == v) break;
  }
  return text;
}

struct Stats {
  float min = std::numeric_limits<float>::quiet_NaN();
  float max = min, absmax = min;
  double sum = 0;
  int64_t finite = 0, nan = 0, inf = 0;
  void Add(float v) {
    if (std::isnan(v)) {
      ++nan;
      return;
    }
    if (std::isinf(v)) {
      ++inf;
    } else {
      sum += v;
      ++finite;
    }
    if (!(v >= min)) min = v;  // NaN min: the first value.
    if (!(v <= max)) max = v;
    if (!(std::fabs(v) <= absmax)) absmax = std::fabs(v);
  }
};

float ValueAt(const SimpleDType& d, const void* data, int64_t i) {
  uint16_t bits;
  if (&d == dtypes::Float32()) {
    float v;
    std::memcpy(&v, static_cast<const char*>(data) + 4 * i, 4);
    return v;
  }
  std::memcpy(&bits, static_cast<const char*>(data) + 2 * i, 2);
  return &d == dtypes::BFloat16() ? BFloat16ToFloat(bits) : HalfToFloat(bits);
}

// The .npy bytes of compact row-major `values` (NumPy's format 1.0).
std::string NpyHeader(const Tensor& values) {
  const SimpleDType& d = *values.dtype().AsSimple();
  const char* descr = &d == dtypes::Float32()   ? "<f4"
                      : &d == dtypes::Float16() ? "<f2"
                                                : "<u2";
  const std::vector<int64_t> shape = values.shape();
  std::string shape_text = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) shape_text += ",";
  std::string dict =
      absl::StrCat("{'descr': '", descr,
                   "', 'fortran_order': False, 'shape': (", shape_text, "), }");
  // Magic (6) + version (2) + length (2) + dict + '\n', a multiple of 64.
  const size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(dict.size() & 0xFF));
  out.push_back(static_cast<char>(dict.size() >> 8));
  return out + dict;
}

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t wrote = write(fd, data, n);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    data += wrote;
    n -= wrote;
  }
  return true;
}

// Writes `values` to `path` through a temporary file beside it.
absl::Status WriteNpy(const std::string& path, const Tensor& values) {
  const std::string header = NpyHeader(values);
  const std::string temporary = absl::StrCat(path, ".tmp.", getpid());
  const int fd =
      open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return ValueErrorCat("strata dequantize: cannot write ", path, ": ",
                         std::strerror(errno));
  }
  const int64_t bytes = values.size() * (values.dtype().AsSimple()->bits() / 8);
  bool ok =
      WriteAll(fd, header.data(), header.size()) &&
      WriteAll(fd, static_cast<const char*>(values.carrier()->data()), bytes);
  const int saved = errno;
  ok = (close(fd) == 0) && ok;
  if (!ok || rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = ok ? errno : saved;
    unlink(temporary.c_str());
    return ValueErrorCat("strata dequantize: cannot write ", path, ": ",
                         std::strerror(error));
  }
  return absl::OkStatus();
}

}  // namespace

int DequantizeCommand(const std::vector<std::string>& args) {
  if (args.size() < 2 || args.size() % 2 != 0) {
    std::cerr << kDequantizeUsage;
    return 2;
  }
  std::string dtype_name = "float32", out_path;
  bool have_dtype = false, have_out = false;
  for (size_t i = 2; i < args.size(); i += 2) {
    if (args[i] == "--dtype" && !have_dtype) {
      dtype_name = args[i + 1];
      have_dtype = true;
    } else if (args[i] == "--out" && !have_out) {
      out_path = args[i + 1];
      have_out = true;
    } else {
      std::cerr << kDequantizeUsage;
      return 2;
    }
  }
  const std::string& file = args[0];
  const std::string& name = args[1];
  absl::StatusOr<Tensor> tensor = absl::UnknownError("unread");
  if (name == "-") {
    proto::RepresentationProto proto;
    if (!ReadProto("dequantize", file, &proto)) return 2;
    tensor = Replay(proto);
  } else {
    absl::StatusOr<Checkpoint> read = ReadCheckpoint(file);
    if (!read.ok()) {
      std::cout << file << ": " << FormatError(read.status()) << "\n";
      return 2;
    }
    tensor = ValueErrorCat("strata dequantize: ", file,
                           " holds no tensor named \"", name, "\"");
    for (CheckpointTensor& t : read->tensors) {
      if (t.name == name) tensor = std::move(t.tensor);
    }
  }
  const std::string label = name == "-" ? file : name;
  const auto refuse = [&](const absl::Status& status) {
    std::cout << label << ": " << FormatError(status) << "\n";
    return 1;
  };
  if (!tensor.ok()) return refuse(tensor.status());
  const SimpleDType* to = nullptr;
  if (auto named = DTypeRegistry::Global().Lookup(dtype_name); named.ok()) {
    to = (*named)->AsSimple();
  }
  if (to == nullptr) {
    return refuse(TypeErrorCat("strata dequantize: --dtype ", dtype_name,
                               " is not float32, bfloat16 or float16"));
  }
  absl::StatusOr<Tensor> values = Dequantize(*tensor, *to);
  if (!values.ok()) return refuse(values.status());
  Stats stats;
  const void* data = values->carrier()->data();
  for (int64_t i = 0; i < values->size(); ++i) {
    stats.Add(ValueAt(*to, data, i));
  }
  const float mean = stats.finite > 0
                         ? static_cast<float>(stats.sum / stats.finite)
                         : std::numeric_limits<float>::quiet_NaN();
  if (have_out) {
    const absl::Status wrote = WriteNpy(out_path, *values);
    if (!wrote.ok()) return refuse(wrote);
  }
  std::cout << label << " dtype=" << tensor->dtype().name() << " shape=("
            << absl::StrJoin(tensor->shape(), ",") << ") -> " << to->name()
            << ": min=" << Shortest(stats.min) << " max=" << Shortest(stats.max)
            << " absmax=" << Shortest(stats.absmax)
            << " mean=" << Shortest(mean) << " nan=" << stats.nan
            << " inf=" << stats.inf << "\n";
  return 0;
}

}  // namespace strata
