// Why `salt shuffle` exists: weak shuffling reads contiguous batches, so a training
// file in physics order (here: sorted by flavour) gives one-flavour batches and
// trains worse than its shuffled copy.
#include <fstream>
#include <sstream>

#include "training/fit_support.h"

namespace salt::testing {
namespace fs = std::filesystem;

TEST_F(FitTest, APhysicsOrderedFileTrainsWorseThanItsShuffledCopy) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed");
  const auto sorted = dir / "data" / "sorted.h5", shuffled = dir / "data" / "shuffled.h5";
  auto sort = run_python(R"(
import sys, h5py, numpy as np
with h5py.File(sys.argv[1]) as f, h5py.File(sys.argv[2], "w") as out:
    order = np.argsort(f["jets"]["flavour_label"], kind="stable")
    for k, v in f.attrs.items():
        out.attrs[k] = v
    for name, ds in f.items():
        d = out.create_dataset(name, data=ds[:][order], chunks=(100,) + ds.shape[1:], compression="lzf")
        for k, v in ds.attrs.items():
            d.attrs[k] = v
)",
                         {(dir / "data" / "toy" / "pp_output_train.h5").string(), sorted.string()});
  ASSERT_EQ(sort.exit_code, 0) << sort.err;
  auto shuffle = salt("shuffle", {sorted.string(), "-o", shuffled.string(), "--seed", "3"});
  ASSERT_EQ(shuffle.exit_code, 0) << shuffle.err;

  double loss[2];
  const char* names[2] = {"sorted", "shuffled"};
  for (int i = 0; i < 2; ++i) {
    auto r = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", names[i], "--data.train_file",
                                    (i == 0 ? sorted : shuffled).string()}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& row : read_metrics(dir / "logs" / ("GN2_cpu_" + std::string(names[i])) / "metrics.csv"))
      if (row.count("val/loss")) loss[i] = row.at("val/loss");
  }
  std::cout << "val/loss after 2 epochs: flavour-sorted file " << loss[0] << ", its shuffled copy " << loss[1] << "\n";
  EXPECT_GT(loss[0], loss[1] + 0.05);
}

}  // namespace salt::testing
