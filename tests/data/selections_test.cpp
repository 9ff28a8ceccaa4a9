// ftag's cut strings (data/cuts.h) and data.selections in the reader: a valid track
// failing a cut is masked out, as ftag's TrackSelector does in salt.
#include <gtest/gtest.h>

#include "support/one_line_error.h"

#include <cmath>
#include <functional>

#include "core/errors.h"
#include "data/cuts.h"
#include "data/data_config.h"
#include "data/h5_reader.h"
#include "h5_test_files.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

namespace fs = std::filesystem;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "'" << (haystack) << "' lacks '" << (needle) << "'"

std::string parse_error(const std::string& text) {
  try {
    parse_cut(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' parsed";
  return "";
}

TEST(Cuts, Parse) {
  Cut c = parse_cut("d0 < 3.5");
  EXPECT_EQ(c.variable, "d0");
  EXPECT_EQ(c.op, "<");
  ASSERT_EQ(c.values.size(), 1u);
  EXPECT_FALSE(c.values[0].is_int);
  EXPECT_EQ(c.values[0].d, 3.5);

  c = parse_cut("R10TruthLabel_R22v1 in (1,6,7)");
  EXPECT_EQ(c.op, "in");
  ASSERT_EQ(c.values.size(), 3u);
  EXPECT_TRUE(c.values[2].is_int);
  EXPECT_EQ(c.values[2].i, 7);

  c = parse_cut("eventNumber %10== 3");
  EXPECT_EQ(c.modulus, 10);
  EXPECT_EQ(c.op, "==");

  EXPECT_EQ(parse_cut("x notin [0,-99]").values[1].i, -99);
  EXPECT_EQ(parse_cut("x == 1_000").values[0].i, 1000);
  EXPECT_TRUE(parse_cut("x <= 1e3").values[0].d == 1000.0);
  EXPECT_TRUE(std::isinf(parse_cut("x < -inf").values[0].d));
}

TEST(Cuts, ParseErrors) {
  EXPECT_CONTAINS(parse_error("d0<3.5"), "<variable> <operator> <value>");
  EXPECT_CONTAINS(parse_error("d0 < 3.5 1"), "<variable> <operator> <value>");
  EXPECT_CONTAINS(parse_error("d0 << 3"), "unknown operator '<<'");
  EXPECT_CONTAINS(parse_error("x %1== 0"), "unknown operator");
  EXPECT_CONTAINS(parse_error("d0 < abc"), "'abc' is not a number");
  EXPECT_CONTAINS(parse_error("d0 < 0x10"), "not a number");
  EXPECT_CONTAINS(parse_error("d0 > nan"), "'nan' only makes sense");
  EXPECT_CONTAINS(parse_error("d0 < (1,2)"), "needs the operator 'in' or 'notin'");
  EXPECT_CONTAINS(parse_error("d0 in (1,2"), "not closed");
}

TEST(Cuts, Semantics) {
  using K = ColumnKind;
  auto f = CutNumber::of_float;
  auto i = CutNumber::of_int;
  // numpy compares a float32 column in float32: float32(0.1) <= 0.1 holds.
  EXPECT_TRUE(parse_cut("x <= 0.1").passes(f(static_cast<float>(0.1)), K::Float));
  EXPECT_FALSE(parse_cut("x <= 0.1").passes(f(static_cast<float>(0.1)), K::Double));
  // An int column against a float value compares as float64.
  EXPECT_FALSE(parse_cut("n >= 1.5").passes(i(1), K::Int));
  EXPECT_TRUE(parse_cut("n >= 1.5").passes(i(2), K::Int));
  EXPECT_TRUE(parse_cut("n == 2.0").passes(i(2), K::Int));
  // NaN fails every comparison but != (numpy), and "== nan" tests for NaN (ftag).
  const double nan = std::nan("");
  EXPECT_FALSE(parse_cut("d0 < 3.5").passes(f(nan), K::Float));
  EXPECT_TRUE(parse_cut("d0 != 3.5").passes(f(nan), K::Float));
  EXPECT_TRUE(parse_cut("d0 == nan").passes(f(nan), K::Float));
  EXPECT_FALSE(parse_cut("d0 != nan").passes(f(nan), K::Float));
  EXPECT_TRUE(parse_cut("d0 != nan").passes(f(1.0), K::Float));
  // Python's modulo takes the divisor's sign: -3 % 10 == 7.
  EXPECT_TRUE(parse_cut("e %10== 7").passes(i(-3), K::Int));
  EXPECT_TRUE(parse_cut("e %4<= 1").passes(f(-3.5), K::Double));  // -3.5 % 4 = 0.5
  EXPECT_FALSE(parse_cut("e %4<= 1").passes(f(6.5), K::Double));
  EXPECT_TRUE(parse_cut("t in (1,6,7)").passes(i(6), K::Int));
  EXPECT_FALSE(parse_cut("t in (1,6,7)").passes(i(2), K::Int));
  EXPECT_TRUE(parse_cut("t notin (0,-99)").passes(i(2), K::Int));
  EXPECT_FALSE(parse_cut("t notin (0,-99)").passes(i(-99), K::Int));
}

// --- data.selections on a real file --------------------------------------------------------

constexpr int64_t kRows = 7;
constexpr int64_t kSlots = 5;

bool file_valid(int64_t r, int64_t s) { return s < 4 && !(r == 2 && s == 1); }
double d0_of(int64_t r, int64_t s) { return (r + s) % 3 == 0 ? 5.0 : 1.0 + s; }  // fails d0 < 3.5 at 5.0, 3.0+1
int64_t pix_shared(int64_t r, int64_t s) { return (r * s) % 2; }
int64_t sct_shared(int64_t r, int64_t s) { return (r + 2 * s) % 3; }  // NSHARED = pix + sct / 2

bool passes_both(int64_t r, int64_t s) {
  return d0_of(r, s) < 3.5 && pix_shared(r, s) + sct_shared(r, s) / 2.0 < 1.1;
}

double file_value(int64_t r, int64_t s, const std::string& name) {
  if (name == "valid") return file_valid(r, s);
  if (name == "d0") return d0_of(r, s);
  if (name == "numberOfPixelSharedHits") return pix_shared(r, s);
  if (name == "numberOfSCTSharedHits") return sct_shared(r, s);
  if (name == "origin") return 2;
  if (name == "u_label") return 3;
  if (name == "flt_label") return 0.25 * s;
  return r;  // jets' pt and labels
}

fs::path write_file(const fs::path& path) {
  h5::File f = h5::File::create(path);
  testfiles::write_dataset(f, "jets", {{"pt", h5::kF4}, {"flavour_label", h5::kI4}}, kRows, 0, file_value);
  testfiles::write_dataset(f, "tracks",
                           {{"d0", h5::kF4}, {"numberOfPixelSharedHits", h5::kU1}, {"numberOfSCTSharedHits", h5::kU1},
                            {"valid", h5::kBool}, {"origin", h5::kI1}, {"u_label", h5::kU1}, {"flt_label", h5::kF4}},
                           kRows, kSlots, file_value);
  return path;
}

ReaderOptions options(std::vector<std::string> cuts) {
  ReaderOptions o;
  o.set_variables({{"jets", {"pt"}}, {"tracks", {"d0"}}})
      .set_labels({{"tracks", {"origin", "u_label", "flt_label"}}})
      .set_selections({{"tracks", std::move(cuts)}});
  return o;
}

TEST(Selections, MaskTracksFailingACut) {
  salt::testing::TempDir dir;
  const fs::path path = write_file(dir / "f.h5");
  H5Reader reader(path, options({"d0 < 3.5", "NSHARED < 1.1"}));
  Batch b = reader.read(0, kRows);
  auto mask = b.pad_masks.at("tracks");
  auto x = b.inputs.at("tracks");
  auto origin = b.labels.at("tracks").at("origin");
  auto u = b.labels.at("tracks").at("u_label");
  auto flt = b.labels.at("tracks").at("flt_label");
  int removed = 0, kept = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t s = 0; s < kSlots; ++s) {
      const bool valid = file_valid(r, s);
      const bool cut = valid && !passes_both(r, s);
      removed += cut;
      kept += valid && !cut;
      ASSERT_EQ(mask[r][s].item<bool>(), !valid || cut) << r << "," << s;
      ASSERT_EQ(x[r][s][0].item<float>(), valid && !cut ? d0_of(r, s) : 0.0f);
      // ftag's TrackSelector: signed ints -1, unsigned 0, floats NaN on removed tracks;
      // slots padded in the file keep the file's values.
      ASSERT_EQ(origin[r][s].item<int64_t>(), cut ? -1 : 2);
      ASSERT_EQ(u[r][s].item<int64_t>(), cut ? 0 : 3);
      if (cut)
        ASSERT_TRUE(std::isnan(flt[r][s].item<float>()));
      else
        ASSERT_EQ(flt[r][s].item<float>(), 0.25f * s);
    }
  }
  EXPECT_GT(removed, 5);  // the file exercises both cuts and keeps some tracks
  EXPECT_GT(kept, 5);

  // Truncation (num_inputs) after selection gives the same first slots.
  auto o = options({"d0 < 3.5", "NSHARED < 1.1"});
  o.set_num_inputs({{"tracks", 2}});
  Batch t = H5Reader(path, o).read(0, kRows);
  EXPECT_TRUE(t.pad_masks.at("tracks").equal(mask.narrow(1, 0, 2)));
}

TEST(Selections, CutVariablesNeedNotBeInputs) {
  salt::testing::TempDir dir;
  const fs::path path = write_file(dir / "f.h5");
  Batch b = H5Reader(path, options({"numberOfSCTSharedHits == 0"})).read(0, kRows);
  auto mask = b.pad_masks.at("tracks");
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t s = 0; s < kSlots; ++s)
      ASSERT_EQ(mask[r][s].item<bool>(), !file_valid(r, s) || sct_shared(r, s) != 0);
}


TEST(Selections, Errors) {
  salt::testing::TempDir dir;
  const fs::path path = write_file(dir / "f.h5");
  std::string msg = salt::testing::one_line_error_of([&] { H5Reader(path, options({"d0 < 3.5", "NSHARED<1.1"})); });
  EXPECT_CONTAINS(msg, "data.selections.tracks[1]");
  EXPECT_CONTAINS(msg, "'NSHARED<1.1'");
  EXPECT_CONTAINS(msg, path.string());

  msg = salt::testing::one_line_error_of([&] { H5Reader(path, options({"z0 < 1"})); });
  EXPECT_CONTAINS(msg, "data.selections.tracks[0]");
  EXPECT_CONTAINS(msg, "'z0 < 1'");
  EXPECT_CONTAINS(msg, "'z0', which is missing from");
  EXPECT_CONTAINS(msg, path.string());

  auto o = options({});
  o.set_selections({{"jets", {"pt > 1"}}});
  EXPECT_CONTAINS(salt::testing::one_line_error_of([&] { H5Reader(path, o); }), "data.selections.jets: selections apply to constituents");
  o.set_selections({{"flows", {"pt > 1"}}});
  EXPECT_CONTAINS(salt::testing::one_line_error_of([&] { H5Reader(path, o); }), "data.selections.flows: 'flows' is not an input");
}

TEST(Selections, ConfigKey) {
  DataConfig c = data_config_from_yaml(YAML::Load("selections: {tracks: [d0 < 3.5, NSHARED < 1.1]}"));
  EXPECT_EQ(c.selections["tracks"], (std::vector<std::string>{"d0 < 3.5", "NSHARED < 1.1"}));
  EXPECT_TRUE(data_config_from_yaml(YAML::Load("selections: null")).selections.empty());
}

}  // namespace
}  // namespace salt::data
