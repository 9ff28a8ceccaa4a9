// salt compare_models on real HDF5 prediction files with known differences.
#include <gtest/gtest.h>

#include <sstream>

#include "core/errors.h"
#include "data/h5_test_files.h"
#include "deploy/compare_models.h"
#include "support/one_line_error.h"
#include "support/test_support.h"

namespace salt::deploy {
namespace {

namespace h5 = data::h5;
using data::testfiles::write_dataset;

// jets with n_tracks and {tagger}_pb/pc/pu (float32 unless `type` says otherwise).
void write_predictions(const std::filesystem::path& path, const std::string& tagger,
                       const std::function<double(int64_t, const std::string&)>& value, h5::FieldType type = h5::kF4,
                       int64_t rows = 10, const std::string& dataset = "jets") {
  auto file = h5::File::create(path);
  write_dataset(file, dataset,
                {{"n_tracks", h5::kI4}, {tagger + "_pb", type}, {tagger + "_pc", type}, {tagger + "_pu", type}}, rows, 0,
                [&](int64_t row, int64_t, const std::string& f) { return value(row, f); });
  file.close();
}

double base(int64_t row, const std::string& field) {
  if (field == "n_tracks") return row == 9 ? 45 : row;  // the last jet fails the default cut n_tracks <= 40
  return 0.1 + 0.05 * row + (field.back() == 'b' ? 0.0 : field.back() == 'c' ? 0.2 : 0.4);
}

TEST(CompareModels, ReportsMaxMeanAndCountPerProbability) {
  testing::TempDir dir;
  write_predictions(dir / "a.h5", "GN2", base);
  // pc differs by 2e-6 on jets 0 and 1 (about 3e-6 relative: still close), pb not at all.
  write_predictions(dir / "b.h5", "GN2onnx", [](int64_t row, const std::string& f) {
    return base(row, f) + (f.back() == 'c' && row < 2 ? 2e-6 : 0.0);
  });
  CompareOptions o;
  o.file_a = dir / "a.h5";
  o.file_b = dir / "b.h5";
  o.tagger_a = "GN2";
  o.tagger_b = "GN2onnx";
  std::ostringstream out;
  auto result = compare_models(o, out);
  ASSERT_EQ(result.size(), 3u);
  EXPECT_EQ(result[0].var_a, "GN2_pb");
  EXPECT_EQ(result[0].max, 0.0);
  EXPECT_EQ(result[1].above_1e6, 2);
  EXPECT_NEAR(result[1].max, 2e-6, 1e-7);             // float32 rounding of the stored values
  EXPECT_NEAR(result[1].mean, 2 * 2e-6 / 9, 2e-8);    // 9 jets pass n_tracks <= 40
  EXPECT_NE(out.str().find("Comparing 9 jets"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Comparing GN2_pc and GN2onnx_pc..."), std::string::npos);
}

TEST(CompareModels, FailsWhenNotClose) {
  testing::TempDir dir;
  write_predictions(dir / "a.h5", "GN2", base);
  write_predictions(dir / "b.h5", "GN2", [](int64_t row, const std::string& f) { return base(row, f) + (row == 3 ? 1e-3 : 0); });
  CompareOptions o;
  o.file_a = dir / "a.h5";
  o.file_b = dir / "b.h5";
  o.tagger_a = "GN2";
  std::ostringstream out;
  auto msg = testing::one_line_error_of<InputError>([&] { compare_models(o, out); });
  EXPECT_NE(msg.find("GN2_pb and GN2_pb differ beyond rtol 1e-4, atol 1e-6"), std::string::npos) << msg;
}

TEST(CompareModels, BadInputsAreOneLine) {
  testing::TempDir dir;
  write_predictions(dir / "a.h5", "GN2", base);
  write_predictions(dir / "half.h5", "GN2", base, h5::kF2);
  write_predictions(dir / "nan.h5", "GN2", [](int64_t row, const std::string& f) { return row == 2 && f != "n_tracks" ? NAN : base(row, f); });
  CompareOptions o;
  o.file_a = dir / "a.h5";
  o.tagger_a = "GN2";
  std::ostringstream out;
  EXPECT_NE(testing::one_line_error_of<UsageError>([&] { compare_models(o, out); }).find("the same model"), std::string::npos);
  o.file_b = dir / "half.h5";
  EXPECT_NE(testing::one_line_error_of<InputError>([&] { compare_models(o, out); }).find("is not float32"), std::string::npos);
  o.file_b = dir / "nan.h5";
  EXPECT_NE(testing::one_line_error_of<InputError>([&] { compare_models(o, out); }).find("contains NaNs"), std::string::npos);
  o.file_b = dir / "a.h5";
  o.tagger_b = "GN3";
  EXPECT_NE(testing::one_line_error_of<InputError>([&] { compare_models(o, out); }).find("no field 'GN3_pb'"), std::string::npos);
  o.tagger_b.reset();
  write_predictions(dir / "fewer.h5", "GN2", base, h5::kF4, 8);  // 8 jets, all within the cut; 9 of a.h5's 10
  o.file_b = dir / "fewer.h5";
  EXPECT_EQ(testing::one_line_error_of<InputError>([&] { compare_models(o, out); }),
            "compare_models: 9 jets in " + o.file_a.string() + " but 8 in " + o.file_b->string() + " (after cuts)");
  write_predictions(dir / "no_jets.h5", "GN2", base, h5::kF4, 10, "hadrons");
  o.file_b = dir / "no_jets.h5";
  EXPECT_EQ(testing::one_line_error_of<InputError>([&] { compare_models(o, out); }),
            "compare_models: no 'jets' dataset in " + o.file_b->string());
}

// "Agreement" over no jets would pass any two taggers: refused, as is a jet count
// that is not a positive whole number (salt's -n is a float: 1e1 works).
TEST(CompareModels, NothingToCompareIsRefused) {
  testing::TempDir dir;
  write_predictions(dir / "a.h5", "GN2", base);
  write_predictions(dir / "b.h5", "GN2", base);
  CompareOptions o;
  o.file_a = dir / "a.h5";
  o.file_b = dir / "b.h5";
  o.tagger_a = "GN2";
  o.cuts = {"n_tracks > 1000"};
  o.cuts_given = true;
  std::ostringstream out;
  EXPECT_NE(testing::one_line_error_of<InputError>([&] { compare_models(o, out); }).find("no jets to compare in " + o.file_a.string() + " after the cuts"),
            std::string::npos);

  auto cli = [&](const std::string& n) {
    return testing::run_salt({"compare_models", "--file_a", (dir / "a.h5").string(), "--file_b", (dir / "b.h5").string(),
                              "--tagger_a", "GN2", "-n", n});
  };
  for (const std::string bad : {"-5", "0", "2.5", "nan"}) {
    auto r = cli(bad);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_EQ(testing::error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("-n must be a positive whole number of jets"), std::string::npos) << bad << ": " << r.err;
  }
  auto bad_cut = testing::run_salt({"compare_models", "--file_a", (dir / "a.h5").string(), "--file_b",
                                    (dir / "b.h5").string(), "--tagger_a", "GN2", "--cuts", "n_tracks <== 40"});
  EXPECT_NE(bad_cut.exit_code, 0);
  EXPECT_EQ(testing::error_lines(bad_cut.err), 1) << bad_cut.err;
  EXPECT_NE(bad_cut.err.find("salt: error: compare_models: --cuts 'n_tracks <== 40': unknown operator '<=='"),
            std::string::npos)
      << bad_cut.err;  // was an "internal error"
  auto ok = cli("1e1");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("Comparing 9 jets"), std::string::npos) << ok.out;  // 10 read, one fails n_tracks <= 40
}

}  // namespace
}  // namespace salt::deploy
