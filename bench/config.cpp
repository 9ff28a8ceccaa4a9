// bench_config: what one config composition costs, as `salt fit` and the config
// fuzz target (tests/fuzz/config_fuzz.cpp) do it: config::resolve of each shipped
// config over base.yaml (compose, validate against the schema, read the typed
// RunConfig), next to the YAML parse alone of the same files in the same run (the
// floor any composition pays) and the ratio. The fuzz target's executions per
// second are bounded by the resolve time (times the sanitizers' slowdown).
//
// Usage: bench_config [--repeat N]   (default 50 per config)
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/compose.h"
#include "config/run_args.h"
#include "core/install_paths.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 50;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) {
      repeat = std::stoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_config [--repeat N]\n");
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  const fs::path configs = salt::build_source_dir() / "configs";
  const std::string base = salt::config::find_base_config();
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(configs))
    if (e.path().extension() == ".yaml" && e.path().filename() != "base.yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());

  std::printf("bench_config: config::resolve of %zu shipped configs over base.yaml, %d times each\n", files.size(),
              repeat);
  double total_resolve = 0, total_parse = 0;
  int resolved = 0;
  for (const auto& f : files) {
    const std::vector<std::string> args{"-c", f.string()};
    try {
      salt::config::resolve(base, salt::config::parse_run_args("fit", args).ops);
    } catch (const std::exception& e) {
      std::printf("  %-24s skipped: %s\n", f.filename().c_str(), e.what());
      continue;
    }
    const std::string base_text = read_text(base), text = read_text(f);
    auto t = Clock::now();
    for (int r = 0; r < repeat; ++r) {
      YAML::Node a = YAML::Load(base_text), b = YAML::Load(text);
    }
    const double parse = seconds_since(t) / repeat;
    t = Clock::now();
    for (int r = 0; r < repeat; ++r) salt::config::resolve(base, salt::config::parse_run_args("fit", args).ops);
    const double resolve = seconds_since(t) / repeat;
    std::printf("  %-24s resolve %7.2f ms   parse alone %6.2f ms   ratio %5.1fx\n", f.filename().c_str(),
                resolve * 1e3, parse * 1e3, resolve / parse);
    total_resolve += resolve;
    total_parse += parse;
    ++resolved;
  }
  if (resolved > 0)
    std::printf("  mean                     resolve %7.2f ms   parse alone %6.2f ms   ratio %5.1fx\n",
                total_resolve / resolved * 1e3, total_parse / resolved * 1e3, total_resolve / total_parse);
  return 0;
}
