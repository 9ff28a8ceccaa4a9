#include "plot/loss_curves.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/errors.h"

namespace salt::plot {

int MetricsTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

MetricsTable read_metrics_csv(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot read the run's metrics");
  MetricsTable table;
  std::string line;
  if (!std::getline(in, line) || line.empty()) throw InputError(path.string() + ": empty, no header line");
  table.columns = split(line);
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const auto cells = split(line);
    if (cells.size() != table.columns.size())
      throw InputError(path.string() + ":" + std::to_string(n) + ": " + std::to_string(cells.size()) + " cells, the header has " +
                       std::to_string(table.columns.size()));
    std::vector<double> row;
    for (const auto& c : cells) {
      if (c.empty()) {
        row.push_back(std::numeric_limits<double>::quiet_NaN());
        continue;
      }
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(c, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != c.size()) throw InputError(path.string() + ":" + std::to_string(n) + ": '" + c + "' is not a number");
      row.push_back(v);
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

Figure loss_figure(const MetricsTable& table, const std::vector<std::string>& text) {
  Figure f;
  f.x_label = "Training step";
  f.y_label = "Loss";
  f.text = text;
  const int step = table.column("step");
  if (step < 0) return f;
  // Names after "train/" or "val/", the total first (a short run may have logged
  // validation losses only: fewer steps than log_every_n_steps).
  std::vector<std::string> losses;
  const auto add = [&](const std::string& name) {
    if (std::find(losses.begin(), losses.end(), name) == losses.end()) losses.push_back(name);
  };
  if (table.column("train/loss") >= 0 || table.column("val/loss") >= 0) add("loss");
  for (const auto& c : table.columns)
    for (const std::string stage : {"train/", "val/"})
      if (c.rfind(stage, 0) == 0 && ends_with(c, "loss")) add(c.substr(stage.size()));
  int colour = 0;
  for (const auto& name : losses) {
    for (const std::string stage : {"train", "val"}) {
      const int col = table.column(stage + "/" + name);
      if (col < 0) continue;
      Series s;
      s.label = stage + " " + name;
      s.colour = cycle_colour(colour);
      s.width = name == "loss" ? 2.5 : 1.5;
      s.dashed = stage == "val";
      for (const auto& row : table.rows)
        if (std::isfinite(row[col]) && std::isfinite(row[step])) {
          s.x.push_back(row[step]);
          s.y.push_back(row[col]);
        }
      s.markers = s.dashed || s.x.size() < 20;  // a dot per validation, or per point of a short run
      if (!s.x.empty()) f.series.push_back(std::move(s));
    }
    ++colour;
  }
  return f;
}

}  // namespace salt::plot
