// Files written by h5py itself (Debian's python3-h5py, with its built-in LZF
// filter) read correctly, through both reader paths; and our own files read in
// h5py. This is the real preprocessing's writer, not a stand-in.
#include <gtest/gtest.h>

#include <sstream>

#include "data/h5_reader.h"
#include "data/toy_data.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

const char* kWriter = R"(
import sys, h5py, numpy as np
path, compression = sys.argv[1], sys.argv[2]
comp = None if compression == "none" else compression
n, L = 2500, 40
jets = np.zeros(n, dtype=[("flavour_label", "i4"), ("eta_btagJes", "f4"), ("pt_btagJes", "f2")])
jets["pt_btagJes"] = (np.arange(n) % 1000) * 0.5
jets["eta_btagJes"] = np.sin(np.arange(n))
jets["flavour_label"] = np.arange(n) % 4
tracks = np.zeros((n, L), dtype=[("valid", "?"), ("d0", "f4"), ("ftagTruthOriginLabel", "i1"), ("z0SinTheta", "f2")])
i = np.arange(n)[:, None]; j = np.arange(L)[None, :]
tracks["valid"] = ((i + j) % 3) != 0            # valid slots are not a prefix
tracks["d0"] = np.where(tracks["valid"], i * 0.01 + j, 0)
tracks["z0SinTheta"] = np.where(tracks["valid"], -j * 0.25, 0)
tracks["ftagTruthOriginLabel"] = np.where(tracks["valid"], j % 8, -1)
with h5py.File(path, "w") as f:
    d = f.create_dataset("jets", data=jets, compression=comp, chunks=(100,))
    d.attrs["flavour_label"] = ["bjets", "cjets", "ujets", "taujets"]
    f.create_dataset("tracks", data=tracks, compression=comp, chunks=(100, L))
    f.attrs["unique_jets"] = n
)";

class H5pyWritten : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(H5pyWritten, ReadsExactly) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed (scripts/bootstrap.sh installs it)");
  const auto [compression, direct] = GetParam();
  TempDir dir;
  auto path = dir / "h5py.h5";
  auto r = run_python(kWriter, {path.string(), compression});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  data::ReaderOptions options;
  options.set_variables({{"jets", {"pt_btagJes", "eta_btagJes"}}, {"tracks", {"z0SinTheta", "d0"}}})
      .set_labels({{"jets", {"flavour_label"}}, {"tracks", {"ftagTruthOriginLabel"}}})
      .set_direct_chunks(direct);
  data::H5Reader reader(path, options);
  ASSERT_EQ(reader.num_rows(), 2500);
  EXPECT_EQ(reader.class_names(), (std::vector<std::string>{"bjets", "cjets", "ujets", "taujets"}));
  EXPECT_EQ(reader.file_attributes()["unique_jets"].as<int>(), 2500);
  auto batch = reader.read(1234, 300);  // crosses chunk boundaries
  auto jets = batch.inputs.at("jets");
  auto tracks = batch.inputs.at("tracks");
  auto mask = batch.pad_masks.at("tracks");
  auto origin = batch.labels.at("tracks").at("ftagTruthOriginLabel");
  for (int64_t k = 0; k < 300; ++k) {
    const int64_t i = 1234 + k;
    EXPECT_FLOAT_EQ(jets[k][0].item<float>(), static_cast<float>((i % 1000) * 0.5)) << i;
    EXPECT_FLOAT_EQ(jets[k][1].item<float>(), static_cast<float>(std::sin(static_cast<double>(i)))) << i;
    EXPECT_EQ(batch.labels.at("jets").at("flavour_label")[k].item<int64_t>(), i % 4);
    for (int64_t j = 0; j < 40; j += 7) {
      const bool valid = (i + j) % 3 != 0;
      ASSERT_EQ(mask[k][j].item<bool>(), !valid) << i << "," << j;
      EXPECT_FLOAT_EQ(tracks[k][j][0].item<float>(), valid ? static_cast<float>(-j * 0.25) : 0.0f);
      EXPECT_FLOAT_EQ(tracks[k][j][1].item<float>(), valid ? static_cast<float>(i * 0.01 + j) : 0.0f);
      if (valid) EXPECT_EQ(origin[k][j].item<int64_t>(), j % 8);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, H5pyWritten,
                         ::testing::Combine(::testing::Values("lzf", "gzip", "none"), ::testing::Bool()));

TEST(H5pyInterop, ToyFilesReadInH5py) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed (scripts/bootstrap.sh installs it)");
  TempDir dir;
  auto files = data::write_toy_data(data::ToyDataOptions().set_out_dir(dir.path()).set_num_train(3000).set_num_val(0).set_num_test(0));
  auto r = run_python(R"(
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as f:
    t, j = f["tracks"], f["jets"]
    print(t.compression, t.shape[0], t.shape[1], list(j.attrs["flavour_label"]))
    valid = t["valid"][...]
    print(int(valid.sum()), repr(float(np.abs(t["d0"][...][valid]).sum())))
)",
                      {files.train.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream out(r.out);
  std::string compression;
  int rows, cols;
  out >> compression >> rows >> cols;
  EXPECT_EQ(compression, "lzf");
  EXPECT_EQ(rows, 3000);
  EXPECT_EQ(cols, 40);
  EXPECT_NE(r.out.find("['bjets', 'cjets', 'ujets', 'taujets']"), std::string::npos) << r.out;
  std::string line;
  std::getline(out, line);
  std::getline(out, line);
  std::istringstream second(line);
  int64_t valid_count;
  double abs_d0;
  second >> valid_count >> abs_d0;
  // The same numbers through our reader.
  data::H5Reader reader(files.train, data::ReaderOptions().set_variables({{"jets", {"pt_btagJes"}}, {"tracks", {"d0"}}}));
  auto batch = reader.read(0, 3000);
  EXPECT_EQ(batch.pad_masks.at("tracks").logical_not().sum().item<int64_t>(), valid_count);
  EXPECT_NEAR(batch.inputs.at("tracks").abs().sum().item<double>(), abs_d0, abs_d0 * 1e-5);
}

}  // namespace
}  // namespace salt::testing
