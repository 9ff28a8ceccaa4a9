// Running `salt fit` / `salt test` as a user would, in a scratch directory that
// holds a small toy data set (data/toy, where configs/base.yaml looks).
#pragma once
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.h"

namespace salt::testing {

// Polls `ready` until it holds or `timeout` passes (a background process's progress).
inline bool wait_until(const std::function<bool()>& ready, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ready();
}

// A copy of an HDF5 input with NaN in every valid track's d0 (h5py), which
// data.ignore_finite_checks admits: its training loss goes non-finite.
inline ProcessResult write_nan_tracks_copy(const std::filesystem::path& from, const std::filesystem::path& to) {
  return run_python(R"(
import sys, shutil, h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    t = f["tracks"][...]
    t["d0"][t["valid"]] = np.nan
    f["tracks"][...] = t
)",
                    {from.string(), to.string()});
}

class FitTest : public ::testing::Test {
 protected:
  void SetUp() override { make_toy_data(2000, 500, 500); }

  void make_toy_data(int train, int val, int test) {
    ASSERT_NO_THROW(write_toy_data(dir / "data/toy", train, val, test));
  }

  static std::string cfg(const std::string& name) { return (source_dir() / "configs" / name).string(); }

  // GN2 made small enough for a test: the CPU variant, batches of 250.
  static std::vector<std::string> small_gn2(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"-c", cfg("GN2.yaml"), "-c", cfg("GN2_cpu.yaml"), "--data.batch_size", "250",
                                  "--data.num_workers", "1", "--trainer.enable_progress_bar", "false"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  ProcessResult salt(const std::string& command, const std::vector<std::string>& args,
                     const std::vector<std::string>& env = {"OMP_NUM_THREADS=1"}) {
    std::vector<std::string> all{command};
    all.insert(all.end(), args.begin(), args.end());
    return run_salt(all, dir.path(), env);
  }

  // The run directories under logs/, sorted.
  std::vector<std::filesystem::path> runs() const {
    std::vector<std::filesystem::path> out;
    if (!std::filesystem::exists(dir / "logs")) return out;
    for (const auto& e : std::filesystem::directory_iterator(dir / "logs")) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  static std::vector<std::filesystem::path> checkpoints(const std::filesystem::path& run) {
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(run / "ckpts"))
      if (e.path().extension() == ".ckpt") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  // A run's metrics.csv as rows of column -> value (empty cells left out).
  static std::vector<std::map<std::string, double>> read_metrics(const std::filesystem::path& csv) {
    std::ifstream in(csv);
    std::string line;
    std::getline(in, line);
    std::vector<std::string> header;
    std::stringstream hs(line);
    for (std::string c; std::getline(hs, c, ',');) header.push_back(c);
    std::vector<std::map<std::string, double>> rows;
    while (std::getline(in, line)) {
      std::map<std::string, double> row;
      std::stringstream ls(line);
      std::string cell;
      for (size_t i = 0; std::getline(ls, cell, ','); ++i)
        if (!cell.empty() && i < header.size()) row[header[i]] = std::stod(cell);
      rows.push_back(row);
    }
    return rows;
  }

  TempDir dir;
};

}  // namespace salt::testing
