// `salt shuffle` as a user runs it, checked with h5py: every jet exactly once with
// its tracks, a new order, the preprocessing's layout, a memory peak within the
// budget on data several times larger, and bad inputs in one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

#include "support/test_support.h"

namespace salt::testing {
namespace {
namespace fs = std::filesystem;

// Prints the jet count; fails unless the outputs hold exactly the inputs' jets (each
// jet's row and its tracks' row together, as bytes) in another order, with the same
// dtypes, chunked and LZF-compressed, attributes kept.
const char* kSameJets = R"(
import sys, h5py, numpy as np
out, inputs = sys.argv[1], sys.argv[2:]
def rows(files):
    keys = []
    for path in files:
        with h5py.File(path) as f:
            jets, tracks = f["jets"][:], f["tracks"][:]
            keys.append(np.array([j.tobytes() + t.tobytes() for j, t in zip(jets, tracks)], dtype=object))
    return np.concatenate(keys)
before, after = rows(inputs), rows([out])
assert len(before) == len(after), (len(before), len(after))
assert sorted(before) == sorted(after), "the jets differ"
assert not (before == after).all(), "the order did not change"
with h5py.File(out) as o, h5py.File(inputs[0]) as i:
    for name in ("jets", "tracks"):
        assert o[name].dtype == i[name].dtype, name
        assert o[name].compression == "lzf", o[name].compression
        assert o[name].chunks is not None
        assert dict(o[name].attrs) .keys() == dict(i[name].attrs).keys(), name
    assert "salt_shuffle" in o.attrs
print(len(after))
)";

class Shuffle : public ::testing::Test {
 protected:
  void SetUp() override {
    SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed");
    auto r = run_salt({"toydata", "-o", "data", "--num_train", "16000", "--num_val", "3000", "--num_test", "0"}, dir.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  fs::path train() const { return dir / "data" / "pp_output_train.h5"; }
  fs::path val() const { return dir / "data" / "pp_output_val.h5"; }
  TempDir dir;
};

TEST_F(Shuffle, EveryJetOnceInANewOrderWithinTheMemoryBudget) {
  const auto out = dir / "out" / "shuffled.h5";
  auto r = run_salt({"shuffle", train().string(), "-o", out.string(), "--memory_mb", "10", "--seed", "7"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  const std::string log = r.err + r.out;
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(shuffled 16000 jets \((\d+) bytes each\).* through (\d+) bucket)")))
      << log;
  const double data_mb = 16000.0 * std::stod(m[1]) / (1 << 20);
  EXPECT_GT(data_mb, 3 * 10.0) << "the data should be several times the budget";  // out of core, not in memory
  EXPECT_GE(std::stoi(m[2]), 4);
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(memory: ([\d.]+) MiB resident before, ([\d.]+) MiB peak)")));
  const double growth = std::stod(m[2]) - std::stod(m[1]);
  std::cout << "salt shuffle: " << data_mb << " MiB of jets, budget 10 MiB, peak RSS growth " << growth << " MiB\n";
  // The buckets' buffers fill the budget; the pages of HDF5's and the allocator's
  // bookkeeping on top measured 9.7 to 10.1 MiB in all (a breach is many MiB more).
  EXPECT_LE(growth, 10.5) << "the budget";

  auto check = run_python(kSameJets, {out.string(), train().string()});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(check.out, "16000\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "out"), fs::directory_iterator()), 1)
      << "only the output is left (no bucket or temp files)";

  // The output is a function of the seed: the same seed gives the same rows.
  const auto again = dir / "out" / "again.h5";
  ASSERT_EQ(run_salt({"shuffle", train().string(), "-o", again.string(), "--memory_mb", "10", "--seed", "7"}, dir.path())
                .exit_code,
            0);
  auto same = run_python(R"(
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as a, h5py.File(sys.argv[2]) as b:
    print(all((a[n][:] == b[n][:]).all() for n in ("jets", "tracks")))
)",
                         {out.string(), again.string()});
  EXPECT_EQ(same.out, "True\n") << same.err;
}

TEST_F(Shuffle, ManyFilesIntoOne) {
  const auto out = dir / "mixed.h5";
  auto r = run_salt({"shuffle", (dir / "data" / "pp_output_*.h5").string(), "-o", out.string(), "--memory_mb", "64"},
                    dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto check = run_python(kSameJets, {out.string(), train().string(), val().string()});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_EQ(check.out, "19000\n");
}

TEST_F(Shuffle, BadInputsAreOneLineAndLeaveNothing) {
  auto none = run_salt({"shuffle", (dir / "data" / "nope_*.h5").string(), "-o", (dir / "o.h5").string()}, dir.path());
  EXPECT_NE(none.exit_code, 0);
  EXPECT_EQ(error_lines(none.err), 1) << none.err;
  EXPECT_NE(none.err.find("no files match"), std::string::npos) << none.err;

  auto py = run_python(R"(
import sys, h5py
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("jets", data=h5py.File(sys.argv[2])["jets"][:10])
)",
                       {(dir / "data" / "short.h5").string(), train().string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  auto differs = run_salt({"shuffle", train().string(), (dir / "data" / "short.h5").string(), "-o",
                           (dir / "o.h5").string()},
                          dir.path());
  EXPECT_NE(differs.exit_code, 0);
  EXPECT_EQ(error_lines(differs.err), 1) << differs.err;
  EXPECT_NE(differs.err.find("short.h5 differs from " + train().string() + ": no dataset 'tracks'"), std::string::npos)
      << differs.err;

  std::ofstream(dir / "plain") << "x";
  auto unwritable = run_salt({"shuffle", train().string(), "-o", (dir / "plain" / "o.h5").string()}, dir.path());
  EXPECT_NE(unwritable.exit_code, 0);
  EXPECT_EQ(error_lines(unwritable.err), 1) << unwritable.err;
  EXPECT_NE(unwritable.err.find("output directory of salt shuffle"), std::string::npos) << unwritable.err;

  // An existing file that is not an input: kept unless --overwrite.
  std::ofstream(dir / "precious.h5") << "keep me";
  auto existing = run_salt({"shuffle", train().string(), "-o", (dir / "precious.h5").string()}, dir.path());
  EXPECT_NE(existing.exit_code, 0);
  EXPECT_EQ(error_lines(existing.err), 1) << existing.err;
  EXPECT_NE(existing.err.find("precious.h5 exists (pass --overwrite to replace it)"), std::string::npos) << existing.err;
  EXPECT_EQ(read_file(dir / "precious.h5"), "keep me");
  auto replaced = run_salt({"shuffle", train().string(), "-o", (dir / "precious.h5").string(), "--overwrite"}, dir.path());
  EXPECT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_NE(read_file(dir / "precious.h5"), "keep me");
  fs::remove(dir / "precious.h5");

  // A directory as the output: said at once, not after the work ("cannot write odir: Success").
  fs::create_directories(dir / "odir");
  auto into_dir = run_salt({"shuffle", train().string(), "-o", (dir / "odir").string(), "--overwrite"}, dir.path());
  EXPECT_NE(into_dir.exit_code, 0);
  EXPECT_EQ(error_lines(into_dir.err), 1) << into_dir.err;
  EXPECT_NE(into_dir.err.find("odir is a directory: give the name of the file to write"), std::string::npos)
      << into_dir.err;

  auto itself = run_salt({"shuffle", train().string(), "-o", train().string(), "--overwrite"}, dir.path());
  EXPECT_NE(itself.exit_code, 0);
  EXPECT_NE(itself.err.find("is also an input"), std::string::npos) << itself.err;
  EXPECT_FALSE(fs::exists(dir / "o.h5"));
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".buckets."), std::string::npos) << e.path();
}

// A budget near INT64_MAX overflowed to 60,000 tiny buckets; the same file given
// twice (by any spelling: again, through a link, as ./x, or also matched by a
// wildcard) wrote each of its jets twice. Both are refused in one line, exit 2,
// before any output, bucket or temp file exists.
TEST_F(Shuffle, AbsurdBudgetOrAnInputGivenTwiceIsRefusedBeforeWriting) {
  const auto out = dir / "o.h5";
  auto expect_refused = [&](const std::vector<std::string>& args, const std::string& message) {
    std::vector<std::string> argv{"shuffle"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"-o", out.string()});
    auto r = run_salt(argv, dir.path());
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out)) << args.back();
    fs::remove(out);  // each case on its own, also where an output was written
    for (const auto& e : fs::directory_iterator(dir.path()))
      EXPECT_NE(e.path().filename().string().rfind(".o.h5", 0), 0u) << "left: " << e.path();
  };
  for (const std::string mb : {"9223372036854775807", "9223372036854775", "16777217"})
    expect_refused({train().string(), "--memory_mb", mb},
                   "--memory_mb " + mb + " is beyond any machine: give MiB from 10 to 16777216");

  fs::create_symlink(train(), dir / "link.h5");
  const std::string same = " is the same file as ";
  expect_refused({train().string(), train().string()}, "the input " + train().string() + same + train().string());
  expect_refused({train().string(), (dir / "link.h5").string()}, (dir / "link.h5").string() + same);
  expect_refused({"data/pp_output_train.h5", "./data/pp_output_train.h5"}, "./data/pp_output_train.h5" + same);
  expect_refused({train().string(), (dir / "data" / "pp_output_*.h5").string()}, same + train().string());

  // The largest budget allowed runs (its buffers are sized by the data, not the budget).
  auto largest = run_salt({"shuffle", train().string(), val().string(), "-o", out.string(), "--memory_mb", "16777216"},
                          dir.path());
  EXPECT_EQ(largest.exit_code, 0) << largest.err;
  auto py = run_python(kSameJets, {out.string(), train().string(), val().string()});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out, "19000\n");
}

}  // namespace
}  // namespace salt::testing
