// Helpers for the data-parallel end-to-end tests (waiting with a deadline: fit_support.h): finding
// a launcher's worker processes, comparing checkpoints.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "training/fit_support.h"
#include "training/checkpoints/checkpoint.h"

namespace salt::testing {

// Running (not a zombie, not gone).
inline bool process_alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// The child of `parent` whose environment has RANK=<rank>, or -1.
inline int worker_pid(int parent, int rank) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream status(e.path() / "status");
    std::string line;
    int ppid = -1;
    while (std::getline(status, line))
      if (line.rfind("PPid:", 0) == 0) ppid = std::stoi(line.substr(5));
    if (ppid != parent) continue;
    std::ifstream environ(e.path() / "environ", std::ios::binary);
    std::stringstream ss;
    ss << environ.rdbuf();
    std::string env = ss.str(), var;
    std::istringstream vars(env);
    while (std::getline(vars, var, '\0'))
      if (var == "RANK=" + std::to_string(rank)) return std::stoi(name);
  }
  return -1;
}

// Largest absolute difference between two checkpoints' weights (same keys, in order).
inline double max_weight_diff(const std::filesystem::path& a, const std::filesystem::path& b) {
  auto wa = training::load_checkpoint(a), wb = training::load_checkpoint(b);
  EXPECT_EQ(wa.state_dict.size(), wb.state_dict.size());
  double diff = 0;
  for (std::size_t i = 0; i < wa.state_dict.size() && i < wb.state_dict.size(); ++i) {
    EXPECT_EQ(wa.state_dict[i].first, wb.state_dict[i].first);
    auto d = (wa.state_dict[i].second.to(torch::kDouble) - wb.state_dict[i].second.to(torch::kDouble)).abs().max();
    diff = std::max(diff, d.item<double>());
  }
  return diff;
}

}  // namespace salt::testing
