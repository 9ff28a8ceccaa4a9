#include "plot/canvas.h"

#ifdef SALT_HAVE_CAIRO
#include <cairo-pdf.h>
#include <cairo.h>
#endif

#include <memory>

#include "core/atomic_file.h"
#include "core/errors.h"

namespace salt::plot::detail {
namespace fs = std::filesystem;

#ifdef SALT_HAVE_CAIRO
namespace {

using SurfacePtr = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using ContextPtr = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

void check(cairo_status_t status, const std::string& shown) {
  if (status != CAIRO_STATUS_SUCCESS) throw InputError("cannot write " + shown + ": " + cairo_status_to_string(status));
}

SurfacePtr draw_png(const Draw& draw, const std::string& shown) {
  SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, kPngWidth, kPngHeight), cairo_surface_destroy);
  ContextPtr cr(cairo_create(surface.get()), cairo_destroy);
  cairo_scale(cr.get(), kPngWidth / kWidth, kPngHeight / kHeight);
  draw(cr.get());
  check(cairo_status(cr.get()), shown);
  return surface;
}

void write_pdf(const Draw& draw, const fs::path& tmp, const fs::path& shown) {
  SurfacePtr surface(cairo_pdf_surface_create(tmp.c_str(), kWidth, kHeight), cairo_surface_destroy);
  {
    ContextPtr cr(cairo_create(surface.get()), cairo_destroy);
    draw(cr.get());
    check(cairo_status(cr.get()), shown.string());
  }
  cairo_surface_finish(surface.get());  // writes the file; errors show in the status
  check(cairo_surface_status(surface.get()), shown.string());
}

cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

std::vector<fs::path> save_drawing(const Draw& draw, const fs::path& stem) {
  const fs::path png = stem.string() + ".png", pdf = stem.string() + ".pdf";
  write_via_temp(png, [&](const fs::path& tmp) {
    check(cairo_surface_write_to_png(draw_png(draw, png.string()).get(), tmp.c_str()), png.string());
  });
  write_via_temp(pdf, [&](const fs::path& tmp) { write_pdf(draw, tmp, pdf); });
  return {png, pdf};
}

std::string png_bytes(const Draw& draw) {
  std::string bytes;
  check(cairo_surface_write_to_png_stream(draw_png(draw, "a PNG image").get(), append, &bytes), "a PNG image");
  return bytes;
}
#else
std::vector<fs::path> save_drawing(const Draw&, const fs::path& stem) {
  throw InputError("cannot draw " + stem.string() + ".png: salt-cpp was built without cairo (Debian libcairo2-dev)");
}
std::string png_bytes(const Draw&) {
  throw InputError("cannot draw a picture: salt-cpp was built without cairo (Debian libcairo2-dev)");
}
#endif

}  // namespace salt::plot::detail
