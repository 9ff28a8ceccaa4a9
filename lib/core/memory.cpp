#include "core/memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
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
double mapped_data_mb() { return status_field_mb("VmData"); }

void keep_freed_memory() {
  mallopt(M_MMAP_MAX, 0);                     // large blocks from the heap, reused when freed,
  mallopt(M_TRIM_THRESHOLD, 1 << 30);         // and its top given back only past 1 GiB free
}

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";  // Linux >= 4.0: reset the peak resident set size
  out.flush();
  return static_cast<bool>(out);
}

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

std::string bytes_text(double bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  for (; bytes >= 1024 && u < 6; ++u) bytes /= 1024;
  char out[32];
  std::snprintf(out, sizeof out, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return out;
}

bool allocation_failure(const std::string& what, std::string* size) {
  std::smatch m;
  if (what.find("can't allocate memory") != std::string::npos) {
    if (size) {
      static const std::regex bytes_asked("tried to allocate ([0-9]+) bytes");
      *size = std::regex_search(what, m, bytes_asked) ? bytes_text(std::stod(m[1].str())) : "";
    }
    return true;
  }
  if (what.find("out of memory") != std::string::npos) {
    if (size) {
      static const std::regex cuda_asked("Tried to allocate ([0-9.]+ [KMGT]?i?B)");
      *size = std::regex_search(what, m, cuda_asked) ? m[1].str() : "";
    }
    return true;
  }
  return false;
}

}  // namespace salt
