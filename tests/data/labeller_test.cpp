// data.labeller_config: ftag's Labeller on a real file (class labels from truth
// variables by ftag's flavour cuts), its errors, and the config key.
#include <gtest/gtest.h>

#include "support/one_line_error.h"

#include <functional>

#include "core/errors.h"
#include "data/data_config.h"
#include "data/h5_reader.h"
#include "data/labeller.h"
#include "h5_test_files.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

namespace fs = std::filesystem;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "'" << (haystack) << "' lacks '" << (needle) << "'"

const std::vector<std::string> kXbb = {"hbb", "hcc", "top", "qcdbb", "qcdbx", "qcdcx", "qcdll"};

// (R10TruthLabel_R22v1, GhostBHadronsFinalCount, GhostCHadronsFinalCount) per jet,
// and the class ftag gives it among kXbb (-1: none).
struct Jet {
  int r10, nb, nc;
  int64_t want;
};
const std::vector<Jet> kJets = {
    {11, 2, 0, 0},   // hbb
    {12, 0, 1, 1},   // hcc
    {6, 0, 0, 2},    // top (in (1,6,7))
    {10, 3, 0, 3},   // qcdbb
    {10, 1, 4, 4},   // qcdbx
    {10, 0, 2, 5},   // qcdcx
    {10, 0, 0, 6},   // qcdll
    {2, 0, 0, -1},   // W: not among the classes
    {7, 1, 1, 2},    // top
};

fs::path write_file(const fs::path& path) {
  h5::File f = h5::File::create(path);
  auto value = [](int64_t r, int64_t, const std::string& name) -> double {
    const Jet& j = kJets[static_cast<size_t>(r)];
    if (name == "R10TruthLabel_R22v1") return j.r10;
    if (name == "GhostBHadronsFinalCount") return j.nb;
    if (name == "GhostCHadronsFinalCount") return j.nc;
    if (name == "flavour_label") return 99;  // replaced by the labeller
    return 1.0;
  };
  const int64_t n = static_cast<int64_t>(kJets.size());
  testfiles::write_dataset(f, "jets",
                           {{"pt", h5::kF4}, {"R10TruthLabel_R22v1", h5::kI4}, {"GhostBHadronsFinalCount", h5::kI4},
                            {"GhostCHadronsFinalCount", h5::kU1}, {"flavour_label", h5::kI4}},
                           n, 0, value);
  return path;
}

ReaderOptions options(std::vector<std::string> classes, bool require) {
  ReaderOptions o;
  o.set_variables({{"jets", {"pt"}}}).set_labels({{"jets", {"flavour_label"}}}).set_labeller(std::move(classes), require);
  return o;
}


TEST(Labeller, LabelsFromTruthVariables) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5");
  H5Reader reader(path, options(kXbb, false));
  Batch b = reader.read(0, static_cast<int64_t>(kJets.size()));
  auto y = b.labels.at("jets").at("flavour_label");
  ASSERT_EQ(y.dtype(), torch::kInt64);
  for (size_t i = 0; i < kJets.size(); ++i) EXPECT_EQ(y[static_cast<int64_t>(i)].item<int64_t>(), kJets[i].want) << i;

  // Overlapping classes: the last matching one wins (ftag assigns in turn).
  Batch o = H5Reader(path, options({"qcdbb", "qcd"}, true)).read(3, 1);
  EXPECT_EQ(o.labels.at("jets").at("flavour_label")[0].item<int64_t>(), 1);

  // Without the labeller the file's flavour_label is read.
  ReaderOptions plain = options({}, true);
  EXPECT_EQ(H5Reader(path, plain).read(0, 1).labels.at("jets").at("flavour_label")[0].item<int64_t>(), 99);
}

TEST(Labeller, Errors) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5");
  // require_labels: the W jet (row 7) matches no class.
  H5Reader reader(path, options(kXbb, true));
  EXPECT_NO_THROW(reader.read(0, 7));
  std::string msg = salt::testing::one_line_error_of<InputError>([&] { reader.read(5, 3); });
  EXPECT_CONTAINS(msg, "data.labeller_config: row 7 of dataset 'jets' in " + path.string());
  EXPECT_CONTAINS(msg, "matches none of the classes [hbb, hcc");

  // GN2X_qcdsplit.yaml's qcdxx is no ftag flavour (salt fails too).
  auto classes = kXbb;
  classes.back() = "qcdxx";
  msg = salt::testing::one_line_error_of<UsageError>([&] { Labeller(classes, false); });
  EXPECT_CONTAINS(msg, "data.labeller_config.class_names[6]: 'qcdxx' is not an ftag flavour");
  EXPECT_CONTAINS(salt::testing::one_line_error_of<UsageError>([&] { Labeller({}, true); }), "data.labeller_config.class_names");

  msg = salt::testing::one_line_error_of<InputError>([&] { H5Reader(path, options({"bjets"}, true)); });
  EXPECT_CONTAINS(msg, "data.labeller_config.class_names[0] (bjets): the cut 'HadronConeExclTruthLabelID == 5' needs");
  EXPECT_CONTAINS(msg, path.string());
}

TEST(Labeller, FlavourTable) {
  // Every class salt's configs use, and GN2's, is defined and parses.
  Labeller gn3x({"htautauhad", "hbb", "hcc", "top", "qcdbb", "qcdbx", "qcdcx", "qcdll", "Wqq"}, true);
  EXPECT_EQ(gn3x.class_cuts()[8].size(), 3u);
  EXPECT_EQ(gn3x.class_cuts()[3][0].values.size(), 3u);  // top: in (1,6,7)
  Labeller gn2({"bjets", "cjets", "ujets", "taujets"}, true);
  EXPECT_EQ(gn2.class_cuts()[3][0].text, "HadronConeExclTruthLabelID == 15");
  EXPECT_EQ(flavour_cuts("qcdxx"), nullptr);
}

TEST(Labeller, ConfigKey) {
  DataConfig c = data_config_from_yaml(YAML::Load("labeller_config: {use_labeller: true, class_names: [hbb, top], "
                                                  "require_labels: false}"));
  EXPECT_TRUE(c.labeller_config.use_labeller);
  EXPECT_EQ(c.labeller_config.class_names, (std::vector<std::string>{"hbb", "top"}));
  EXPECT_FALSE(c.labeller_config.require_labels);
  DataConfig off = data_config_from_yaml(YAML::Load("labeller_config: {use_labeller: false, class_names: [hbb]}"));
  EXPECT_FALSE(off.labeller_config.class_names.has_value());
}

}  // namespace
}  // namespace salt::data
