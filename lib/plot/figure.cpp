#include "plot/figure.h"

#ifdef SALT_HAVE_CAIRO
#include <cairo.h>
#endif

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "plot/canvas.h"

namespace salt::plot {
namespace fs = std::filesystem;

Colour cycle_colour(int i) {
  static const Colour kTab10[] = {{0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173},
                                  {0.839, 0.153, 0.157}, {0.580, 0.404, 0.741}, {0.549, 0.337, 0.294},
                                  {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498}, {0.737, 0.741, 0.133},
                                  {0.090, 0.745, 0.812}};
  return kTab10[((i % 10) + 10) % 10];
}

std::vector<double> linear_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(target, 1);
  const int exponent = static_cast<int>(std::floor(std::log10(raw)));
  const double power = std::pow(10.0, exponent);
  int mantissa = 10;
  for (int m : {1, 2, 5})
    if (m * power >= raw) {
      mantissa = m;
      break;
    }
  // tick k is k * mantissa * 10^exponent, computed as one rounding (a division for
  // negative exponents), so 0.7 is 0.7 and not 0.7000000000000001.
  const auto value = [&](int64_t k) {
    const double n = static_cast<double>(k * mantissa);
    return exponent >= 0 ? n * std::pow(10.0, exponent) : n / std::pow(10.0, -exponent);
  };
  const double step = mantissa * power;
  std::vector<double> ticks;
  for (auto k = static_cast<int64_t>(std::ceil(lo / step - 1e-9)); value(k) <= hi + step * 1e-9; ++k) ticks.push_back(value(k));
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi, int max_labels) {
  std::vector<double> ticks;
  const int first = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
  const int count = last - first + 1, most = std::max(max_labels, 1);
  const int every = (count + most - 1) / most;
  for (int k = first; k <= last; k += every) ticks.push_back(std::pow(10.0, k));
  return ticks;
}

std::string power_of_ten_label(double value) {
  const int k = static_cast<int>(std::lround(std::log10(value)));
  if (k == 0) return "1";
  if (k == 1) return "10";
  static const char* kDigits[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
  std::string out = "10";
  if (k < 0) out += "⁻";
  for (char c : std::to_string(std::abs(k))) out += kDigits[c - '0'];
  return out;
}

#ifdef SALT_HAVE_CAIRO
namespace {

using detail::kHeight;
using detail::kWidth;
constexpr double kLeft = 72, kRight = 18, kTop = 16, kBottom = 52;
constexpr double kFont = 13;

std::string number_label(double v, double step) {
  char buf[32];
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  std::snprintf(buf, sizeof buf, "%.*f", std::min(decimals, 6), v);
  return buf;
}

struct Range {
  double lo = 0, hi = 0;
};

// Axis transform: data -> design units, y through log10 on a log axis.
struct Frame {
  Range x, y;  // in log10 units on a log axis
  bool log_x = false, log_y = false;
  double left = kLeft, right = kWidth - kRight, top = kTop, bottom = kHeight - kBottom;
  bool usable(double xv, double yv) const {
    return std::isfinite(xv) && std::isfinite(yv) && (!log_x || xv > 0) && (!log_y || yv > 0);
  }
  double px(double xv) const {
    const double t = log_x ? std::log10(xv) : xv;
    return left + (t - x.lo) / (x.hi - x.lo) * (right - left);
  }
  double py(double yv) const {
    const double t = log_y ? std::log10(yv) : yv;
    return bottom - (t - y.lo) / (y.hi - y.lo) * (bottom - top);
  }
};

Range data_range(const Figure& f, bool x_axis) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : f.series) {
    const auto scan = [&](const std::vector<double>& ys) {
      for (std::size_t i = 0; i < ys.size() && i < s.x.size(); ++i) {
        const double v = x_axis ? s.x[i] : ys[i];
        const bool log_axis = x_axis ? f.log_x : f.log_y;
        if (!std::isfinite(v) || (log_axis && v <= 0) || !std::isfinite(x_axis ? ys[i] : s.x[i])) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    };
    // The central values set the range; a band reaching far out (a rejection
    // measured on one passing jet has an uncertainty as large as itself) is clipped.
    scan(s.y);
  }
  if (!std::isfinite(lo)) return {0, 1};
  return {lo, hi};
}

// `header`: design units at the top of the axes taken by the text and the legend;
// the data are drawn below it.
Frame make_frame(const Figure& f, double header) {
  Frame fr;
  fr.log_y = f.log_y;
  fr.log_x = f.log_x;
  fr.x = f.x_min < f.x_max ? Range{f.x_min, f.x_max} : data_range(f, true);
  if (f.log_x) {  // whole decades at both ends
    const double lo = std::max(fr.x.lo, 1e-300), hi = std::max(fr.x.hi, lo);
    fr.x = {std::floor(std::log10(lo)), std::ceil(std::log10(hi))};
  } else if (!(f.x_min < f.x_max)) {
    const double pad = (fr.x.hi - fr.x.lo) * 0.02;  // markers at the ends stay whole
    fr.x = {fr.x.lo - pad, fr.x.hi + pad};
  }
  Range y = f.y_min < f.y_max ? Range{f.y_min, f.y_max} : data_range(f, false);
  if (f.log_y) {
    y.lo = std::max(y.lo, 1e-12);
    y.hi = std::max(y.hi, y.lo);
    fr.y = {std::floor(std::log10(y.lo)), std::log10(y.hi) + 0.1};  // whole decades below
  } else {
    const double pad = (y.hi > y.lo ? y.hi - y.lo : std::max(std::abs(y.hi), 1.0)) * 0.05;
    fr.y = {y.lo - pad, y.hi + pad};
  }
  if (!(fr.x.hi > fr.x.lo)) fr.x = {fr.x.lo - 0.5, fr.x.lo + 0.5};
  if (!(fr.y.hi > fr.y.lo)) fr.y = {fr.y.lo - 0.5, fr.y.lo + 0.5};
  if (!(f.y_min < f.y_max)) {
    const double height = fr.bottom - fr.top, free = std::max(height - header, height * 0.3);
    fr.y.hi = fr.y.lo + (fr.y.hi - fr.y.lo) * height / free;
  }
  return fr;
}

void set_colour(cairo_t* cr, const Colour& c, double alpha = 1) { cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha); }

void show_text(cairo_t* cr, const std::string& s, double x, double y, double align_x, double align_y) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_move_to(cr, x - e.x_advance * align_x, y + e.height * align_y);
  cairo_show_text(cr, s.c_str());
}

// Runs of consecutive drawable points: a NaN or a non-positive value on a log axis
// breaks a line (or a band) instead of drawing it to a wrong place.
void for_each_run(std::size_t n, const std::function<bool(std::size_t)>& ok,
                  const std::function<void(std::size_t, std::size_t)>& run) {
  std::size_t i = 0;
  while (i < n) {
    while (i < n && !ok(i)) ++i;
    std::size_t j = i;
    while (j < n && ok(j)) ++j;
    if (j > i) run(i, j);
    i = j;
  }
}

void draw_series(cairo_t* cr, const Frame& fr, const Series& s) {
  const std::size_t n = std::min(s.x.size(), s.y.size());
  if (s.y_low.size() >= n && s.y_high.size() >= n && n > 0) {
    for_each_run(
        n, [&](std::size_t i) { return fr.usable(s.x[i], s.y_low[i]) && fr.usable(s.x[i], s.y_high[i]); },
        [&](std::size_t a, std::size_t b) {
          cairo_move_to(cr, fr.px(s.x[a]), fr.py(s.y_low[a]));
          for (std::size_t i = a + 1; i < b; ++i) cairo_line_to(cr, fr.px(s.x[i]), fr.py(s.y_low[i]));
          for (std::size_t i = b; i-- > a;) cairo_line_to(cr, fr.px(s.x[i]), fr.py(s.y_high[i]));
          cairo_close_path(cr);
          set_colour(cr, s.colour, 0.25);
          cairo_fill(cr);
        });
  }
  set_colour(cr, s.colour);
  cairo_set_line_width(cr, s.width);
  const double dash[] = {6, 4};
  cairo_set_dash(cr, dash, s.dashed ? 2 : 0, 0);
  for_each_run(
      n, [&](std::size_t i) { return fr.usable(s.x[i], s.y[i]); },
      [&](std::size_t a, std::size_t b) {
        cairo_move_to(cr, fr.px(s.x[a]), fr.py(s.y[a]));
        for (std::size_t i = a + 1; i < b; ++i) cairo_line_to(cr, fr.px(s.x[i]), fr.py(s.y[i]));
        cairo_stroke(cr);
      });
  cairo_set_dash(cr, nullptr, 0, 0);
  if (s.markers)
    for (std::size_t i = 0; i < n; ++i)
      if (fr.usable(s.x[i], s.y[i])) {
        cairo_arc(cr, fr.px(s.x[i]), fr.py(s.y[i]), 3.2, 0, 2 * M_PI);
        cairo_fill(cr);
      }
}

void draw_axes(cairo_t* cr, const Figure& f, const Frame& fr) {
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, fr.left, fr.top, fr.right - fr.left, fr.bottom - fr.top);
  cairo_stroke(cr);
  cairo_set_font_size(cr, kFont);
  // x: ticks inside the frame, labels below (ATLAS style).
  const auto xt = f.log_x ? log_ticks(std::pow(10.0, fr.x.lo), std::pow(10.0, fr.x.hi)) : linear_ticks(fr.x.lo, fr.x.hi);
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 1;
  for (double t : xt) {
    const double x = fr.px(t);
    cairo_move_to(cr, x, fr.bottom);
    cairo_line_to(cr, x, fr.bottom - 6);
    cairo_move_to(cr, x, fr.top);
    cairo_line_to(cr, x, fr.top + 6);
    cairo_stroke(cr);
    show_text(cr, f.log_x ? power_of_ten_label(t) : number_label(t, xstep), x, fr.bottom + 8, 0.5, 1);
  }
  // y: linear ticks, or decades with minor ticks at 2..9.
  std::vector<double> yt;
  if (f.log_y) {
    yt = log_ticks(std::pow(10.0, fr.y.lo), std::pow(10.0, fr.y.hi));
    for (int k = static_cast<int>(fr.y.lo); k < static_cast<int>(fr.y.hi); ++k)
      for (int m = 2; m <= 9; ++m) {
        const double y = fr.py(m * std::pow(10.0, k));
        cairo_move_to(cr, fr.left, y);
        cairo_line_to(cr, fr.left + 3, y);
        cairo_stroke(cr);
      }
  } else {
    yt = linear_ticks(fr.y.lo, fr.y.hi);
  }
  const double ystep = yt.size() > 1 ? yt[1] - yt[0] : 1;
  for (double t : yt) {
    const double y = fr.py(t);
    cairo_move_to(cr, fr.left, y);
    cairo_line_to(cr, fr.left + 6, y);
    cairo_move_to(cr, fr.right, y);
    cairo_line_to(cr, fr.right - 6, y);
    cairo_stroke(cr);
    show_text(cr, f.log_y ? power_of_ten_label(t) : number_label(t, ystep), fr.left - 6, y, 1, 0.5);
  }
  cairo_set_font_size(cr, kFont + 1);
  show_text(cr, f.x_label, fr.right, kHeight - 10, 1, 0);
  cairo_save(cr);
  cairo_move_to(cr, 0, 0);
  cairo_translate(cr, 18, fr.top);
  cairo_rotate(cr, -M_PI / 2);
  show_text(cr, f.y_label, 0, 0, 1, 0);
  cairo_restore(cr);
}

// Where the text (top left) and the legend (top right) go: side by side when they
// fit, else the legend below the text.
struct Header {
  double text_y = 0, legend_x = 0, legend_y = 0, bottom = 0;
};

double text_width(cairo_t* cr, const std::string& s) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
}

constexpr double kLine = kFont + 6, kSample = 28, kGap = 8;

Header layout_header(cairo_t* cr, const Figure& f) {
  cairo_set_font_size(cr, kFont);
  const double left = kLeft + 12, right = kWidth - kRight - 12;
  double text_w = 0, legend_w = 0;
  int legend_rows = 0;
  for (const auto& line : f.text) text_w = std::max(text_w, text_width(cr, line));
  for (const auto& s : f.series)
    if (!s.label.empty()) legend_w = std::max(legend_w, text_width(cr, s.label)), ++legend_rows;
  Header h;
  h.text_y = kTop + 20;
  const double text_bottom = kTop + 8 + kLine * static_cast<double>(f.text.size());
  h.legend_x = right - legend_w - kSample - kGap;
  const bool side_by_side = left + text_w + 24 < h.legend_x;
  h.legend_y = side_by_side || f.text.empty() ? kTop + 14 : text_bottom + 10;
  const double legend_bottom = h.legend_y - 6 + kLine * legend_rows;
  h.bottom = std::max(f.text.empty() ? kTop : text_bottom, legend_rows ? legend_bottom : kTop) + 6 - kTop;
  return h;
}

void draw_legend_and_text(cairo_t* cr, const Figure& f, const Header& h) {
  cairo_set_font_size(cr, kFont);
  double y = h.text_y;
  for (const auto& line : f.text) {
    cairo_set_source_rgb(cr, 0, 0, 0);
    show_text(cr, line, kLeft + 12, y, 0, 0);
    y += kLine;
  }
  y = h.legend_y;
  for (const auto& s : f.series) {
    if (s.label.empty()) continue;
    const double x = h.legend_x;
    set_colour(cr, s.colour);
    cairo_set_line_width(cr, s.width);
    const double dash[] = {6, 4};
    cairo_set_dash(cr, dash, s.dashed ? 2 : 0, 0);
    cairo_move_to(cr, x, y);
    cairo_line_to(cr, x + kSample, y);
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
    if (!s.y_low.empty()) {
      set_colour(cr, s.colour, 0.25);
      cairo_rectangle(cr, x, y - 5, kSample, 10);
      cairo_fill(cr);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    show_text(cr, s.label, x + kSample + kGap, y, 0, 0.5);
    y += kLine;
  }
}

void draw(cairo_t* cr, const Figure& f) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  const Header header = layout_header(cr, f);
  const Frame fr = make_frame(f, header.bottom);
  cairo_save(cr);
  cairo_rectangle(cr, fr.left, fr.top, fr.right - fr.left, fr.bottom - fr.top);
  cairo_clip(cr);
  for (const auto& s : f.series) draw_series(cr, fr, s);
  cairo_restore(cr);
  draw_axes(cr, f, fr);
  draw_legend_and_text(cr, f, header);
}

}  // namespace

std::vector<fs::path> save(const Figure& figure, const fs::path& stem) {
  return detail::save_drawing([&](cairo_t* cr) { draw(cr, figure); }, stem);
}
#else
std::vector<fs::path> save(const Figure& figure, const fs::path& stem) {
  return detail::save_drawing([](cairo_t*) {}, stem);  // says that cairo is missing
}
#endif

}  // namespace salt::plot
