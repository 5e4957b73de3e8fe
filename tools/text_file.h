// Reading representation texts for the strata commands: at most
// kMaxTextBytes (proto/codec.h, 64 MiB); a directory, an unreadable file and
// a text over the limit are refused before anything is parsed.
#ifndef STRATA_TOOLS_TEXT_FILE_H_
#define STRATA_TOOLS_TEXT_FILE_H_

#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "proto/codec.h"

namespace strata {

// What reading one text file gave.
struct ReadText {
  enum Outcome { kRead, kUnreadable, kTooLarge } outcome = kRead;
  std::string text;    // kRead: the bytes.
  std::string reason;  // kUnreadable: why (for standard error).
  int64_t size = -1;   // kTooLarge: the file's size when known, else -1.
};

// Reads FILE ('-' = standard input), at most kMaxTextBytes bytes.
ReadText ReadTextFile(const std::string& path);

// The error line of a text over the limit, e.g. "ResourceExhaustedError:
// strata validate: big.textproto holds 92000174 bytes, above ...".
std::string TooLargeLine(const std::string& command, const std::string& path,
                         int64_t size);

// Reads and parses FILE for `command`. On failure prints the answer line
// (stdout) and the diagnostic (stderr) and returns false; the exit status is
// then 2.
bool ReadProto(const std::string& command, const std::string& path,
               proto::RepresentationProto* proto);

// "OK dtype=mxfp4 levels=2 shape=(2,3,64) snapshot=[c0@0,c1@0]": a Tensor as
// the OK lines of strata import and the demo print it (carrier ids in
// snapshot order).
std::string TensorLine(const Tensor& tensor);

}  // namespace strata

#endif  // STRATA_TOOLS_TEXT_FILE_H_
