// LibTorch's intra-op threads for a run: OMP_NUM_THREADS when set, LibTorch's
// default on the CPU (tests/gpu checks one thread for a run on a card).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

#include "core/errors.h"
#include "training/threads.h"

namespace {

struct RestoreThreads {
  int before = torch::get_num_threads();
  ~RestoreThreads() {
    unsetenv("OMP_NUM_THREADS");
    torch::set_num_threads(before);
  }
};

}  // namespace

TEST(Threads, OmpNumThreadsDecides) {
  RestoreThreads restore;
  salt::config::TrainerConfig cpu;
  cpu.accelerator = "cpu";
  setenv("OMP_NUM_THREADS", "1", 1);
  EXPECT_EQ(salt::training::configure_torch_threads(cpu), 1);
  setenv("OMP_NUM_THREADS", "2", 1);
  EXPECT_EQ(salt::training::configure_torch_threads(cpu), 2);
}

TEST(Threads, TheCpuKeepsLibTorchsCount) {
  RestoreThreads restore;
  unsetenv("OMP_NUM_THREADS");
  torch::set_num_threads(2);
  salt::config::TrainerConfig cpu;
  cpu.accelerator = "cpu";
  EXPECT_EQ(salt::training::configure_torch_threads(cpu), 2);
}

TEST(Threads, OmpNumThreadsIsAWholeNumberUpToFourPerCore) {
  using salt::training::threads_from_env;
  EXPECT_EQ(threads_from_env(nullptr, 2), std::nullopt);
  EXPECT_EQ(threads_from_env("", 2), std::nullopt);
  EXPECT_EQ(threads_from_env("1", 2), 1);
  EXPECT_EQ(threads_from_env("8", 2), 8);
  EXPECT_EQ(threads_from_env("64", 16), 64);
  for (const char* bad : {"0", "9", "-1", "+2", " 2", "2.0", "two", "100000", "99999999999999999999"})
    EXPECT_THROW(threads_from_env(bad, 2), salt::UsageError) << bad;
  try {
    threads_from_env("100000", 2);
  } catch (const salt::UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "OMP_NUM_THREADS=100000: expected a whole number from 1 to 8 (4 threads for each "
                                     "of the 2 cores this process may use)");
  }
  EXPECT_GE(salt::training::usable_cores(), 1);
}
