// strata validate FILE... (representation-cli.md).
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
#include "tools/cli_util.h"
#include "tools/commands.h"
#include "tools/text_file.h"
#include "util/errors.h"

namespace strata {

int ValidateCommand(const std::vector<std::string>& files) {
  if (files.empty()) return Usage();
  int exit_status = 0;
  for (const std::string& file : files) {
    proto::RepresentationProto proto;
    if (!ReadProto("validate", file, &proto)) {
      exit_status = 2;
      continue;
    }
    auto replayed = ReplayWithIds(proto);
    if (!replayed.ok()) {
      std::cout << file << ": " << FormatError(replayed.status()) << "\n";
      exit_status = std::max(exit_status, 1);
      continue;
    }
    std::cout << file << ": " << OkLine(*replayed) << "\n";
  }
  return exit_status;
}

}  // namespace strata
