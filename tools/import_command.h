// `strata import FILE [--dump NAME [--data]]` (shared/design/
// representation-cli.md, the `strata import` rows and "Checkpoints").
#ifndef STRATA_TOOLS_IMPORT_COMMAND_H_
#define STRATA_TOOLS_IMPORT_COMMAND_H_

#include <string>
#include <vector>

namespace strata {

// Runs `strata import` with the arguments after "import"; returns the exit
// status: 0 every tensor imported (or the dump was printed), 1 a tensor was
// refused (or the dumped name is not in the file, or refused), 2 an
// unreadable file or one that is not a safetensors file; 2 with the usage on
// standard error for arguments of another form.
int ImportCommand(const std::vector<std::string>& args);

}  // namespace strata

#endif  // STRATA_TOOLS_IMPORT_COMMAND_H_
