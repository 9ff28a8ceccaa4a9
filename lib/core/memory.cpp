#include "core/memory.h"

#include <fstream>
#include <string>

namespace salt {
namespace {

double status_field_mb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stod(line.substr(field.size() + 1)) / 1024.0;  // kB
  return 0;
}

}  // namespace

double peak_rss_mb() { return status_field_mb("VmHWM"); }
double current_rss_mb() { return status_field_mb("VmRSS"); }

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";  // Linux >= 4.0: reset the peak resident set size
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace salt
