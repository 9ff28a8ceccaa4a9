// Wildcard inputs as HDF5 virtual datasets (data/virtual_file.h) on real files:
// rows in sorted file order, read by our reader and by h5py, reuse and rebuild,
// and every bad input in one line.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "core/errors.h"
#include "data/h5_reader.h"
#include "data/virtual_file.h"
#include "h5_test_files.h"
#include "support/test_support.h"

namespace salt::data {
namespace {
namespace fs = std::filesystem;
constexpr int64_t kSlots = 4;

// Part `part` of a data set: jet ids part*1000 + row, tracks carrying the same id.
void write_part(const fs::path& path, int part, int64_t rows, h5::FieldType id_type = h5::kF4,
                int64_t slots = kSlots) {
  h5::File f = h5::File::create(path);
  auto value = [part](int64_t r, int64_t s, const std::string& name) {
    if (name == "valid") return s < 2 ? 1.0 : 0.0;
    if (name == "flavour_label") return static_cast<double>((part + r) % 3);
    return part * 1000.0 + r + (name == "d0" ? 0.25 * s : 0.0);
  };
  // An empty part cannot be chunked (chunks may not exceed fixed dimensions).
  const auto compression = rows > 0 ? h5::Compression::Lzf : h5::Compression::None;
  const auto chunk_rows = static_cast<hsize_t>(rows > 0 ? 4 : 0);
  std::vector<hsize_t> jet_chunk, track_chunk;
  if (chunk_rows) jet_chunk = {chunk_rows}, track_chunk = {chunk_rows, static_cast<hsize_t>(slots)};
  testfiles::write_dataset(f, "jets", {{"id", id_type}, {"flavour_label", h5::kI4}}, rows, 0, value, compression,
                           jet_chunk);
  testfiles::write_dataset(f, "tracks", {{"valid", h5::kBool}, {"d0", h5::kF4}}, rows, slots, value, compression,
                           track_chunk);
  h5::write_attr(f.dataset("jets").id(), "flavour_label", std::vector<std::string>{"bjets", "cjets", "ujets"});
  h5::write_attr(f.id(), "unique_jets", rows);
}

ReaderOptions options() {
  return ReaderOptions().set_variables({{"jets", {"id"}}, {"tracks", {"d0"}}}).set_labels({{"jets", {"flavour_label"}}});
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

class VirtualFile : public ::testing::Test {
 protected:
  // Sorted by name: part_10 (rows 2), part_2 (rows 5), part_3 (rows 0), part_7 (rows 3).
  void SetUp() override {
    fs::create_directories(dir / "in");
    write_part(dir / "in" / "part_2.h5", 2, 5);
    write_part(dir / "in" / "part_10.h5", 10, 2);
    write_part(dir / "in" / "part_7.h5", 7, 3);
    write_part(dir / "in" / "part_3.h5", 3, 0);
    write_part(dir / "in" / "other.h5", 9, 4);  // does not match
  }
  std::string pattern() const { return (dir / "in" / "part_*.h5").string(); }
  salt::testing::TempDir dir;
};

TEST_F(VirtualFile, RowsFollowTheSortedFilesAndReadLikeTheirConcatenation) {
  EXPECT_TRUE(has_wildcard(pattern()));
  EXPECT_FALSE(has_wildcard((dir / "in" / "part_2.h5").string()));
  EXPECT_TRUE(has_wildcard("a/b?.h5"));
  EXPECT_TRUE(has_wildcard("a/b[12].h5"));
  EXPECT_FALSE(has_wildcard("a*/b.h5"));  // salt: wildcards in the file name only
  EXPECT_EQ(default_virtual_path("/x/pp_output_train_*.h5"), fs::path("/x/pp_output_train_vds/vds.h5"));

  const auto out = build_virtual_file(pattern(), default_virtual_path(pattern()));
  EXPECT_EQ(out, dir / "in" / "part_vds" / "vds.h5");
  H5Reader reader(out, options());
  ASSERT_EQ(reader.num_rows(), 10);
  auto batch = reader.read(0, 10);
  const std::vector<float> ids{10000, 10001, 2000, 2001, 2002, 2003, 2004, 7000, 7001, 7002};
  for (int64_t r = 0; r < 10; ++r) {
    EXPECT_EQ(batch.inputs["jets"][r][0].item<float>(), ids[r]) << r;
    EXPECT_EQ(batch.inputs["tracks"][r][1][0].item<float>(), ids[r] + 0.25f) << r;
    EXPECT_TRUE(batch.pad_masks["tracks"][r][2].item<bool>()) << r;
  }
  EXPECT_EQ(reader.class_names(), (std::vector<std::string>{"bjets", "cjets", "ujets"}));  // attributes copied
  EXPECT_EQ(reader.file_attributes()["unique_jets"].as<int>(), 2);  // the first file's
  ASSERT_EQ(reader.members().size(), 3u);  // the empty part_3 maps nothing
  EXPECT_EQ(reader.members()[0].file, dir / "in" / "part_10.h5");
  EXPECT_EQ(reader.members()[1].rows, 5);
  EXPECT_EQ(reader.files().size(), 4u);  // the virtual file and its members

  SALT_REQUIRE(salt::testing::have_python_module("h5py"), "python3-h5py is not installed");
  auto py = salt::testing::run_python(R"(
import sys, glob, h5py, numpy as np
with h5py.File(sys.argv[1]) as v:
    for name in ("jets", "tracks"):
        parts = [h5py.File(f)[name][:] for f in sorted(glob.glob(sys.argv[2]))]
        assert (v[name][:] == np.concatenate(parts)).all(), name
        assert v[name].is_virtual, name
print("ok")
)",
                                       {out.string(), pattern()});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out, "ok\n");
}

TEST_F(VirtualFile, ReusedWhileTheMembersAreUnchangedAndRebuiltWhenOneChanges) {
  const auto out = dir / "vds" / "train.h5";
  build_virtual_file(pattern(), out);
  struct stat first {};
  ::stat(out.c_str(), &first);
  build_virtual_file(pattern(), out);
  struct stat again {};
  ::stat(out.c_str(), &again);
  EXPECT_EQ(first.st_ino, again.st_ino);  // the same file: reused

  write_part(dir / "in" / "part_3.h5", 3, 6);  // the empty part now has rows
  build_virtual_file(pattern(), out);
  EXPECT_EQ(H5Reader(out, options()).num_rows(), 16);
  write_part(dir / "in" / "part_4.h5", 4, 1);  // a new match
  build_virtual_file(pattern(), out);
  EXPECT_EQ(H5Reader(out, options()).num_rows(), 17);
  // Only the virtual file is left in its directory (no lock or temp files).
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "vds"), fs::directory_iterator()), 1);
}

TEST_F(VirtualFile, AVirtualFileInTheMatchedDirectoryIsNotItsOwnMember) {
  const auto out = dir / "in" / "part_all.h5";  // matches part_*.h5 itself
  build_virtual_file(pattern(), out);
  build_virtual_file(pattern(), out);
  EXPECT_EQ(H5Reader(out, options()).num_rows(), 10);
}

TEST_F(VirtualFile, BadInputsAreOneLineAndLeaveNothing) {
  auto nothing = error_of([&] { build_virtual_file((dir / "in" / "nope_*.h5").string(), dir / "v" / "a.h5"); });
  EXPECT_NE(nothing.find("no files match " + (dir / "in" / "nope_*.h5").string()), std::string::npos) << nothing;
  EXPECT_NE(error_of([&] { match_files((dir / "absent" / "x_*.h5").string()); }).find("no directory"), std::string::npos);

  write_part(dir / "in" / "part_5.h5", 5, 2, h5::kF8);  // id is f8 here, f4 in the first file
  auto types = error_of([&] { build_virtual_file(pattern(), dir / "v" / "a.h5"); });
  EXPECT_NE(types.find("part_5.h5 differs from " + (dir / "in" / "part_10.h5").string() +
                       ": in dataset 'jets', field 'id' is f8, not f4"),
            std::string::npos)
      << types;
  write_part(dir / "in" / "part_5.h5", 5, 2, h5::kF4, kSlots + 1);
  auto shape = error_of([&] { build_virtual_file(pattern(), dir / "v" / "a.h5"); });
  EXPECT_NE(shape.find("in dataset 'tracks', shape (N, 5), not (N, 4)"), std::string::npos) << shape;
  EXPECT_FALSE(fs::exists(dir / "v"));  // the directory it made is gone again

  fs::remove(dir / "in" / "part_5.h5");
  std::ofstream(dir / "plain") << "x";
  auto unwritable = error_of([&] { build_virtual_file(pattern(), dir / "plain" / "sub" / "vds.h5"); });
  EXPECT_NE(unwritable.find("directory for the virtual dataset of " + pattern()), std::string::npos) << unwritable;
  for (const auto& message : {nothing, types, shape, unwritable}) EXPECT_EQ(message.find('\n'), std::string::npos);
}

// A matching link that leads nowhere (dangling, or a loop) is named, never taken as
// a member and never allowed to end the listing early.
TEST_F(VirtualFile, AMatchingLinkToNothingIsNamed) {
  EXPECT_EQ(match_files(pattern()).size(), 4u);
  fs::create_symlink(dir / "in" / "gone.h5", dir / "in" / "part_4.h5");
  auto dangling = error_of([&] { match_files(pattern()); });
  EXPECT_NE(dangling.find(pattern() + " matches " + (dir / "in" / "part_4.h5").string() +
                          ", a symbolic link that leads to no file"),
            std::string::npos)
      << dangling;
  fs::remove(dir / "in" / "part_4.h5");
  fs::create_symlink(dir / "in" / "part_8.h5", dir / "in" / "part_8.h5");  // a loop
  auto loop = error_of([&] { match_files(pattern()); });
  EXPECT_NE(loop.find("part_8.h5, a symbolic link that leads to no file"), std::string::npos) << loop;
  fs::remove(dir / "in" / "part_8.h5");
  // A link to a real member is a member.
  fs::create_symlink(dir / "in" / "other.h5", dir / "in" / "part_9.h5");
  EXPECT_EQ(match_files(pattern()).size(), 5u);
}

TEST_F(VirtualFile, AMissingMemberIsRefusedWhenOpened) {
  const auto out = build_virtual_file(pattern(), dir / "v.h5");
  fs::remove(dir / "in" / "part_7.h5");
  auto message = error_of([&] { H5Reader(out, options()); });
  EXPECT_NE(message.find("member file " + (dir / "in" / "part_7.h5").string() + " of dataset"), std::string::npos)
      << message;
  EXPECT_NE(message.find("is missing"), std::string::npos) << message;
}

}  // namespace
}  // namespace salt::data
