#include "util/errors.h"

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "util/status_macros.h"

namespace strata {
namespace {

TEST(ErrorsTest, KindsCarryCodesAndPayloads) {
  const absl::Status type = TypeError("bad type");
  const absl::Status value = ValueErrorCat("subtensor ", 1, ": bad value");
  const absl::Status one = OneSubtensorRequiredError("Add needs one subtensor");
  EXPECT_EQ(type.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(value.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(one.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(IsTypeError(type));
  EXPECT_FALSE(IsValueError(type));
  EXPECT_TRUE(IsValueError(value));
  EXPECT_TRUE(IsOneSubtensorRequired(one));
  EXPECT_EQ(GetErrorKind(absl::OkStatus()), ErrorKind::kNone);
  EXPECT_EQ(GetErrorKind(absl::InvalidArgumentError("foreign")),
            ErrorKind::kNone);
}

TEST(ErrorsTest, FormatPrintsKindAndMessage) {
  EXPECT_EQ(FormatError(ValueErrorCat("subtensor ", 1, ": x")),
            "ValueError: subtensor 1: x");
  EXPECT_EQ(FormatError(TypeError("t")), "TypeError: t");
  EXPECT_EQ(FormatError(OneSubtensorRequiredError("o")),
            "OneSubtensorRequiredError: o");
  EXPECT_EQ(FormatError(absl::InternalError("i")), "INTERNAL: i");
  EXPECT_EQ(FormatError(absl::OkStatus()), "OK");
}

// Issue 16 item 6: the contract names the kind ResourceExhaustedError.
TEST(ErrorsTest, ResourceExhaustedErrorIsAKindWithItsOwnCode) {
  const absl::Status s =
      ResourceExhaustedErrorCat("cannot map ", 1 << 20, " bytes");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(GetErrorKind(s), ErrorKind::kResourceExhausted);
  EXPECT_TRUE(IsResourceExhaustedError(s));
  EXPECT_FALSE(IsValueError(s));
  EXPECT_FALSE(IsResourceExhaustedError(ValueError("v")));
  EXPECT_EQ(ErrorKindName(ErrorKind::kResourceExhausted),
            "ResourceExhaustedError");
  EXPECT_EQ(FormatError(s), "ResourceExhaustedError: cannot map 1048576 bytes");
  // WithContext keeps the kind and the code.
  const absl::Status c = WithContext(s, "carrier \"c0\"");
  EXPECT_TRUE(IsResourceExhaustedError(c));
  EXPECT_EQ(c.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(FormatError(c),
            "ResourceExhaustedError: carrier \"c0\": cannot map 1048576 bytes");
  // A foreign status of the same code carries no Strata kind.
  EXPECT_EQ(GetErrorKind(absl::ResourceExhaustedError("r")), ErrorKind::kNone);
  EXPECT_EQ(FormatError(absl::ResourceExhaustedError("r")),
            "RESOURCE_EXHAUSTED: r");
}

TEST(ErrorsTest, WithContextKeepsKind) {
  const absl::Status s = WithContext(TypeError("not a Layout"), "subtensor 2");
  EXPECT_TRUE(IsTypeError(s));
  EXPECT_EQ(s.message(), "subtensor 2: not a Layout");
  EXPECT_TRUE(WithContext(absl::OkStatus(), "x").ok());
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return ValueErrorCat(x, " is odd");
  return x / 2;
}

absl::StatusOr<int> Quarter(int x) {
  STRATA_ASSIGN_OR_RETURN(int half, Half(x));
  STRATA_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

absl::Status CheckEven(int x) {
  STRATA_RETURN_IF_ERROR(Half(x).status());
  return absl::OkStatus();
}

TEST(ErrorsTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_TRUE(IsValueError(Quarter(6).status()));
  EXPECT_EQ(Quarter(6).status().message(), "3 is odd");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_TRUE(IsValueError(CheckEven(5)));
}

}  // namespace
}  // namespace strata
