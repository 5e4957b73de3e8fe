// The `strata` command-line tool (shared/design/representation-cli.md,
// layout-cli.md).
//
// clang-format off
//   strata demo                  the main job
//   strata dump --example NAME   an example representation as text
//   strata dump --list           the example names
//   strata validate FILE...      replay each text file, report OK or the error
//   strata view FILE OP ARGS...  replay FILE, apply one view, print it
//   strata layout --batch FILE   layout algebra requests, one answer line each
//   strata layout --show LAYOUT  a rank-1 or rank-2 layout drawn as a table
//   strata quantize FORMAT SHAPE BLOCKED_MODE [--scale-layout row_major|swizzled_128x4] --input FILE
//                                quantize float32 values, print the Tensor
//   strata import FILE           a safetensors or GGUF file's tensors
//   strata shard FILE NAME DIM PARTS  the exact tensor-parallel split of a dim
//   strata dequantize FILE NAME [--dtype D] [--out OUT.npy]  a Tensor's values
//   strata convert SRC DST --to T [OPTIONS]  a whole checkpoint converted
// clang-format on
//
// Texts are read up to kMaxTextBytes (proto/codec.h, 64 MiB); a longer one, a
// directory or an unreadable file is exit status 2.
#include <string>
#include <vector>

#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/convert_command.h"
#include "tools/demo_command.h"
#include "tools/dequantize_command.h"
#include "tools/import_command.h"
#include "tools/shard_command.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>& args);
};

int Demo(const std::vector<std::string>& args) {
  return args.empty() ? strata::DemoCommand() : strata::Usage();
}

constexpr Command kCommands[] = {
    {"demo", Demo},
    {"layout", strata::LayoutCommand},
    {"dump", strata::DumpCommand},
    {"validate", strata::ValidateCommand},
    {"view", strata::ViewCommand},
    {"quantize", strata::QuantizeCommand},
    {"import", strata::ImportCommand},
    {"shard", strata::ShardCommand},
    {"dequantize", strata::DequantizeCommand},
    {"convert", strata::ConvertCommand},
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return strata::Usage();
  const std::string command = args[0];
  args.erase(args.begin());
  for (const Command& c : kCommands) {
    if (command == c.name) return c.run(args);
  }
  return strata::Usage();
}
