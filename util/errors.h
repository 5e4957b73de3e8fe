// Error kinds of the Strata specification, carried on absl::Status.
//
// The spec names three error classes; representation-cli.md adds a fourth for
// what cannot be afforded. Strata never throws: each is an absl::Status whose
// code is fixed by the kind and whose payload (under kErrorKindPayloadUrl)
// names the kind, so callers can tell a TypeError from a ValueError although
// both are kInvalidArgument.
//
// clang-format off
//   kind (printed name)            status code          ErrorKind
//   TypeError                      kInvalidArgument     kTypeError
//   ValueError                     kInvalidArgument     kValueError
//   OneSubtensorRequiredError      kFailedPrecondition  kOneSubtensorRequired
//   ResourceExhaustedError         kResourceExhausted   kResourceExhausted
// clang-format on
//
// ResourceExhaustedError: memory that cannot be allocated, or an input over a
// documented limit (e.g. kMaxTextBytes in proto/codec.h). The message names
// the function, what was asked (bytes, values) and the bound.
//
// This header is floor 0 of the architecture: it depends on Abseil alone.
#ifndef STRATA_UTIL_ERRORS_H_
#define STRATA_UTIL_ERRORS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace strata {

enum class ErrorKind {
  kNone,  // An OK status, or a status that carries no Strata kind.
  kTypeError,
  kValueError,
  kOneSubtensorRequired,
  kResourceExhausted,
};

// The payload key under which the kind's name is stored.
inline constexpr absl::string_view kErrorKindPayloadUrl =
    "strata.dev/ErrorKind";

// "TypeError", "ValueError", "OneSubtensorRequiredError",
// "ResourceExhaustedError", or "" for kNone.
absl::string_view ErrorKindName(ErrorKind kind);

absl::Status MakeError(ErrorKind kind, absl::string_view message);

inline absl::Status TypeError(absl::string_view message) {
  return MakeError(ErrorKind::kTypeError, message);
}
inline absl::Status ValueError(absl::string_view message) {
  return MakeError(ErrorKind::kValueError, message);
}
inline absl::Status OneSubtensorRequiredError(absl::string_view message) {
  return MakeError(ErrorKind::kOneSubtensorRequired, message);
}
inline absl::Status ResourceExhaustedError(absl::string_view message) {
  return MakeError(ErrorKind::kResourceExhausted, message);
}

// Concatenating forms: TypeErrorCat("subtensor ", i, ": ...").
template <typename... Args>
absl::Status TypeErrorCat(const Args&... args) {
  return TypeError(absl::StrCat(args...));
}
template <typename... Args>
absl::Status ValueErrorCat(const Args&... args) {
  return ValueError(absl::StrCat(args...));
}
template <typename... Args>
absl::Status ResourceExhaustedErrorCat(const Args&... args) {
  return ResourceExhaustedError(absl::StrCat(args...));
}

// The kind carried by `status`; kNone for OK or foreign statuses.
ErrorKind GetErrorKind(const absl::Status& status);

inline bool IsTypeError(const absl::Status& s) {
  return GetErrorKind(s) == ErrorKind::kTypeError;
}
inline bool IsValueError(const absl::Status& s) {
  return GetErrorKind(s) == ErrorKind::kValueError;
}
inline bool IsOneSubtensorRequired(const absl::Status& s) {
  return GetErrorKind(s) == ErrorKind::kOneSubtensorRequired;
}
// (Not IsResourceExhausted: absl's function of that name, found by argument-
// dependent lookup, tests the code only.)
inline bool IsResourceExhaustedError(const absl::Status& s) {
  return GetErrorKind(s) == ErrorKind::kResourceExhausted;
}

// Returns a status of the same code and kind whose message is `context` + ": "
// + the original message. OK statuses are returned unchanged.
absl::Status WithContext(const absl::Status& status, absl::string_view context);

// "<Kind>: <message>" as the strata tool prints it ("TypeError: subtensor 1:
// ...", "ResourceExhaustedError: ..."). A status without a Strata kind prints
// its canonical code name instead ("INTERNAL: ..."); OK prints "OK".
std::string FormatError(const absl::Status& status);

}  // namespace strata

#endif  // STRATA_UTIL_ERRORS_H_
