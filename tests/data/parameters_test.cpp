// data.parameters: the `parameters` inputs while fitting (unknown values drawn from
// `train`) and in salt test (all `test`), through the real reader.
#include <gtest/gtest.h>

#include "support/one_line_error.h"

#include "config/data_config.h"
#include "data/h5_reader.h"
#include "h5_test_files.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

namespace fs = std::filesystem;

// Eight jets; mass 5, 40, 0 (background), 55, 0, 7, 40, 0.
fs::path write_file(const fs::path& path) {
  h5::File f = h5::File::create(path);
  auto value = [](int64_t r, int64_t, const std::string& name) {
    const double m[] = {5, 40, 0, 55, 0, 7, 40, 0};
    return name == "mass" ? m[r] : 1.0;
  };
  testfiles::write_dataset(f, "jets", {{"pt", h5::kF4}, {"mass", h5::kF4}}, 8, 0, value);
  return path;
}

ReaderOptions options(std::optional<std::vector<double>> prob, bool test) {
  config::ParameterSpec s{"mass", {5, 40, 55}, 16, std::move(prob)};
  ReaderOptions o;
  o.set_variables({{"jets", {"pt"}}, {"parameters", {"mass"}}})
      .set_input_map({{"parameters", "jets"}})
      .set_parameters({s}, 7)
      .set_test_stage(test);
  return o;
}

TEST(Parameters, FitKeepsTrainValuesAndDrawsTheOthers) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5");
  // prob puts everything on 55: the background jets (0, 7) become 55.
  auto m = H5Reader(path, options(std::vector<double>{0, 0, 1}, false)).read(0, 8).inputs.at("parameters").flatten();
  EXPECT_TRUE(m.equal(torch::tensor({5.f, 40.f, 55.f, 55.f, 55.f, 55.f, 40.f, 55.f}))) << m;
  // Uniform draws: only train values, the same for the same batch (seed and first row).
  H5Reader uniform(path, options(std::nullopt, false));
  auto a = uniform.read(0, 8).inputs.at("parameters").flatten();
  EXPECT_TRUE(a.equal(uniform.read(0, 8).inputs.at("parameters").flatten()));
  for (int64_t i = 0; i < 8; ++i) {
    const float v = a[i].item<float>();
    EXPECT_TRUE(v == 5.f || v == 40.f || v == 55.f) << v;
  }
  // Drawn anew each epoch (as salt does): some epoch differs from epoch 0.
  bool differs = false;
  for (int64_t epoch = 1; epoch < 6; ++epoch)
    differs |= !a.equal(uniform.read(0, 8, false, epoch).inputs.at("parameters").flatten());
  EXPECT_TRUE(differs);
}

TEST(Parameters, TestStageUsesTheTestValue) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5");
  auto m = H5Reader(path, options(std::nullopt, true)).read(2, 4).inputs.at("parameters").flatten();
  EXPECT_TRUE(m.equal(torch::full({4}, 16.f))) << m;
}

TEST(Parameters, ConfigErrorsAreOneLine) {
  auto msg = salt::testing::one_line_error_of<UsageError>([] {
    config::data_config_from_yaml(YAML::Load("variables: {jets: [pt], parameters: [mass, width]}\n"
                                             "parameters: {width: {train: [1], test: 1}, mass: {train: [5], test: 5}}"));
  });
  EXPECT_NE(msg.find("data.parameters: [width, mass] must name the variables of data.variables.parameters [mass, width], "
                     "in the same order"),
            std::string::npos)
      << msg;
  msg = salt::testing::one_line_error_of<UsageError>([] {
    config::data_config_from_yaml(YAML::Load("variables: {parameters: [mass]}\n"
                                             "parameters: {mass: {train: [5, 40], test: 5, prob: [0.5, 0.6]}}"));
  });
  EXPECT_NE(msg.find("data.parameters.mass.prob: needs one non-negative probability per train value, summing to 1"),
            std::string::npos)
      << msg;
  const auto c = config::data_config_from_yaml(YAML::Load("variables: {jets: [pt], parameters: [mass]}\n"
                                                          "parameters: {mass: {train: [5, 40], test: 16}}"));
  EXPECT_EQ(c.dataset_of("parameters"), "jets");
}

}  // namespace
}  // namespace salt::data
