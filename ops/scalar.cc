#include "ops/scalar.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace strata {

int64_t Scalar::as_int() const {
  return kind_ == Kind::kFloat ? SaturatingToInt64(double_) : int_;
}

std::string Scalar::ToString() const {
  switch (kind_) {
    case Kind::kBool:
      return int_ ? "true" : "false";
    case Kind::kInt:
      return absl::StrCat(int_);
    case Kind::kFloat:
      return absl::StrCat(double_);
  }
  return "";
}

}  // namespace strata
