// Inside lib/plot: a drawing function turned into files or PNG bytes. Every
// picture is drawn in points on a kWidth x kHeight page (8 x 6 in): the PDF is
// that page, the PNG the same drawing at 1200 x 900 pixels.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

typedef struct _cairo cairo_t;  // cairo's own declaration, so this header needs no cairo

namespace salt::plot::detail {

inline constexpr double kWidth = 576, kHeight = 432;
inline constexpr int kPngWidth = 1200, kPngHeight = 900;

using Draw = std::function<void(cairo_t*)>;

// Writes `<stem>.png` and `<stem>.pdf`, each through a temp name and a rename.
// InputError naming the file when one cannot be written, or without cairo.
std::vector<std::filesystem::path> save_drawing(const Draw& draw, const std::filesystem::path& stem);

// The PNG file's bytes (for TensorBoard's image summaries).
std::string png_bytes(const Draw& draw);

}  // namespace salt::plot::detail
