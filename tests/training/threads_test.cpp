// LibTorch's intra-op threads for a run: OMP_NUM_THREADS when set, LibTorch's
// default on the CPU (tests/gpu checks one thread for a run on a card).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>

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
