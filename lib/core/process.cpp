#include "core/process.h"

#include <fmt/format.h>
#include <signal.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

namespace salt {

unsigned long long process_start(long pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(in, line)) return 0;
  auto close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  // Fields after the command name start at field 3 (state); start time is field 22.
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) return std::stoull(field);
  return 0;
}

bool process_alive(long pid, unsigned long long start) {
  if (pid <= 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  if (start != 0) {
    unsigned long long now = process_start(pid);
    if (now != 0 && now != start) return false;  // pid reused by another process
  }
  return true;
}

}  // namespace salt
