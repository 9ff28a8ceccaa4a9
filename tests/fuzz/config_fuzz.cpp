// libFuzzer target: config composition as `salt fit` does it, from one YAML file
// and command-line tokens. Input: the YAML text, a line "%%", then one token per
// line. Any salt error (UsageError, InputError) is a refusal and fine; a crash, a
// sanitizer report, a hang or any other exception escaping is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/compose.h"
#include "config/run_args.h"
#include "core/errors.h"

namespace {

const std::string& scratch_file() {
  static const std::string path = "/dev/shm/salt-config-fuzz-" + std::to_string(getpid()) + ".yaml";
  return path;
}

void run_one(const std::string& input) {
  const auto split = input.find("\n%%\n");
  const std::string yaml = input.substr(0, split);
  std::vector<std::string> tokens;
  if (split != std::string::npos) {
    std::string rest = input.substr(split + 4), line;
    for (size_t start = 0; start <= rest.size();) {
      const auto end = rest.find('\n', start);
      tokens.push_back(rest.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  std::ofstream(scratch_file(), std::ios::binary | std::ios::trunc) << yaml;
  std::vector<std::string> args{"-c", scratch_file()};
  args.insert(args.end(), tokens.begin(), tokens.end());
  const auto run = salt::config::parse_run_args("fit", args);
  salt::config::resolve(salt::config::find_base_config(), run.ops);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;  // configs are small; big inputs only slow the search
  try {
    run_one(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const salt::UserError&) {
    // a refusal: what bad input should get
  } catch (const std::exception& e) {
    std::fprintf(stderr, "config_fuzz: escaped exception: %s\n", e.what());
    std::abort();
  }
  return 0;
}
