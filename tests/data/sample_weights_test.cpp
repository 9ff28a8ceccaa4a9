// Tasks' sample_weight fields in the reader: read as labels, and a missing field
// or a negative weight is one line naming the config key and the file.
#include <gtest/gtest.h>

#include "support/one_line_error.h"

#include "core/errors.h"
#include "data/h5_reader.h"
#include "h5_test_files.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

namespace fs = std::filesystem;
const std::string kKey = "model.model.init_args.tasks.init_args.modules[0].init_args.sample_weight";

fs::path write_file(const fs::path& path, double negative_at_row) {
  h5::File f = h5::File::create(path);
  auto value = [&](int64_t r, int64_t s, const std::string& name) {
    if (name == "valid") return s < 2 ? 1.0 : 0.0;
    if (name == "w") return r == negative_at_row ? -0.5 : 0.25 * r;
    if (name == "tw") return s < 2 ? 1.0 : -1.0;  // negative only in padded slots: fine
    return 1.0;
  };
  testfiles::write_dataset(f, "jets", {{"pt", h5::kF4}, {"w", h5::kF4}}, 6, 0, value);
  testfiles::write_dataset(f, "tracks", {{"d0", h5::kF4}, {"valid", h5::kBool}, {"tw", h5::kF2}}, 6, 3, value);
  return path;
}

ReaderOptions options(const std::string& jet_weight) {
  ReaderOptions o;
  o.set_variables({{"jets", {"pt"}}, {"tracks", {"d0"}}})
      .set_labels({{"jets", {jet_weight}}, {"tracks", {"tw"}}})
      .set_sample_weights({{"jets", {{jet_weight, kKey}}}, {"tracks", {{"tw", "trk.sample_weight"}}}});
  return o;
}


TEST(SampleWeights, ReadAsLabels) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5", -1);
  Batch b = H5Reader(path, options("w")).read(1, 4);
  EXPECT_TRUE(b.labels.at("jets").at("w").equal(torch::tensor({0.25f, 0.5f, 0.75f, 1.0f})));
  EXPECT_EQ(b.labels.at("tracks").at("tw").sizes(), (std::vector<int64_t>{4, 3}));
}

TEST(SampleWeights, Errors) {
  salt::testing::TempDir dir;
  const auto path = write_file(dir / "f.h5", 4);
  std::string msg = salt::testing::one_line_error_of([&] { H5Reader(path, options("weight")); });
  EXPECT_NE(msg.find(kKey + ": the sample weight 'weight' is missing from dataset 'jets' in " + path.string()),
            std::string::npos)
      << msg;

  H5Reader reader(path, options("w"));
  EXPECT_NO_THROW(reader.read(0, 4));
  msg = salt::testing::one_line_error_of([&] { reader.read(2, 4); });
  EXPECT_NE(msg.find(kKey + ": the sample weight 'w' is negative (-0.5) in row 4 of dataset 'jets' in " + path.string()),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace salt::data
