// A typed scalar: what GetItem returns and Fill / SetItem take.
#ifndef STRATA_OPS_SCALAR_H_
#define STRATA_OPS_SCALAR_H_

#include <cstdint>
#include <string>

namespace strata {

class Scalar {
 public:
  enum class Kind { kBool, kInt, kFloat };

  static Scalar Bool(bool v) {
    return Scalar(Kind::kBool, v ? 1 : 0, v ? 1.0 : 0.0);
  }
  static Scalar Int(int64_t v) {
    return Scalar(Kind::kInt, v, static_cast<double>(v));
  }
  static Scalar Float(double v) { return Scalar(Kind::kFloat, 0, v); }

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }

  bool as_bool() const {
    return kind_ == Kind::kFloat ? double_ != 0 : int_ != 0;
  }
  // Integers exactly; floats truncated toward zero (NaN is 0, saturating).
  int64_t as_int() const;
  double as_double() const {
    return kind_ == Kind::kFloat ? double_ : static_cast<double>(int_);
  }

  std::string ToString() const;
  friend bool operator==(const Scalar& a, const Scalar& b) {
    return a.kind_ == b.kind_ &&
           (a.kind_ == Kind::kFloat ? a.double_ == b.double_
                                    : a.int_ == b.int_);
  }

 private:
  Scalar(Kind kind, int64_t i, double d) : kind_(kind), int_(i), double_(d) {}
  Kind kind_;
  int64_t int_;
  double double_;
};

// Saturating, truncating float -> int64 conversion (NaN -> 0): never undefined.
int64_t SaturatingToInt64(double v);

}  // namespace strata

#endif  // STRATA_OPS_SCALAR_H_
