// A full disk while writing HDF5 files, on a real 2 MiB tmpfs: one-line errors
// naming the file and the errno message, no crash (HDF5's atexit cleanup after a
// failed H5Fclose), and no partial output left behind.
#include <gtest/gtest.h>

#include <random>

#include "core/errors.h"
#include "data/h5_file.h"
#include "data/tiny_fs.h"
#include "data/toy_data.h"

namespace salt::data {
namespace {

namespace fs = std::filesystem;
using salt::testing::TinyFs;

TEST(DiskFull, H5FlushAndCloseReportIt) {
  TinyFs tiny;
  SALT_REQUIRE_TINY_FS(tiny);
  tiny.fill(64 * 1024);
  const std::string error = salt::testing::in_child([&]() -> std::string {
    h5::File file = h5::File::create(tiny / ".out.h5.tmp", tiny / "out.h5");
    try {
      {
        h5::CompoundBuilder b;
        b.add("x", h5::kF8);
        h5::DatasetSpec spec;
        spec.shape = {80'000};  // 640 KB of random doubles, in 64 KB chunks: all in HDF5's chunk cache
        spec.chunk = {8'000};
        spec.compression = h5::Compression::None;
        h5::Id type = b.build();
        h5::Dataset ds = h5::create_dataset(file, "x", type.get(), spec, 8);
        std::vector<double> v(80'000);
        std::mt19937_64 rng(1);
        for (auto& x : v) x = static_cast<double>(rng());
        ds.write_records(0, 80'000, v.data());
        file.flush();  // the cached chunks hit the disk here
      }
      file.close();
      return "no error";
    } catch (const InputError& e) {
      std::string what = e.what();
      try {
        file.close();  // after a failed flush, close fails too (or succeeds): no crash
      } catch (const InputError&) {
      }
      file.close();  // closed either way: a no-op now
      return what;
    }
  });
  EXPECT_EQ(error, "cannot write " + (tiny / "out.h5").string() + ": No space left on device");
}

TEST(DiskFull, ToyDataLeavesNothingBehind) {
  TinyFs tiny;
  SALT_REQUIRE_TINY_FS(tiny);
  // ~2.1 MB of LZF data: passes the (low) size estimate, fails while writing
  auto o = ToyDataOptions().set_out_dir(tiny / "toy").set_num_train(3000).set_num_val(1000).set_num_test(1000);
  ASSERT_LT(estimated_toy_bytes(o), 2 * 1024 * 1024);
  const std::string msg = salt::testing::in_child([&]() -> std::string {
    try {
      write_toy_data(o);
      return "wrote 2 MB into a 2 MiB filesystem";
    } catch (const InputError& e) {
      return e.what();
    }
  });
  EXPECT_EQ(msg.rfind("cannot write " + (tiny / "toy").string() + "/pp_output_", 0), 0u) << msg;
  EXPECT_NE(msg.find(".h5: No space left on device"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_TRUE(tiny.entries("toy").empty()) << "left: " << (tiny.entries("toy").empty() ? "" : tiny.entries("toy")[0]);
}

TEST(DiskFull, ToyDataRefusesWhatCannotFit) {
  TinyFs tiny;
  SALT_REQUIRE_TINY_FS(tiny);
  try {
    write_toy_data(ToyDataOptions().set_out_dir(tiny / "toy").set_num_train(99'999'999'999'999));
    FAIL() << "no size check";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("the toy data set needs about "), std::string::npos) << msg;
    EXPECT_NE(msg.find(" PiB but " + (tiny / "toy").string() + " has only 2.0 MiB free"), std::string::npos) << msg;
  }
  EXPECT_TRUE(tiny.entries("toy").empty());
}

TEST(ToyDataEstimate, IsBelowTheRealSize) {
  salt::testing::TempDir dir;
  for (auto c : {h5::Compression::Lzf, h5::Compression::Gzip, h5::Compression::None}) {
    for (bool half : {false, true}) {
      auto o = ToyDataOptions().set_out_dir(dir / "toy").set_num_train(5000).set_num_val(0).set_num_test(0)
                   .set_compression(c).set_half_precision(half);
      auto files = write_toy_data(o);
      const auto real = fs::file_size(files.train);
      EXPECT_LE(estimated_toy_bytes(o), static_cast<int64_t>(real)) << h5::to_string(c) << " half=" << half;
      EXPECT_GT(estimated_toy_bytes(o), static_cast<int64_t>(real) / 2) << h5::to_string(c) << " half=" << half;
    }
  }
}

}  // namespace
}  // namespace salt::data
