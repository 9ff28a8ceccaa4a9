// The training step's reads of device values (models/packing/host_read.h): each one makes
// the CPU wait for the GPU. The fit loop reads none outside logging steps (losses,
// the NaN check and the progress bar's mean stay on the device; gradient clipping
// returns no norm); the model reads none either (the budget below), so that a new
// read fails here until it is removed or accounted.
#include <regex>

#include "models/packing/host_read.h"
#include "training/fit_support.h"
#include "training/optim/grad_clip.h"

namespace salt::testing {
namespace {

// GN2's reads per step: none. The model reads its masks' token counts and its labels'
// range from the batch's host copies (models/packing/host_twins.h, installed by forward_batch),
// and builds the packed layout and the vertexing pairs without nonzero()/masked_select().
constexpr double kGn2ReadsPerStep = 0;

double reads_per_step(const std::string& log) {
  std::smatch m;
  static const std::regex line("host reads of device values: ([0-9.]+) per training step outside logging steps");
  if (!std::regex_search(log, m, line)) return -1;
  return std::stod(m[1]);
}

TEST_F(FitTest, ATrainingStepReadsNoDeviceValueOutsideLoggingSteps) {
  // 8 steps per epoch, logging every 4: half the steps are logging steps.
  auto plain = salt("fit", small_gn2({"--trainer.max_epochs", "1", "--trainer.log_every_n_steps", "4"}));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(reads_per_step(plain.err), kGn2ReadsPerStep) << plain.err;
  // Clipping by norm adds none (LibTorch's clip_grad_norm_ would read the norm).
  auto clipped = salt("fit", small_gn2({"--trainer.max_epochs", "1", "--trainer.log_every_n_steps", "4",
                                        "--trainer.gradient_clip_val", "0.5", "-ls", "clip"}));
  ASSERT_EQ(clipped.exit_code, 0) << clipped.err;
  EXPECT_EQ(reads_per_step(clipped.err), kGn2ReadsPerStep) << clipped.err;
}

// Bitwise LibTorch's clip_grad_norm_, which Lightning's clipping matches.
TEST(GradClip, EqualsLibTorchsClipGradNormWithoutReadingTheNorm) {
  for (double max_norm : {0.1, 1e3}) {  // clipped, and left alone (coefficient 1)
    torch::manual_seed(7);
    std::vector<torch::Tensor> a, b;
    for (auto shape : {std::vector<int64_t>{3, 4}, {5}, {2, 2, 2}}) {
      auto g = torch::randn(shape);
      auto p = torch::zeros(shape).requires_grad_(), q = torch::zeros(shape).requires_grad_();
      p.mutable_grad() = g.clone();
      q.mutable_grad() = g.clone();
      a.push_back(p);
      b.push_back(q);
    }
    b.push_back(torch::zeros({2}).requires_grad_());  // no gradient: skipped by both
    const auto before = host_reads();
    auto norm = training::clip_grad_norm(b, max_norm);
    EXPECT_EQ(host_reads(), before);
    const double want = torch::nn::utils::clip_grad_norm_(a, max_norm);
    EXPECT_EQ(norm.item<double>(), want);
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i].grad(), b[i].grad())) << i;
  }
}

}  // namespace
}  // namespace salt::testing
