#include "ops/scalar.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace strata {

int64_t SaturatingToInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

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
