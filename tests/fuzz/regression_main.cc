// Runs a fuzz target's LLVMFuzzerTestOneInput over every file of the
// directories given as arguments: seed corpora and kept crash inputs, as an
// ordinary (gcc-built) test.
#include <dirent.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  int files = 0;
  for (int a = 1; a < argc; ++a) {
    DIR* dir = opendir(argv[a]);
    if (dir == nullptr) {  // No kept crash inputs yet: nothing in runfiles.
      std::fprintf(stderr, "no inputs in %s\n", argv[a]);
      continue;
    }
    std::vector<std::string> names;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(dir);
    for (const std::string& name : names) {
      std::ifstream in(std::string(argv[a]) + "/" + name, std::ios::binary);
      std::stringstream buffer;
      buffer << in.rdbuf();
      const std::string bytes = buffer.str();
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                             bytes.size());
      ++files;
    }
  }
  std::printf("ran %d inputs\n", files);
  return files > 0 ? 0 : 1;
}
