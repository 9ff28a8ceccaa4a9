// A scratch working directory holding a small toy data set (data/toy, where
// configs/base.yaml looks), made the current directory, because the helpers
// validate runs against the working directory exactly as `salt fit` would.
// Also stand-ins for sbatch / condor_submit that record their arguments.
#pragma once
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/toy_data.h"
#include "submit/slurm_options.h"
#include "support/test_support.h"
#include "core/remove_tree.h"

namespace salt::testing {

class SubmitTest : public ::testing::Test {
 public:
  static std::filesystem::path work() { return dir()->path(); }
  static std::string cfg(const std::string& name) { return (source_dir() / "configs" / name).string(); }
  static bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

 protected:
  static void SetUpTestSuite() {
    original_cwd() = std::filesystem::current_path();
    dir() = std::make_unique<TempDir>();
    data::ToyDataOptions toy;
    toy.set_out_dir(dir()->path() / "data" / "toy").set_num_train(600).set_num_val(200).set_num_test(200);
    toy.block_jets = 200;
    data::write_toy_data(toy);
    std::filesystem::current_path(dir()->path());
  }
  static void TearDownTestSuite() {
    std::filesystem::current_path(original_cwd());
    dir().reset();
  }
  void TearDown() override {
    std::error_code ec;
    salt::remove_tree(work() / "slurm", ec);
    salt::remove_tree(work() / "condor", ec);
  }

  // submit_slurm's options for args after `-c GN2.yaml -c GN2_cpu.yaml`.
  static submit::SlurmOptions slurm(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"-c", cfg("GN2.yaml"), "-c", cfg("GN2_cpu.yaml"), "-t", "test"};
    args.insert(args.end(), extra.begin(), extra.end());
    return submit::parse_slurm_options(args);
  }

  // An executable `name` in a bin/ directory put first on PATH: it appends its
  // arguments to <bin>/<name>.args and prints `reply`.
  static void stand_in(const std::string& name, const std::string& reply) {
    auto bin = work() / "bin";
    std::filesystem::create_directories(bin);
    auto path = bin / name;
    write_file(path, "#!/bin/bash\necho \"$@\" >> \"" + (bin / (name + ".args")).string() + "\"\necho '" + reply + "'\n");
    chmod(path.c_str(), 0755);
    std::string old = std::getenv("PATH") ? std::getenv("PATH") : "";
    if (old.rfind(bin.string() + ":", 0) != 0) setenv("PATH", (bin.string() + ":" + old).c_str(), 1);
  }

 private:
  static std::unique_ptr<TempDir>& dir() {
    static std::unique_ptr<TempDir> d;
    return d;
  }
  static std::filesystem::path& original_cwd() {
    static std::filesystem::path p;
    return p;
  }
};

}  // namespace salt::testing
