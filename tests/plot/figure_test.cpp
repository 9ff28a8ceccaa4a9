// Figures: axis ticks, and PNG/PDF files that are complete, well-formed and
// written atomically.
#include "plot/figure.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/errors.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

TEST(Figure, LinearTicksAreRoundNumbers) {
  EXPECT_EQ(plot::linear_ticks(0.49, 1.0), (std::vector<double>{0.5, 0.6, 0.7, 0.8, 0.9, 1.0}));
  EXPECT_EQ(plot::linear_ticks(0, 360), (std::vector<double>{0, 100, 200, 300}));
  EXPECT_EQ(plot::linear_ticks(0, 360, 8), (std::vector<double>{0, 50, 100, 150, 200, 250, 300, 350}));
  EXPECT_EQ(plot::linear_ticks(-1, 1, 4), (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
}

TEST(Figure, LogTicksAreDecadesWithSuperscriptLabels) {
  EXPECT_EQ(plot::log_ticks(1, 1e4), (std::vector<double>{1, 10, 100, 1000, 1e4}));
  EXPECT_EQ(plot::log_ticks(0.5, 1e3), (std::vector<double>{1, 10, 100, 1000}));
  EXPECT_EQ(plot::log_ticks(1, 1e12, 4).size(), 4u);  // every 4th decade: 1, 1e4, 1e8, 1e12
  EXPECT_EQ(plot::power_of_ten_label(1000), "10³");
  EXPECT_EQ(plot::power_of_ten_label(0.01), "10⁻²");
  EXPECT_EQ(plot::power_of_ten_label(1), "1");
  EXPECT_EQ(plot::power_of_ten_label(1e12), "10¹²");
}

plot::Figure example() {
  plot::Figure f;
  f.x_label = "x";
  f.y_label = "y";
  f.log_y = true;
  plot::Series s;
  s.label = "curve";
  s.colour = plot::cycle_colour(0);
  for (int i = 0; i <= 10; ++i) {
    s.x.push_back(i);
    s.y.push_back(i == 5 ? std::nan("") : std::pow(10.0, i / 3.0));  // a gap breaks the line
    s.y_low.push_back(s.y.back() * 0.8);
    s.y_high.push_back(s.y.back() * 1.2);
  }
  f.series.push_back(s);
  return f;
}

std::string bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(Figure, SavesAPngOf1200x900AndAOnePagePdf) {
  TempDir dir;
  const auto files = plot::save(example(), dir / "fig");
  ASSERT_EQ(files, (std::vector<fs::path>{dir / "fig.png", dir / "fig.pdf"}));
  const auto png = bytes(dir / "fig.png");
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png.substr(12, 4), "IHDR");
  auto be32 = [&](std::size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  EXPECT_EQ(be32(16), 1200u);
  EXPECT_EQ(be32(20), 900u);
  EXPECT_EQ(png.substr(png.size() - 8, 4), "IEND");
  const auto pdf = bytes(dir / "fig.pdf");
  EXPECT_EQ(pdf.substr(0, 5), "%PDF-");
  EXPECT_NE(pdf.find("/MediaBox [ 0 0 576 432 ]"), std::string::npos);
  EXPECT_NE(pdf.rfind("%%EOF"), std::string::npos);
  // Nothing else: no temp files left.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 2);
}

TEST(Figure, AnUnwritablePlaceIsOneErrorNamingTheFile) {
  TempDir dir;
  write_file(dir / "file", "not a directory");
  try {
    plot::save(example(), dir / "file" / "fig");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "file" / "fig.png").string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace salt::testing
