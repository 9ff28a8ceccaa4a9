// `salt fit` / `salt test` on wildcard inputs (data/virtual_file.h): the toy files
// split into parts by h5py (an independent writer) train and test exactly like the
// single files, with temp copies of every member, and bad inputs in one line.
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <fstream>

#include "training/checkpoints/checkpoint.h"
#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

// Splits every dataset of argv[1] into files argv[2] % i with the row counts argv[3:],
// keeping dtypes, chunking, LZF compression and attributes.
const char* kSplitter = R"(
import sys, h5py
src, pattern, sizes = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:]]
with h5py.File(src) as f:
    assert sum(sizes) == len(f["jets"]), (sum(sizes), len(f["jets"]))
    start = 0
    for i, n in enumerate(sizes):
        with h5py.File(pattern % i, "w") as out:
            for k, v in f.attrs.items():
                out.attrs[k] = v
            for name, ds in f.items():
                chunks = (min(100, n),) + ds.shape[1:] if n else None
                d = out.create_dataset(name, data=ds[start:start + n], chunks=chunks,
                                       compression="lzf" if n else None)
                for k, v in ds.attrs.items():
                    d.attrs[k] = v
        start += n
)";

// Prediction datasets of two `salt test` outputs equal, field by field.
const char* kSamePredictions = R"(
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as a, h5py.File(sys.argv[2]) as b:
    assert sorted(a) == sorted(b), (list(a), list(b))
    for name in a:
        assert a[name].dtype == b[name].dtype, name
        for field in a[name].dtype.names:
            x, y = a[name][field], b[name][field]
            assert np.array_equal(x, y, equal_nan=True), (name, field)
    print(len(a["jets"]))
)";

}  // namespace

class WildcardFit : public FitTest {
 protected:
  void SetUp() override {
    FitTest::SetUp();
    SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed");
    fs::create_directories(dir / "data" / "parts");
    split("pp_output_train.h5", "train_%d.h5", {300, 500, 200, 600, 400});
    split("pp_output_test_ttbar.h5", "test_ttbar_%d.h5", {100, 0, 250, 150});
  }

  void split(const std::string& file, const std::string& pattern, const std::vector<int>& sizes) {
    std::vector<std::string> args{(dir / "data" / "toy" / file).string(), (dir / "data" / "parts" / pattern).string()};
    for (int n : sizes) args.push_back(std::to_string(n));
    auto r = run_python(kSplitter, args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  std::string train_pattern() const { return (dir / "data" / "parts" / "train_*.h5").string(); }

  static void expect_same_weights(const fs::path& a, const fs::path& b) {
    auto x = training::load_checkpoint(a), y = training::load_checkpoint(b);
    EXPECT_EQ(x.global_step, y.global_step);
    ASSERT_EQ(x.state_dict.size(), y.state_dict.size());
    for (std::size_t i = 0; i < x.state_dict.size(); ++i)
      EXPECT_TRUE(torch::equal(x.state_dict[i].second, y.state_dict[i].second)) << x.state_dict[i].first;
  }
};

// Same seed, same batches in the same order: the weights after two epochs are
// bitwise equal, and so are the predictions of `salt test` on the split test file.
TEST_F(WildcardFit, TrainsAndTestsExactlyLikeTheMergedFile) {
  auto merged = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "merged"}));
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  auto parts = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "parts", "--data.train_file", train_pattern(),
                                      "--data.num_workers", "2"}));
  ASSERT_EQ(parts.exit_code, 0) << parts.err;
  const auto run_m = dir / "logs" / "GN2_cpu_merged", run_p = dir / "logs" / "GN2_cpu_parts";
  ASSERT_EQ(checkpoints(run_p).size(), 2u);
  expect_same_weights(checkpoints(run_m).back(), checkpoints(run_p).back());
  EXPECT_TRUE(fs::exists(dir / "data" / "parts" / "train_vds" / "vds.h5"));  // salt's default place

  auto meta = YAML::LoadFile((run_p / "metadata.yaml").string());
  EXPECT_EQ(meta["num_train"].as<int>(), 2000);
  ASSERT_EQ(meta["train_members"].size(), 5u);
  EXPECT_EQ(meta["train_members"][3]["file"].as<std::string>(), (dir / "data" / "parts" / "train_3.h5").string());
  EXPECT_EQ(meta["train_members"][3]["jets"].as<int>(), 600);
  EXPECT_FALSE(meta["val_members"]);  // the validation file is a plain file

  const auto ckpt_m = checkpoints(run_m).back(), ckpt_p = checkpoints(run_p).back();
  auto test_m = salt("test", {"-c", (run_m / "config.yaml").string(), "--ckpt_path", ckpt_m.string()});
  ASSERT_EQ(test_m.exit_code, 0) << test_m.err;
  const auto test_vds = dir / "data" / "parts" / "ttbar.h5";
  auto test_p = salt("test", {"-c", (run_p / "config.yaml").string(), "--ckpt_path", ckpt_p.string(), "--data.test_file",
                              (dir / "data" / "parts" / "test_ttbar_*.h5").string(), "--data.test_vds_path",
                              test_vds.string()});
  ASSERT_EQ(test_p.exit_code, 0) << test_p.err;
  auto same = run_python(kSamePredictions,
                         {(ckpt_m.parent_path() / (ckpt_m.stem().string() + "__test_ttbar.h5")).string(),
                          (ckpt_p.parent_path() / (ckpt_p.stem().string() + "__test_ttbar.h5")).string()});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out, "500\n");
}

// move_files_temp copies every member and reads them through a virtual file of its
// own; all of it is gone after the run.
TEST_F(WildcardFit, MoveFilesTempCopiesEveryMember) {
  const auto scratch = dir / "scratch";
  auto r = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "temp", "--data.train_file", train_pattern(),
                                  "--data.train_vds_path", (dir / "vds" / "train.h5").string(),
                                  "--data.move_files_temp", scratch.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(scratch)) << "temp copies left behind";
  auto meta = YAML::LoadFile((dir / "logs" / "GN2_cpu_temp" / "metadata.yaml").string());
  ASSERT_EQ(meta["train_members"].size(), 5u);
  EXPECT_EQ(meta["train_members"][0]["file"].as<std::string>(), (dir / "data" / "parts" / "train_0.h5").string());
}

// A member removed while the run reads it: stopped in one line naming the member.
TEST_F(WildcardFit, AMemberRemovedDuringTheRunStopsIt) {
  std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
  for (const auto& a : small_gn2({"--trainer.max_epochs", "200", "-ls", "removed", "--data.train_file", train_pattern()}))
    argv.push_back(a);
  BackgroundProcess p(argv, dir.path(), {"OMP_NUM_THREADS=1"});
  const auto run = dir / "logs" / "GN2_cpu_removed";
  for (int i = 0; i < 6000 && !(fs::exists(run / "ckpts") && !checkpoints(run).empty()); ++i) usleep(10000);
  ASSERT_FALSE(checkpoints(run).empty());
  const auto member = dir / "data" / "parts" / "train_2.h5";
  fs::remove(member);
  auto r = p.wait();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("input file " + member.string() + " changed during the run (it is gone"), std::string::npos)
      << r.err;
}

TEST_F(WildcardFit, BadWildcardInputsAreOneLineAndLeaveNothing) {
  auto none = salt("fit", small_gn2({"-ls", "none", "--data.train_file", (dir / "data" / "parts" / "nope_*.h5").string()}));
  EXPECT_NE(none.exit_code, 0);
  EXPECT_EQ(error_lines(none.err), 1) << none.err;
  EXPECT_NE(none.err.find("no files match " + (dir / "data" / "parts" / "nope_*.h5").string()), std::string::npos)
      << none.err;

  std::ofstream(dir / "plain") << "not a directory";
  auto unwritable = salt("fit", small_gn2({"-ls", "unwritable", "--data.train_file", train_pattern(),
                                           "--data.train_vds_path", (dir / "plain" / "vds.h5").string()}));
  EXPECT_NE(unwritable.exit_code, 0);
  EXPECT_EQ(error_lines(unwritable.err), 1) << unwritable.err;
  EXPECT_NE(unwritable.err.find("directory for the virtual dataset of " + train_pattern()), std::string::npos)
      << unwritable.err;

  // A part with another field type: named, with the field.
  auto retyped = run_python(R"(
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "a") as f:
    jets = f["jets"][:]
    dt = [(n, "f8" if n == "pt_btagJes" else jets.dtype[n]) for n in jets.dtype.names]
    del f["jets"]
    f.create_dataset("jets", data=jets.astype(dt))
)",
                            {(dir / "data" / "parts" / "train_4.h5").string()});
  ASSERT_EQ(retyped.exit_code, 0) << retyped.err;
  auto differs = salt("fit", small_gn2({"-ls", "differs", "--data.train_file", train_pattern()}));
  EXPECT_NE(differs.exit_code, 0);
  EXPECT_EQ(error_lines(differs.err), 1) << differs.err;
  EXPECT_NE(differs.err.find("train_4.h5 differs from " + (dir / "data" / "parts" / "train_0.h5").string() +
                             ": in dataset 'jets', field 'pt_btagJes' is f8, not f4"),
            std::string::npos)
      << differs.err;
  EXPECT_FALSE(fs::exists(dir / "logs")) << "a refused start left a run directory";
  EXPECT_FALSE(fs::exists(dir / "data" / "parts" / "train_vds")) << "a refused start left the virtual file's directory";
}

}  // namespace salt::testing
