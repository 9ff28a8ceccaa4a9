#include "plot/confusion.h"

#ifdef SALT_HAVE_CAIRO
#include <cairo.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "plot/canvas.h"

namespace salt::plot {
namespace fs = std::filesystem;

int64_t ConfusionMatrix::row_total(std::size_t truth) const {
  int64_t total = 0;
  for (std::size_t p = 0; p < classes.size(); ++p) total += at(truth, p);
  return total;
}

std::string confusion_matrix_markdown(const ConfusionMatrix& m) {
  std::string out = "| true \\\\ predicted |";
  for (const auto& c : m.classes) out += " " + c + " |";
  out += "\n|---|";
  for (std::size_t i = 0; i < m.classes.size(); ++i) out += "---|";
  for (std::size_t t = 0; t < m.classes.size(); ++t) {
    out += "\n| " + m.classes[t] + " |";
    for (std::size_t p = 0; p < m.classes.size(); ++p) out += " " + std::to_string(m.at(t, p)) + " |";
  }
  return out + "\n";
}

namespace {

#ifdef SALT_HAVE_CAIRO
void centred(cairo_t* cr, const std::string& s, double x, double y) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_move_to(cr, x - e.x_advance / 2, y + e.height / 2);
  cairo_show_text(cr, s.c_str());
}

void right_aligned(cairo_t* cr, const std::string& s, double x, double y) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_move_to(cr, x - e.x_advance, y + e.height / 2);
  cairo_show_text(cr, s.c_str());
}

void draw_matrix(cairo_t* cr, const ConfusionMatrix& m, const std::string& title) {
  using detail::kHeight;
  using detail::kWidth;
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  const std::size_t n = std::max<std::size_t>(m.classes.size(), 1);
  const double left = 130, top = 50, bottom = 70;
  const double cell = std::min((kWidth - left - 30) / n, (kHeight - top - bottom) / n);
  const double font = std::clamp(cell / 5, 7.0, 13.0);
  cairo_set_font_size(cr, 14);
  cairo_set_source_rgb(cr, 0, 0, 0);
  centred(cr, title, left + cell * n / 2, 22);
  for (std::size_t t = 0; t < m.classes.size(); ++t) {
    const double total = static_cast<double>(m.row_total(t));
    for (std::size_t p = 0; p < m.classes.size(); ++p) {
      const double frac = total > 0 ? m.at(t, p) / total : 0;
      // matplotlib's "Blues": from almost white to dark blue.
      cairo_set_source_rgb(cr, 0.97 - 0.94 * frac, 0.98 - 0.79 * frac, 1.0 - 0.58 * frac);
      const double x = left + cell * p, y = top + cell * t;
      cairo_rectangle(cr, x, y, cell, cell);
      cairo_fill(cr);
      const double shade = frac > 0.5 ? 1.0 : 0.0;
      cairo_set_source_rgb(cr, shade, shade, shade);
      cairo_set_font_size(cr, font);
      char text[32];
      std::snprintf(text, sizeof text, "%.3f", frac);
      centred(cr, text, x + cell / 2, y + cell / 2 - font * 0.7);
      centred(cr, "(" + std::to_string(m.at(t, p)) + ")", x + cell / 2, y + cell / 2 + font * 0.7);
    }
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, left, top, cell * n, cell * n);
  cairo_stroke(cr);
  cairo_set_font_size(cr, 12);
  for (std::size_t i = 0; i < m.classes.size(); ++i) {
    right_aligned(cr, m.classes[i], left - 8, top + cell * (i + 0.5));
    centred(cr, m.classes[i], left + cell * (i + 0.5), top + cell * n + 14);
  }
  cairo_set_font_size(cr, 14);
  centred(cr, "Predicted class", left + cell * n / 2, top + cell * n + 40);
  cairo_save(cr);
  cairo_translate(cr, 18, top + cell * n / 2);
  cairo_rotate(cr, -M_PI / 2);
  centred(cr, "True class", 0, 0);
  cairo_restore(cr);
}
#endif

detail::Draw drawing(const ConfusionMatrix& m, const std::string& title) {
#ifdef SALT_HAVE_CAIRO
  return [&m, title](cairo_t* cr) { draw_matrix(cr, m, title); };
#else
  return [](cairo_t*) {};
#endif
}

}  // namespace

std::vector<fs::path> save_confusion_matrix(const ConfusionMatrix& m, const std::string& title, const fs::path& stem) {
  return detail::save_drawing(drawing(m, title), stem);
}

std::string confusion_matrix_png(const ConfusionMatrix& m, const std::string& title) {
  return detail::png_bytes(drawing(m, title));
}

}  // namespace salt::plot
