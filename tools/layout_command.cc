// strata layout --batch FILE | --show LAYOUT (layout-cli.md).
#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "layout/batch.h"
#include "layout/int_tuple.h"
#include "layout/layout.h"
#include "layout/show.h"
#include "proto/codec.h"
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/text_file.h"
#include "util/errors.h"

namespace strata {

int LayoutCommand(const std::vector<std::string>& args) {
  if (args.size() == 2 && args[0] == "--batch") {
    if (args[1] == "-") return RunLayoutBatch(std::cin, std::cout);
    std::ifstream in(args[1]);
    if (!in || IsDirectory(args[1])) {
      std::cerr << "strata layout: cannot read " << args[1] << "\n";
      return 2;
    }
    return RunLayoutBatch(in, std::cout);
  }
  if (args.size() == 2 && args[0] == "--show") {
    auto layout = ParseLayout(args[1]);
    if (!layout.ok()) {
      std::cout << "error: " << FormatError(layout.status()) << "\n";
      return 1;
    }
    auto table = ShowLayout(*layout);
    if (!table.ok()) {
      std::cout << "error: " << FormatError(table.status()) << "\n";
      return 1;
    }
    std::cout << *table;
    return 0;
  }
  return Usage();
}

std::string SnapshotText(const MutationSnapshot& snapshot,
                         const std::vector<const Carrier*>& names) {
  std::vector<std::string> parts;
  for (const CarrierVersion& entry : snapshot) {
    size_t id = 0;
    while (id < names.size() && names[id] != entry.carrier) ++id;
    parts.push_back(absl::StrCat(CarrierId(id), "@", entry.version));
  }
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

}  // namespace strata
