// The training step is one object (training/step/train_step.h) that salt fit, the
// tuners' trials and the benches all run: bench_model and bench_fit configure it
// through bench/bench_step.h, salt fit through fit_step_options. Here both take one
// batch from the same weights and must give bitwise the same loss and gradients,
// so that a bench figure measures the step salt fit runs.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "bench_step.h"
#include "support/in_process.h"
#include "training/step/batch_device.h"
#include "training/run_setup.h"
#include "training/step/train_step.h"

namespace salt::testing {
namespace {

struct StepTaken {
  torch::Tensor loss;
  std::vector<torch::Tensor> gradients;
};

// One forward and backward pass of `batch` from zeroed gradients and the same
// generator state (dropout), on the CPU.
StepTaken take_step(training::RunSetup& setup, const training::TrainStepOptions& options, const Batch& batch,
                    training::Accumulation accumulation) {
  setup.model->zero_grad();
  torch::manual_seed(11);
  training::TrainStep step(*setup.model, options);
  const auto out = step.forward_backward(training::batch_to_device(batch, torch::kCPU), accumulation);
  StepTaken taken{out.loss.detach().clone(), {}};
  for (const auto& p : setup.model->parameters()) taken.gradients.push_back(p.grad().clone());
  return taken;
}

void expect_bitwise_equal(const StepTaken& a, const StepTaken& b) {
  EXPECT_TRUE(torch::equal(a.loss, b.loss)) << a.loss.item<double>() << " vs " << b.loss.item<double>();
  ASSERT_EQ(a.gradients.size(), b.gradients.size());
  int64_t differ = 0;
  for (std::size_t i = 0; i < a.gradients.size(); ++i) differ += !torch::equal(a.gradients[i], b.gradients[i]);
  EXPECT_EQ(differ, 0) << "of " << a.gradients.size() << " gradients";
}

TEST(TrainStep, TheBenchesStepIsSaltFitsStepBitwise) {
  InProcessRun run(400, 100, 100);
  for (const std::string precision : {"bf16-mixed", "32"}) {
    SCOPED_TRACE(precision);
    const auto resolved = InProcessRun::resolve({"-c", InProcessRun::repo_config("GN2.yaml"), "-c",
                                                 InProcessRun::repo_config("GN2_cpu.yaml"), "--trainer.precision",
                                                 precision, "--data.batch_size", "100"});
    auto setup = training::prepare_run(resolved, training::Stage::kFit);
    const auto reader = training::open_reader(setup, setup.run.data.train_file, 400, "num_train");
    const auto batch = reader->read(0, 100);
    setup.model->train();
    // As FitRun takes a step of one batch on one process (no gradient sync), its
    // switches read from the environment.
    const auto& trainer = setup.run.trainer;
    const auto switches = training::read_step_options();
    const auto fit = take_step(setup, training::fit_step_options(trainer, torch::kCPU, switches), batch,
                               training::Accumulation{trainer.accumulate_grad_batches, true});
    // As bench_model takes its step (bench_fit: fit_step_options on the config itself).
    const auto bench = take_step(setup, bench::bench_step_options(torch::kCPU, precision), batch, {});
    expect_bitwise_equal(fit, bench);
    // The comparison tells steps apart: the other precision's step differs.
    const auto other = take_step(setup, bench::bench_step_options(torch::kCPU, precision == "32" ? "bf16-mixed" : "32"),
                                 batch, {});
    EXPECT_FALSE(torch::equal(other.loss, fit.loss));
  }
}

// The step takes its batches to the device as its options say (fit_step_options
// fills them from SALT_HOST_TWINS and SALT_COPY_STREAM): one step without twins
// beside one with them, in the same process.
TEST(TrainStep, ToDeviceFollowsTheStepsTransferOptions) {
  InProcessRun run(100, 100, 100);
  const auto resolved = InProcessRun::resolve(
      {"-c", InProcessRun::repo_config("GN2.yaml"), "-c", InProcessRun::repo_config("GN2_cpu.yaml")});
  auto setup = training::prepare_run(resolved, training::Stage::kFit);
  const auto batch = training::open_reader(setup, setup.run.data.train_file, 100, "num_train")->read(0, 10);
  training::TrainStep with(*setup.model, training::TrainStepOptions());
  training::TrainStep without(*setup.model,
                              training::TrainStepOptions().context(training::StepContext().transfer(
                                  training::TransferOptions().host_twins(false))));
  EXPECT_FALSE(with.to_device(batch).twins.empty());
  EXPECT_TRUE(without.to_device(batch).twins.empty());
}

// The step's forward passes take the kernels its StepOptions chose
// (SALT_SHORT_ATTENTION, SALT_SEGMENT_SUM_KERNEL), passed down instead of set for the
// process; StepOptions' defaults are the forward pass's own (ForwardKernels{}).
TEST(TrainStep, KernelsFollowTheRunsStepOptions) {
  const models::ForwardKernels defaults;
  const auto taken = training::fit_step_options(config::TrainerConfig{}, torch::kCPU, {}).context().kernels();
  EXPECT_EQ(taken.short_attention, defaults.short_attention);
  EXPECT_EQ(taken.segment_sum_kernel, defaults.segment_sum_kernel);
  training::StepOptions switches;
  switches.short_attention.value = !defaults.short_attention;
  switches.segment_sum_kernel.value = !defaults.segment_sum_kernel;
  const auto chosen = training::fit_step_options(config::TrainerConfig{}, torch::kCPU, switches).context().kernels();
  EXPECT_EQ(chosen.short_attention, !defaults.short_attention);
  EXPECT_EQ(chosen.segment_sum_kernel, !defaults.segment_sum_kernel);
}

// Bucketed rows (models/packing/forward_context.h) only where bf16 steps on the CPU run
// LibTorch's own bf16 kernels (oneDNN) and SALT_CPU_BF16_STATIC_ROWS leaves them on.
TEST(TrainStep, BucketedRowsOnlyForNativeBf16StepsOnTheCpu) {
  config::TrainerConfig bf16, fp32, half;
  bf16.precision = config::Precision::kBFloat16Mixed;
  half.precision = config::Precision::kFloat16Mixed;  // bf16 as well on the CPU, as in salt
  training::StepOptions native;
  native.cpu_bf16.value = training::CpuBf16Mode::kNative;
  native.cpu_bf16_static_rows.value = true;
  auto emulated = native, off = native;
  emulated.cpu_bf16.value = training::CpuBf16Mode::kEmulated;
  off.cpu_bf16_static_rows.value = false;
  auto bucketed = [](const config::TrainerConfig& t, const training::StepOptions& o) {
    return training::fit_step_options(t, torch::kCPU, o).context().kernels().bucketed_rows;
  };
  EXPECT_TRUE(bucketed(bf16, native));
  EXPECT_TRUE(bucketed(half, native));
  EXPECT_FALSE(bucketed(fp32, native));
  EXPECT_FALSE(bucketed(bf16, emulated));
  EXPECT_FALSE(bucketed(bf16, off));
  // On a card bf16 steps are no CPU bf16 steps (their static rows are the graphs').
  EXPECT_FALSE(training::fit_step_options(bf16, torch::Device(torch::kCUDA, 0), native).context().kernels().bucketed_rows);
}

}  // namespace
}  // namespace salt::testing
