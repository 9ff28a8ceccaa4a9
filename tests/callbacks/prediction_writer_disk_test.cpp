// PredictionWriter (the `salt test` output) on a full disk, a real 2 MiB tmpfs: the
// rows fit HDF5's chunk cache, so writes succeed and the failure comes at finish().
// It must throw, not rename a mostly-zero file into place, and remove its temp file.
#include <gtest/gtest.h>

#include "training/outputs/prediction_writer.h"
#include "core/errors.h"
#include "data/tiny_fs.h"
#include "data/toy_data.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

TEST(PredictionWriterDiskFull, FinishThrowsAndLeavesNothing) {
  TinyFs tiny;
  SALT_REQUIRE_TINY_FS(tiny);
  TempDir dir;
  const int64_t rows = 4000;
  data::write_toy_file(dir / "test.h5", rows, data::ToyDataOptions(), 3);
  tiny.fill(16 * 1024);  // ~4000 x 32-byte records do not fit in 16 KiB

  callbacks::PredictionWriterOptions o;
  o.test_file = dir / "test.h5";
  o.output = tiny / "preds" / "out__test_ttbar.h5";
  o.num_rows = rows;
  const std::string error = in_child([&]() -> std::string {
    callbacks::PredictionWriter writer(o);
    for (int64_t start = 0; start < rows; start += 1000) {
      Batch batch;
      batch.start = start;
      batch.size = 1000;
      callbacks::Columns cols;
      cols["jets"]["GN2"] = models::PredictionColumns{{"GN2_pb", "GN2_pc"}, torch::rand({1000, 2})};
      try {
        writer.write(batch, cols);
      } catch (const InputError& e) {
        return std::string("write threw, expected finish to: ") + e.what();
      }
    }
    try {
      writer.finish();
      return "finish did not throw";
    } catch (const InputError& e) {
      return e.what();  // ~PredictionWriter removes the temp file
    }
  });
  EXPECT_EQ(error, "cannot write " + o.output.string() + ": No space left on device");
  EXPECT_FALSE(fs::exists(o.output));
  for (const auto& e : fs::directory_iterator(o.output.parent_path())) ADD_FAILURE() << "left behind: " << e.path();
}

}  // namespace
}  // namespace salt::testing
