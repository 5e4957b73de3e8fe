// `strata dequantize FILE NAME [--dtype D] [--out OUT.npy]`
// (../shared/design/values.md section 3).
#ifndef STRATA_TOOLS_DEQUANTIZE_COMMAND_H_
#define STRATA_TOOLS_DEQUANTIZE_COMMAND_H_

#include <string>
#include <vector>

namespace strata {

// Reads Tensor NAME of FILE (a checkpoint strata import reads, or a text dump
// on standard input with FILE and NAME '-'), dequantizes it to D (float32 by
// default; bfloat16, float16) and prints
//   NAME dtype=<format> shape=(...) -> <D>: min=<v> max=<v> absmax=<v>
//   mean=<v> nan=<n> inf=<n>
// (one line; min, max, absmax over the values that are not NaN, mean in
// float64 over the finite ones, each the shortest decimal that reads back to
// the same float32; nan for all four of an empty Tensor). With --out it also
// writes the values as a numpy .npy file (version 1.0, little-endian, C
// order; bfloat16 as <u2), through a temporary file renamed over OUT.
// Exit status: 0; 1 a Tensor refused or absent, a D Dequantize refuses, or
// OUT that cannot be written (the error line); 2 a file that is not a
// checkpoint, or arguments of another form (the usage on standard error).
int DequantizeCommand(const std::vector<std::string>& args);

}  // namespace strata

#endif  // STRATA_TOOLS_DEQUANTIZE_COMMAND_H_
