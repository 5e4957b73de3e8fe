#include "checkpoint/internal/names.h"

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dtype/registry.h"

namespace strata {
namespace checkpoint_internal {
namespace {

struct DTypeName {
  absl::string_view safetensors;
  const SimpleDType* (*dtype)();
};

// clang-format off
constexpr DTypeName kDTypeNames[] = {
    {"BOOL", dtypes::Bool},       {"U8", dtypes::UInt8},
    {"I8", dtypes::Int8},         {"I16", dtypes::Int16},
    {"I32", dtypes::Int32},       {"I64", dtypes::Int64},
    {"F16", dtypes::Float16},     {"BF16", dtypes::BFloat16},
    {"F32", dtypes::Float32},     {"F64", dtypes::Float64},
    {"F8_E4M3", dtypes::Float8E4M3FN},
    {"F8_E5M2", dtypes::Float8E5M2},
    {"F8_E8M0", dtypes::Float8E8M0FNU},
    {"F4", dtypes::Float4E2M1FN},
};
// clang-format on

}  // namespace

const SimpleDType* FromSafetensorsName(absl::string_view name) {
  for (const DTypeName& d : kDTypeNames) {
    if (d.safetensors == name) return d.dtype();
  }
  return nullptr;
}

absl::string_view ToSafetensorsName(const DType& dtype) {
  for (const DTypeName& d : kDTypeNames) {
    if (d.dtype() == &dtype) return d.safetensors;
  }
  return {};
}

std::string Quoted(absl::string_view s) {
  constexpr size_t kMax = 80;
  return absl::StrCat("\"", s.substr(0, kMax), s.size() > kMax ? "..." : "",
                      "\"");
}

std::string QuotedPath(absl::string_view path) {
  return absl::StrCat("\"", path, "\"");
}

std::string ShapeText(absl::Span<const int64_t> shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ","), ")");
}

absl::StatusOr<int64_t> RegularFileSize(int fd, absl::string_view reader,
                                        const std::string& path) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return ValueErrorCat(reader, ": cannot stat ", Quoted(path), ": ",
                         std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return ValueErrorCat(reader, ": ", Quoted(path), " is not a regular file",
                         S_ISDIR(st.st_mode) ? " (a directory)" : "");
  }
  return static_cast<int64_t>(st.st_size);
}

}  // namespace checkpoint_internal
}  // namespace strata
