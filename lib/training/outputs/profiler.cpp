#include "training/outputs/profiler.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/path_join.h"

namespace salt::training {
namespace {

// Python's f"{x:.5}": five significant digits, ".0" kept on whole numbers.
std::string five_digits(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.5g", x);
  std::string s = buf;
  if (s.find_first_of(".einf") == std::string::npos) s += ".0";
  return s;
}

std::string pad(const std::string& s, std::size_t width) { return s.size() >= width ? s : s + std::string(width - s.size(), ' '); }

// Python's str.expandtabs() (tab stops every 8 columns), for the separator's length.
std::size_t expanded_length(const std::string& s) {
  std::size_t col = 0;
  for (char c : s) col = c == '\t' ? (col / 8 + 1) * 8 : c == '\n' ? 0 : col + 1;
  return col;
}

}  // namespace

SimpleProfiler::SimpleProfiler(ProfilerConfig config) : config_(std::move(config)), start_(std::chrono::steady_clock::now()) {}

void SimpleProfiler::record(const std::string& action, double seconds) {
  auto [it, inserted] = durations_.try_emplace(action);
  if (inserted) order_.push_back(action);
  it->second.total += seconds;
  ++it->second.calls;
}

SimpleProfiler::Scope::Scope(SimpleProfiler* p, std::string_view action)
    : p_(p), action_(p ? std::string(action) : std::string()) {
  if (p_) start_ = std::chrono::steady_clock::now();
}

SimpleProfiler::Scope::~Scope() {
  if (p_) p_->record(action_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

std::string SimpleProfiler::summary() const {
  const double run = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string out = "FIT Profiler Report\n";
  if (durations_.empty()) return out;
  std::size_t key = 0;
  for (const auto& a : order_) key = std::max(key, a.size());
  auto row = [&](const std::string& action, const std::string& mean, const std::string& calls, const std::string& total,
                 const std::string& share) {
    if (!config_.extended) return "\n|  " + pad(action, key) + "\t|  " + pad(mean, 15) + "\t|  " + pad(total, 15) + "\t|";
    return "\n|  " + pad(action, key) + "\t|  " + pad(mean, 15) + "\t|  " + pad(calls, 15) + "\t|  " + pad(total, 15) +
           "\t|  " + pad(share, 15) + "\t|";
  };
  const auto header = row("Action", "Mean duration (s)", "Num calls", "Total time (s)", "Percentage %");
  const auto line = "\n" + std::string(expanded_length(header), '-');
  out += line + header + line;
  std::vector<std::string> actions = order_;
  std::stable_sort(actions.begin(), actions.end(),
                   [&](const auto& a, const auto& b) { return durations_.at(a).total > durations_.at(b).total; });
  if (config_.extended) {
    int64_t calls = 0;
    for (const auto& [a, d] : durations_) calls += d.calls;
    out += row("Total", "-", std::to_string(calls), five_digits(run), "100 %") + line;
  }
  for (const auto& a : actions) {
    const auto& d = durations_.at(a);
    out += row(a, five_digits(d.total / static_cast<double>(d.calls)), std::to_string(d.calls), five_digits(d.total),
               five_digits(100.0 * d.total / run));
  }
  return out + line + "\n";
}

std::filesystem::path SimpleProfiler::report(const std::filesystem::path& run_dir) const {
  const auto text = summary();
  std::cerr << text;
  if (run_dir.empty() && !config_.dirpath) return {};
  const std::filesystem::path dir = config_.dirpath ? std::filesystem::path(*config_.dirpath) : run_dir;
  const auto path = join_below(dir, config::profiler_report_name(config_), "'trainer.profiler' filename");
  std::filesystem::create_directories(path.parent_path());  // filename may name folders below dirpath
  write_file_atomic(path, text);
  return path;
}

}  // namespace salt::training
