// `strata demo`: the main job (tools/run.sh demo).
#ifndef STRATA_TOOLS_DEMO_COMMAND_H_
#define STRATA_TOOLS_DEMO_COMMAND_H_

namespace strata {

// Tells Strata's story in steps, each printing what was validated: a
// conventional Tensor; a weight quantized into the 128x4 swizzle kernels
// read; an 8-way tensor-parallel shard planned and one part taken as a view
// with every level exact; a refused shard and the padding that fixes it; the
// weight written to a safetensors file, imported back zero-copy (mapped
// carriers) and dumped as text that names the file, replayed and dumped
// again. Returns 0, or 1 with the error line.
int DemoCommand();

}  // namespace strata

#endif  // STRATA_TOOLS_DEMO_COMMAND_H_
