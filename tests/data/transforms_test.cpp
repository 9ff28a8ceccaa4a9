// data.transforms: salt's GaussianNoise multiplies the listed variables by draws of
// N(mean, std) as they are read, through the real reader on a real file; both ways
// salt writes noise_params (its code's and its docs') are read.
#include <gtest/gtest.h>

#include "config/data_config.h"
#include "data/h5_reader.h"
#include "h5_test_files.h"
#include "support/one_line_error.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

namespace fs = std::filesystem;

// 4000 jets (pt float32 = 10 + row, mass float16 = 1 + row % 7) and 3 track slots
// each, the last one padding.
fs::path write_file(const fs::path& path) {
  h5::File f = h5::File::create(path);
  testfiles::write_dataset(f, "jets", {{"pt", h5::kF4}, {"mass", h5::kF2}}, 4000, 0,
                           [](int64_t r, int64_t, const std::string& name) {
                             return name == "pt" ? 10.0 + static_cast<double>(r) : 1.0 + static_cast<double>(r % 7);
                           });
  testfiles::write_dataset(f, "tracks", {{"d0", h5::kF4}, {"valid", h5::FieldType{h5::Kind::Bool, 1}}}, 4000, 3,
                           [](int64_t r, int64_t slot, const std::string& name) {
                             return name == "valid" ? (slot < 2 ? 1.0 : 0.0) : 0.5 + static_cast<double>(r % 5);
                           });
  return path;
}

ReaderOptions options(std::vector<config::NoiseSpec> noise) {
  ReaderOptions o;
  o.set_variables({{"jets", {"pt", "mass"}}, {"tracks", {"d0"}}}).set_parameters({}, 7).set_noise(std::move(noise));
  return o;
}

TEST(GaussianNoise, MultipliesTheVariableByDrawsOfNMeanStd) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5");
  const auto clean = H5Reader(path, options({})).read(0, 4000);
  H5Reader noisy_reader(path, options({{"jets", "pt", 1.0, 0.1}}));
  const auto noisy = noisy_reader.read(0, 4000);
  const auto ratio = noisy.inputs.at("jets").select(1, 0) / clean.inputs.at("jets").select(1, 0);
  // 4000 draws: mean and std within ~5 standard errors of 1 and 0.1.
  EXPECT_NEAR(ratio.mean().item<double>(), 1.0, 0.008);
  EXPECT_NEAR(ratio.std().item<double>(), 0.1, 0.006);
  EXPECT_TRUE(noisy.inputs.at("jets").select(1, 1).equal(clean.inputs.at("jets").select(1, 1)));  // mass untouched
  EXPECT_TRUE(noisy.inputs.at("tracks").equal(clean.inputs.at("tracks")));
  // Seeded: the same batch again gives the same draws; another epoch new ones.
  EXPECT_TRUE(noisy.inputs.at("jets").equal(noisy_reader.read(0, 4000).inputs.at("jets")));
  EXPECT_FALSE(noisy.inputs.at("jets").equal(noisy_reader.read(0, 4000, false, 1).inputs.at("jets")));
}

TEST(GaussianNoise, KeepsTheFieldsPrecisionAndThePadding) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5");
  const auto b = H5Reader(path, options({{"jets", "mass", 1.0, 0.3}, {"tracks", "d0", 2.0, 0.5}})).read(0, 100);
  // salt writes value x noise back into the float16 field: every value is a half.
  const auto mass = b.inputs.at("jets").select(1, 1);
  EXPECT_TRUE(mass.equal(mass.to(torch::kHalf).to(torch::kFloat)));
  EXPECT_FALSE(mass.equal(torch::arange(100).remainder(7).add(1).to(torch::kFloat)));
  // Padded slots stay 0; valid ones moved (mean factor 2).
  const auto d0 = b.inputs.at("tracks").select(2, 0);
  EXPECT_TRUE(d0.select(1, 2).eq(0).all().item<bool>());
  EXPECT_GT(d0.select(1, 0).mean().item<double>(), 2.5 * 1.5);
}

TEST(GaussianNoise, ConfigReadsSaltsTwoFormsAndNamesBadEntries) {
  const std::string vars = "variables: {jets: [pt], tracks: [d0]}\n";
  const auto code_form = config::data_config_from_yaml(YAML::Load(
      vars + "transforms: [{class_path: salt.data.transforms.GaussianNoise, init_args: {noise_params: "
             "{jets: [{variable: pt, mean: 1.0, std: 0.1}], tracks: [{variable: d0, mean: 1.0, std: 0.05}]}}}]"));
  const auto docs_form = config::data_config_from_yaml(YAML::Load(
      vars + "transforms: [{class_path: salt.data.transforms.GaussianNoise, init_args: {noise_params: "
             "[{input_type: jets, variable: pt, mean: 1.0, std: 0.1}, {input_type: tracks, variable: d0, mean: 1.0, std: 0.05}]}}]"));
  ASSERT_EQ(code_form.noise.size(), 2u);
  ASSERT_EQ(docs_form.noise.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(code_form.noise[i].input, docs_form.noise[i].input);
    EXPECT_EQ(code_form.noise[i].variable, docs_form.noise[i].variable);
    EXPECT_EQ(code_form.noise[i].std, docs_form.noise[i].std);
  }
  auto msg = salt::testing::one_line_error_of<UsageError>([&] {
    config::data_config_from_yaml(YAML::Load(vars + "transforms: [{class_path: salt.data.transforms.GaussianNoise, "
                                                    "init_args: {noise_params: {tracks: [{variable: z0, mean: 1, std: 0.1}]}}}]"));
  });
  EXPECT_NE(msg.find("GaussianNoise variable 'z0' is not one of data.variables.tracks"), std::string::npos) << msg;
  msg = salt::testing::one_line_error_of<UsageError>([&] {
    config::data_config_from_yaml(YAML::Load(vars + "transforms: [{class_path: salt.data.transforms.GaussianNoise, "
                                                    "init_args: {noise_params: [{variable: pt, mean: 1, std: 0.1}]}}]"));
  });
  EXPECT_NE(msg.find("noise_params.0: give input_type"), std::string::npos) << msg;
}

}  // namespace
}  // namespace salt::data
