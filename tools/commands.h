// The strata commands, one file each (tools/NAME_command.cc); main
// (strata_main.cc) dispatches on the first argument. Each takes the
// arguments after the command's name and returns the exit status
// (representation-cli.md, layout-cli.md, formats.md).
#ifndef STRATA_TOOLS_COMMANDS_H_
#define STRATA_TOOLS_COMMANDS_H_

#include <string>
#include <vector>

namespace strata {

int LayoutCommand(const std::vector<std::string>& args);
int DumpCommand(const std::vector<std::string>& args);
int ValidateCommand(const std::vector<std::string>& files);
int ViewCommand(const std::vector<std::string>& args);
int QuantizeCommand(const std::vector<std::string>& args);

}  // namespace strata

#endif  // STRATA_TOOLS_COMMANDS_H_
