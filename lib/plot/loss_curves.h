// Training and validation loss curves of a run, from its metrics.csv.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "plot/figure.h"

namespace salt::plot {

// metrics.csv as numbers: one row per line, NaN for an empty cell.
struct MetricsTable {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
  int column(const std::string& name) const;  // -1 if absent
};
// Throws InputError naming the file (and line) when it is missing or malformed.
MetricsTable read_metrics_csv(const std::filesystem::path& path);

// Every `train/...loss` column against `step` as a solid line, its `val/` twin as
// a dashed line with a dot per validation, in the same colour; the total loss first
// and thicker. No series when the table has no step column or no loss.
Figure loss_figure(const MetricsTable& table, const std::vector<std::string>& text);

}  // namespace salt::plot
