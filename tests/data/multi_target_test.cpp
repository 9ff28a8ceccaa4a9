// data.multi_target: labels replaced or created by condition, applied by the reader
// in the order of the entries (salt's apply_multi_target_replacements).
#include <gtest/gtest.h>

#include "support/one_line_error.h"

#include "config/data_config.h"
#include "core/errors.h"
#include "data/h5_reader.h"
#include "h5_test_files.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

namespace fs = std::filesystem;

// Six jets: truth label 15, 5, 15, 0, 4, 15; truth pt 10*r; reco pt 100 + r.
fs::path write_file(const fs::path& path) {
  h5::File f = h5::File::create(path);
  auto value = [](int64_t r, int64_t, const std::string& name) {
    const double ids[] = {15, 5, 15, 0, 4, 15};
    if (name == "id") return ids[r];
    if (name == "truth_pt") return 10.0 * static_cast<double>(r);
    if (name == "pt") return 100.0 + static_cast<double>(r);
    return 1.0;
  };
  testfiles::write_dataset(f, "jets", {{"pt", h5::kF4}, {"id", h5::kI4}, {"truth_pt", h5::kF4}, {"eta", h5::kF4}}, 6, 0,
                           value);
  return path;
}

config::MultiTarget entry(const std::string& opp, double value, const std::string& source) {
  config::MultiTarget e;
  e.input_name = "jets";
  e.sel_label = "id";
  e.opp = opp;
  e.value = value;
  e.source = source;
  e.custom_target = "handle";
  return e;
}

ReaderOptions options(std::vector<config::MultiTarget> entries, std::vector<std::string> labels) {
  ReaderOptions o;
  o.set_variables({{"jets", {"eta"}}}).set_labels({{"jets", std::move(labels)}}).set_multi_targets(std::move(entries));
  return o;
}

TEST(MultiTarget, CustomTargetTakesTheSourceOfTheFirstMatchingEntry) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5");
  // salt's regression_multi_target: truth pt for taus (15), reco pt for the others.
  Batch b = H5Reader(path, options({entry("==", 15, "truth_pt"), entry("!=", 15, "pt")}, {"handle"})).read(0, 6);
  EXPECT_TRUE(b.labels.at("jets").at("handle").equal(torch::tensor({0.f, 101.f, 20.f, 103.f, 104.f, 50.f})))
      << b.labels.at("jets").at("handle");
  // Only one rule: the other rows keep the placeholder, NaN.
  b = H5Reader(path, options({entry(">=", 5, "pt")}, {"handle"})).read(0, 6);
  auto h = b.labels.at("jets").at("handle");
  EXPECT_TRUE(h.isnan().equal(torch::tensor({false, false, false, true, true, false}))) << h;
  EXPECT_FLOAT_EQ(h[1].item<float>(), 101.f);
}

TEST(MultiTarget, ReplacesAnExistingTargetInOrder) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5");
  auto first = entry("<", 5, "pt");
  first.custom_target.reset();
  first.target = "truth_pt";
  auto second = first;
  second.opp = "==";
  second.value = 0;
  second.source = "eta";  // applies after the first: row 3 ends with eta (1)
  Batch b = H5Reader(path, options({first, second}, {"truth_pt"})).read(0, 6);
  EXPECT_TRUE(b.labels.at("jets").at("truth_pt").equal(torch::tensor({0.f, 10.f, 20.f, 1.f, 104.f, 50.f})))
      << b.labels.at("jets").at("truth_pt");
}

TEST(MultiTarget, MissingFieldNamesTheKeyAndFile) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5");
  const auto msg = salt::testing::one_line_error_of(
      [&] { H5Reader(path, options({entry("==", 15, "truth_pt"), entry("!=", 15, "ptt")}, {"handle"})); });
  EXPECT_NE(msg.find("data.multi_target[1].source: 'ptt' is missing from dataset 'jets' in " + path.string()),
            std::string::npos)
      << msg;
}

TEST(MultiTarget, ConfigNeedsExactlyOneTarget) {
  auto data = YAML::Load(
      "multi_target: [{input_name: jets, sel_label: id, opp: '==', value: 15, source: pt, target: a, custom_target: b}]");
  auto msg = salt::testing::one_line_error_of<UsageError>([&] { config::data_config_from_yaml(data); });
  EXPECT_NE(msg.find("data.multi_target[0]: give exactly one of 'target'"), std::string::npos) << msg;
  data = YAML::Load("multi_target: [{input_name: jets, sel_label: id, opp: '>', value: 1.5, source: pt, target: a}]");
  const auto c = config::data_config_from_yaml(data);
  ASSERT_EQ(c.multi_target.size(), 1u);
  EXPECT_EQ(c.multi_target[0].opp, ">");
  EXPECT_DOUBLE_EQ(c.multi_target[0].value, 1.5);
  EXPECT_EQ(c.multi_target[0].target_label(), "a");
}

}  // namespace
}  // namespace salt::data
