// A figure with one set of axes: lines, error bands, markers, a legend and
// text, drawn with cairo into PNG (for a quick look) and PDF (vector, for
// notes and papers). Just enough of matplotlib for puma-style rejection curves
// and loss curves; no torch, no HDF5.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace salt::plot {

struct Colour {
  double r = 0, g = 0, b = 0;
};
// matplotlib's default cycle (tab10), so the pictures look like puma's.
Colour cycle_colour(int i);

struct Series {
  std::string label;  // legend entry ("" for none)
  std::vector<double> x, y;
  std::vector<double> y_low, y_high;  // an error band when both are filled
  Colour colour;
  double width = 2.0;
  bool dashed = false;
  bool markers = false;  // a dot at each point (sparse series, e.g. one per epoch)
};

struct Figure {
  std::string x_label, y_label;
  std::vector<std::string> text;  // lines at the top left inside the axes
  bool log_y = false;
  bool log_x = false;  // decades on the x axis (a learning-rate sweep)
  // Axis ranges; when min >= max the range is taken from the data.
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  std::vector<Series> series;
};

// Writes `<stem>.png` and `<stem>.pdf` (each through a temp name and a rename);
// returns both paths. Throws InputError naming the file when one cannot be written.
std::vector<std::filesystem::path> save(const Figure& figure, const std::filesystem::path& stem);

// Ticks for a linear axis between lo and hi: 1, 2 or 5 times a power of ten apart,
// about `target` of them.
std::vector<double> linear_ticks(double lo, double hi, int target = 6);
// Powers of ten within [lo, hi] (lo > 0), thinned to at most `max_labels`.
std::vector<double> log_ticks(double lo, double hi, int max_labels = 8);
// "10³", "10⁻²", "1", "10" for powers of ten.
std::string power_of_ten_label(double value);

}  // namespace salt::plot
