// One StepContext per command (training/step/step_context.h): the precision's
// autocast, the switches' transfer and kernels and the graphs' choice, decided
// once; the training step, validation and salt test all take it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "config/trainer_config.h"
#include "training/step/step_context.h"
#include "training/step/train_step.h"

namespace salt::training {
namespace {

StepOptions context_switches(std::map<std::string, const char*> vars, bool emulated = false) {
  return parse_step_options([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second;
  }, 2, emulated);
}

TEST(StepContext, DecidedOnceFromThePrecisionTheDeviceAndTheSwitches) {
  config::TrainerConfig trainer;
  const auto plain = make_step_context(trainer, torch::kCPU, context_switches({}));
  EXPECT_FALSE(plain.autocast().enabled);
  EXPECT_TRUE(plain.transfer().host_twins());
  EXPECT_TRUE(plain.kernels().short_attention);
  EXPECT_FALSE(plain.kernels().bucketed_rows);  // float32: no bf16 steps to bucket
  EXPECT_TRUE(plain.graphs().wanted);
  EXPECT_FALSE(plain.graphs().asked);

  trainer.precision = config::Precision::kBFloat16Mixed;
  trainer.deterministic = true;
  const auto set = make_step_context(trainer, torch::kCPU,
                                     context_switches({{"SALT_CUDA_GRAPHS", "1"}, {"SALT_HOST_TWINS", "0"},
                                                       {"SALT_CPU_BF16", "native"}}));
  EXPECT_TRUE(set.autocast().enabled);
  EXPECT_EQ(set.autocast().dtype, torch::kBFloat16);
  EXPECT_FALSE(set.transfer().host_twins());
  EXPECT_TRUE(set.kernels().bucketed_rows);  // native bf16 steps on the CPU
  EXPECT_TRUE(set.graphs().asked);
  EXPECT_TRUE(set.graphs().deterministic);

  // 16-mixed is float16 on a card, bfloat16 on the CPU (salt's rule), and the step
  // built for a run carries the same context.
  trainer.precision = config::Precision::kFloat16Mixed;
  EXPECT_EQ(make_step_context(trainer, torch::Device(torch::kCUDA, 0), context_switches({})).autocast().dtype,
            torch::kFloat16);
  EXPECT_EQ(make_step_context(trainer, torch::kCPU, context_switches({})).autocast().dtype, torch::kBFloat16);
  const auto step = fit_step_options(trainer, torch::kCPU, context_switches({{"SALT_HOST_TWINS", "0"}}));
  EXPECT_FALSE(step.context().transfer().host_twins());
  EXPECT_EQ(step.context().autocast().dtype, torch::kBFloat16);
}

}  // namespace
}  // namespace salt::training
