// strata dump --example NAME | --list [--data].
#include <sys/stat.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "carrier/carrier.h"
#include "core/tensor.h"
#include "core/tensor_access.h"
#include "layout/layout.h"
#include "proto/codec.h"
#include "proto/examples.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/text_file.h"
#include "util/errors.h"

namespace strata {

int DumpCommand(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "--list") {
    for (const std::string& name : ExampleNames()) std::cout << name << "\n";
    return 0;
  }
  const bool data = args.size() == 3 && args[2] == "--data";
  if ((args.size() != 2 && !data) || args[0] != "--example") return Usage();
  auto tensor = MakeExample(args[1]);
  if (!tensor.ok()) {
    std::cerr << "strata dump: " << FormatError(tensor.status()) << "\n";
    return 2;
  }
  std::cout << ToText(ToProto(*tensor, {data}));
  return 0;
}

}  // namespace strata
