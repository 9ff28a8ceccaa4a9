#include "training/outputs/metrics_log.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"

namespace salt::training {

void MetricsLog::log(int64_t epoch, int64_t step, const std::map<std::string, double>& metrics) {
  for (const auto& [name, value] : metrics)
    if (std::find(columns_.begin(), columns_.end(), name) == columns_.end()) columns_.push_back(name);
  rows_.push_back({epoch, step, metrics});
}

void MetricsLog::load_existing() {
  std::ifstream in(path_);
  std::string line;
  if (!in || !std::getline(in, line)) return;
  auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::stringstream ss(text);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (!text.empty() && text.back() == ',') cells.emplace_back();
    return cells;
  };
  auto header = split(line);
  if (header.size() < 2 || header[0] != "epoch" || header[1] != "step") return;
  for (std::size_t i = 2; i < header.size(); ++i)
    if (std::find(columns_.begin(), columns_.end(), header[i]) == columns_.end()) columns_.push_back(header[i]);
  while (std::getline(in, line)) {
    auto cells = split(line);
    if (cells.size() < 2) continue;
    Row row{std::stoll(cells[0]), std::stoll(cells[1]), {}};
    for (std::size_t i = 2; i < cells.size() && i < header.size(); ++i)
      if (!cells[i].empty()) row.values[header[i]] = std::stod(cells[i]);
    rows_.push_back(std::move(row));
  }
}

void MetricsLog::flush() const {
  if (path_.empty()) return;
  std::ostringstream out;
  out.precision(8);
  out << "epoch,step";
  for (const auto& c : columns_) out << "," << c;
  out << "\n";
  for (const auto& row : rows_) {
    out << row.epoch << "," << row.step;
    for (const auto& c : columns_) {
      out << ",";
      auto it = row.values.find(c);
      if (it != row.values.end()) out << it->second;
    }
    out << "\n";
  }
  write_file_atomic(path_, out.str());
}

}  // namespace salt::training
