#include "util/errors.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace strata {

absl::string_view ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kTypeError:
      return "TypeError";
    case ErrorKind::kValueError:
      return "ValueError";
    case ErrorKind::kOneSubtensorRequired:
      return "OneSubtensorRequiredError";
    case ErrorKind::kResourceExhausted:
      return "ResourceExhaustedError";
    case ErrorKind::kNone:
      break;
  }
  return "";
}

namespace {

absl::StatusCode CodeOf(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kOneSubtensorRequired:
      return absl::StatusCode::kFailedPrecondition;
    case ErrorKind::kResourceExhausted:
      return absl::StatusCode::kResourceExhausted;
    case ErrorKind::kTypeError:
    case ErrorKind::kValueError:
    case ErrorKind::kNone:
      break;
  }
  return absl::StatusCode::kInvalidArgument;
}

}  // namespace

absl::Status MakeError(ErrorKind kind, absl::string_view message) {
  const absl::StatusCode code = CodeOf(kind);
  absl::Status status(code, message);
  status.SetPayload(kErrorKindPayloadUrl, absl::Cord(ErrorKindName(kind)));
  return status;
}

ErrorKind GetErrorKind(const absl::Status& status) {
  if (status.ok()) return ErrorKind::kNone;
  const auto payload = status.GetPayload(kErrorKindPayloadUrl);
  if (!payload.has_value()) return ErrorKind::kNone;
  for (ErrorKind kind :
       {ErrorKind::kTypeError, ErrorKind::kValueError,
        ErrorKind::kOneSubtensorRequired, ErrorKind::kResourceExhausted}) {
    if (*payload == ErrorKindName(kind)) return kind;
  }
  return ErrorKind::kNone;
}

absl::Status WithContext(const absl::Status& status,
                         absl::string_view context) {
  if (status.ok()) return status;
  absl::Status result(status.code(),
                      absl::StrCat(context, ": ", status.message()));
  status.ForEachPayload(
      [&result](absl::string_view url, const absl::Cord& payload) {
        result.SetPayload(url, payload);
      });
  return result;
}

std::string FormatError(const absl::Status& status) {
  if (status.ok()) return "OK";
  const ErrorKind kind = GetErrorKind(status);
  // StatusCodeToString returns a temporary: hold a std::string, not a view.
  const std::string name = kind == ErrorKind::kNone
                               ? absl::StatusCodeToString(status.code())
                               : std::string(ErrorKindName(kind));
  return absl::StrCat(name, ": ", status.message());
}

}  // namespace strata
