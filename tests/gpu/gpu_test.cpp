// The `gpu` label: what only a CUDA device can show. Built only against a LibTorch
// with CUDA (SALT_CUDA) and run by scripts/gpu_check.sh on the GPU machine
// (`ctest -L gpu`); scripts/check_cuda_build.sh compiles it here and leaves it
// out of its run (`-LE gpu`), since this machine has no GPU. Each test fails,
// never skips, when no device is visible: this label is run where one must be.
#include <gtest/gtest.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "config/trainer_config.h"
#include "core/torch_compat.h"
#include "parallel/free_port.h"
#include "parallel/grad_sync.h"
#include "parallel/process_group.h"
#include "models/layers/attention.h"
#include "models/kernels/attention_kernels.h"
#include "models/kernels/norm_cast.h"
#include "models/kernels/pair_relu.h"
#include "models/kernels/segment_sum.h"
#include "models/kernels/short_attention.h"
#include "models/packing/static_rows.h"
#include "models/model_test_helpers.h"
#include "support/op_trace.h"
#include "training/step/batch_device.h"
#include "training/step/cuda_runtime.h"
#include "training/step/device.h"
#include "training/optim/grad_scaler.h"
#include "training/step/forward_batch.h"
#include "training/step/step_graphs.h"
#include "training/step/steps_ahead.h"
#include "training/step/threads.h"

namespace salt::testing {
namespace {

using models::TensorMap;
const torch::Device kCuda(torch::kCUDA, 0);

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cuda::compiled_with_cuda());
    ASSERT_TRUE(torch::cuda::is_available()) << "no CUDA device visible: run the gpu label on the GPU machine";
    // Reference comparisons in full float32: no TF32.
    cuda::set_float32_matmul_precision("highest");
  }
};

TensorMap on_gpu(TensorMap m) {
  for (auto& [k, t] : m) t = t.to(kCuda);
  return m;
}

models::Labels labels_on_gpu(models::Labels labels) {
  for (auto& [group, by_name] : labels)
    for (auto& [k, t] : by_name) t = t.to(kCuda);
  return labels;
}

// Every parameter's gradient.
std::vector<torch::Tensor> grads_of(const torch::nn::Module& module) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : module.parameters()) grads.push_back(p.grad());
  return grads;
}

// Each gradient in `got` against `want` (undefined in `want`: not compared), as
// |got - want| / max(|want|, floor x the largest |want|): a gradient that is zero by
// construction is rounding noise on both sides, which the floor keeps from counting.
void expect_gradients_close(const std::vector<torch::Tensor>& want, const std::vector<torch::Tensor>& got, double floor,
                            double tol, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  double largest = 0;
  for (const auto& g : want)
    if (g.defined()) largest = std::max(largest, g.norm().item<double>());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!want[i].defined()) continue;
    ASSERT_TRUE(got[i].defined()) << what << ", parameter " << i;
    const double diff =
        (got[i].cpu().to(torch::kDouble) - want[i].cpu().to(torch::kDouble)).norm().item<double>();
    const double scale = std::max(want[i].norm().item<double>(), floor * largest);
    EXPECT_LT(diff / scale, tol) << what << ", parameter " << i;
  }
}

// `to` takes `from`'s weights (the same model built twice).
void copy_parameters(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  const auto src = from.parameters();
  auto dst = to.parameters();
  ASSERT_EQ(src.size(), dst.size());
  for (std::size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
}

// A forward pass's context choosing salt-cpp's kernels (models/packing/forward_context.h):
// which kernel flash-varlen calls take (short_attention.h), and whether grouped
// gathers' gradients take salt-cpp's segment-sum kernel (segment_sum.h).
models::ForwardContext with_kernels(bool short_attention, bool segment_sum = false) {
  models::ForwardContext context;
  context.kernels.short_attention = short_attention;
  context.kernels.segment_sum_kernel = segment_sum;
  return context;
}

double rel_diff(const torch::Tensor& got, const torch::Tensor& want) {
  auto g = got.detach().to(torch::kCPU, torch::kDouble), w = want.detach().to(torch::kCPU, torch::kDouble);
  return ((g - w).norm() / w.norm().clamp_min(1e-30)).item<double>();
}

TEST_F(Gpu, TrainerDevicesSelectTheCard) {
  config::TrainerConfig t;
  t.accelerator = "gpu";
  t.device_ids = {0};
  auto d = training::select_device(t, 0);
  EXPECT_TRUE(d.is_cuda());
  EXPECT_EQ(d.index(), 0);
  t.accelerator = "auto";
  EXPECT_TRUE(training::select_device(t, 0).is_cuda());
}

// batch_to_device copies on a copy stream and the compute stream waits for the
// copies (training/step/batch_device.h): a sum queued right after reads the whole
// batch, not what the copy had reached (256 MiB of pinned input: ~10 ms to cross;
// new values each round, so a block left from the round before cannot pass for it).
TEST_F(Gpu, TheStepWaitsForTheBatchItsCopyStreamBrings) {
  ASSERT_TRUE(training::TransferOptions().copy_stream());  // the default
  for (int round = 0; round < 3; ++round) {
    Batch batch;
    batch.inputs["tracks"] = torch::rand({4000, 40, 400}).pin_memory();
    batch.pad_masks["tracks"] = (torch::rand({4000, 40}) > 0.5).pin_memory();
    batch.labels["jets"]["flavour_label"] = torch::randint(0, 4, {4000}, torch::kLong).pin_memory();
    const double want = batch.inputs["tracks"].sum(torch::kDouble).item<double>();
    const int64_t want_masked = batch.pad_masks["tracks"].sum().item<int64_t>();
    const auto on = training::batch_to_device(std::move(batch), kCuda);
    const double got = on.inputs.at("tracks").sum(torch::kDouble).item<double>();
    EXPECT_NEAR(got, want, 1e-9 * want) << "round " << round;
    EXPECT_EQ(on.pad_masks.at("tracks").sum().item<int64_t>(), want_masked) << "round " << round;
    EXPECT_TRUE(on.labels.at("jets").at("flavour_label").is_cuda());
  }
}

// A run on the card computes its host work with one thread unless OMP_NUM_THREADS
// says otherwise (training/step/threads.h).
TEST_F(Gpu, ARunOnTheCardComputesWithOneHostThread) {
  const int before = torch::get_num_threads();
  const char* env = std::getenv("OMP_NUM_THREADS");
  const std::string env_before = env ? env : "";
  unsetenv("OMP_NUM_THREADS");
  torch::set_num_threads(4);
  config::TrainerConfig t;
  t.accelerator = "gpu";
  EXPECT_EQ(training::configure_torch_threads(t, training::read_step_options().threads).threads, 1);
  setenv("OMP_NUM_THREADS", "3", 1);
  EXPECT_EQ(training::configure_torch_threads(t, training::read_step_options().threads).threads, 3);
  if (env)
    setenv("OMP_NUM_THREADS", env_before.c_str(), 1);
  else
    unsetenv("OMP_NUM_THREADS");
  torch::set_num_threads(before);
}

TEST_F(Gpu, MemoryPeakCountsAnAllocationAndResets) {
  cuda::reset_memory_peak(0);
  {
    auto big = torch::empty({64 * 1024 * 1024 / 4}, torch::TensorOptions().device(kCuda));  // 64 MiB
    torch::cuda::synchronize();
  }
  auto peak = cuda::memory_peak(0);
  ASSERT_TRUE(peak.has_value());
  EXPECT_GE(peak->allocated_mb, 64.0);
  EXPECT_GE(peak->reserved_mb, peak->allocated_mb);
  cuda::reset_memory_peak(0);
  EXPECT_LT(cuda::memory_peak(0)->allocated_mb, 64.0);
}

// The CUDA path (torch's multi-tensor unscale kernel) gives what the CPU path does.
TEST_F(Gpu, GradScalerCudaPathMatchesTheCpuPath) {
  for (float bad : {1.0f, std::numeric_limits<float>::infinity()}) {
    std::vector<torch::Tensor> cpu, gpu;
    for (int i = 0; i < 3; ++i) {
      auto g = torch::randn({5 + i}) * 65536.0;
      if (i == 2) g[1] = bad * g[1];
      for (auto* list : {&cpu, &gpu}) {
        auto p = torch::zeros({5 + i}, torch::TensorOptions().device(list == &cpu ? torch::kCPU : kCuda)).requires_grad_();
        p.mutable_grad() = g.to(p.device());
        list->push_back(p);
      }
    }
    training::GradScaler a, b;
    a.unscale(cpu);
    b.unscale(gpu);
    EXPECT_EQ(a.gradients_finite(), b.gradients_finite());
    EXPECT_EQ(b.gradients_finite(), std::isfinite(bad));
    if (std::isfinite(bad))
      for (int i = 0; i < 3; ++i) EXPECT_TRUE(torch::equal(cpu[i].grad(), gpu[i].grad().cpu())) << i;
  }
}

// The same GN2 (salt's structure, small sizes) on the CPU and the card: loss and
// gradients agree in float32; under bf16 autocast the loss stays close.
TEST_F(Gpu, Gn2LossAndGradientsMatchTheCpu) {
  using namespace models::testing;
  const auto flash_kernel = with_kernels(false);  // flash's own path (the short kernel's: FlashVarlenGradients...)
  for (const std::string attn : {"torch-math", "torch-meff", "flash-varlen"}) {
    auto ctx = make_context(2, 19);
    torch::manual_seed(3);
    auto cpu_model = build(small_gn2_yaml(1, attn), ctx);
    auto gpu_model = build(small_gn2_yaml(1, attn), ctx);
    {
      torch::NoGradGuard no_grad;
      auto src = cpu_model->parameters();
      auto dst = gpu_model->parameters();
      for (std::size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
    }
    gpu_model->to(kCuda);
    auto batch = toy_batch({3, 7, 12, 0, 5, 9}, 16);
    auto labels_gpu = labels_on_gpu(batch.labels);
    auto cpu_loss = cpu_model->forward(batch.inputs, batch.pad_masks, &batch.labels, flash_kernel).loss;
    auto gpu_loss = gpu_model->forward(on_gpu(batch.inputs), on_gpu(batch.pad_masks), &labels_gpu, flash_kernel).loss;
    EXPECT_LT(rel_diff(gpu_loss, cpu_loss), 1e-5) << attn;
    cpu_loss.backward();
    gpu_loss.backward();
    // pool_net.gate_nn.bias has an analytically zero gradient (a constant added to
    // every gate score leaves the softmax unchanged): both devices give rounding
    // noise there (~1e-8), so each difference is measured against at least 1e-5 of
    // the largest gradient (seen on the H200 at 827dd1e: 0.1-1.1 relative, noise to noise).
    // That floor is itself noise: the gate bias gave 1.06e-4 of it on the H100 at
    // 91c4b9d (rows sorted jet by jet, another summation order), hence 3e-4.
    expect_gradients_close(grads_of(*cpu_model), grads_of(*gpu_model), 1e-5, 3e-4, attn);
    std::optional<compat::AutocastGuard> bf16;
    bf16.emplace(torch::kCUDA, torch::kBFloat16);
    auto mixed = gpu_model->forward(on_gpu(batch.inputs), on_gpu(batch.pad_masks), &labels_gpu, flash_kernel).loss;
    EXPECT_LT(rel_diff(mixed.to(torch::kFloat), cpu_loss), 2e-2) << attn;
  }
  std::string kernels;
  for (const auto& k : models::attention_kernels_used()) kernels += k + "; ";
  std::printf("attention kernels: %s\n", kernels.c_str());
  // flash-varlen under bf16 on an sm80+ card: flash attention on the packed rows.
  EXPECT_NE(kernels.find("flash-varlen: flash attention on packed rows (cuda, BFloat16)"), std::string::npos) << kernels;
}

// More jets than one flash call's grid takes (65535): the varlen path slices the
// batch and gives what the math kernel gives (batch 128000 failed with "CUDA
// error: invalid argument" on the H200 at 271879f).
TEST_F(Gpu, FlashVarlenTakesMoreThan65535Jets) {
  using namespace models::testing;
  const auto flash_kernel = with_kernels(false);
  std::vector<int64_t> n_valid(70000);
  for (std::size_t i = 0; i < n_valid.size(); ++i) n_valid[i] = 1 + static_cast<int64_t>(i % 4);
  auto batch = toy_batch(n_valid, 4);
  auto labels = labels_on_gpu(batch.labels);
  auto ctx = make_context(2, 19);
  auto math = build(small_gn2_yaml(1, "torch-math"), ctx);
  auto flash = build(small_gn2_yaml(1, "flash-varlen"), ctx);
  copy_parameters(*math, *flash);
  std::vector<torch::Tensor> losses;
  for (auto* model : {&math, &flash}) {
    (*model)->to(kCuda);
    compat::AutocastGuard bf16(torch::kCUDA, torch::kBFloat16);
    losses.push_back(
        (*model)->forward(on_gpu(batch.inputs), on_gpu(batch.pad_masks), &labels, flash_kernel).loss.to(torch::kFloat));
  }
  EXPECT_TRUE(torch::isfinite(losses[1]).item<bool>());
  EXPECT_LT(rel_diff(losses[1], losses[0]), 2e-2);
  std::string kernels;
  for (const auto& k : models::attention_kernels_used()) kernels += k + "; ";
  EXPECT_NE(kernels.find("flash-varlen: flash attention on packed rows (cuda, BFloat16)"), std::string::npos) << kernels;
}

// flash-varlen's backward on strided q/k/v views, with the encoder's rows sorted
// jet by jet (tracks then registers: two segments to sort; one and three registers):
// under bf16 its loss and gradients follow the math kernel's, within bf16 rounding;
// the same with salt-cpp's short-jet kernel in flash's place (SALT_SHORT_ATTENTION),
// and with its segment-sum kernel for the vertexing gradients beside it.
TEST_F(Gpu, FlashVarlenGradientsFollowTheMathKernel) {
  using namespace models::testing;
  for (int mode = 0; mode < 3; ++mode) {
    const auto kernels = with_kernels(mode > 0, mode == 2);
    for (int registers : {1, 3}) {
      const auto what = std::string(mode == 0 ? "flash, " : mode == 1 ? "short-varlen, " : "short-varlen + segment sums, ") +
                        std::to_string(registers) + " register(s)";
      auto ctx = make_context(2, 19);
      torch::manual_seed(4);
      auto math = build(small_gn2_yaml(registers, "torch-math"), ctx);
      auto flash = build(small_gn2_yaml(registers, "flash-varlen"), ctx);
      copy_parameters(*math, *flash);
      auto batch = toy_batch({3, 7, 12, 0, 5, 9, 16, 1}, 16);
      auto labels = labels_on_gpu(batch.labels);
      std::vector<torch::Tensor> losses;
      for (auto* model : {&math, &flash}) {
        (*model)->to(kCuda);
        compat::AutocastGuard bf16(torch::kCUDA, torch::kBFloat16);
        losses.push_back(
            (*model)->forward(on_gpu(batch.inputs), on_gpu(batch.pad_masks), &labels, kernels).loss.to(torch::kFloat));
        losses.back().backward();
      }
      EXPECT_LT(rel_diff(losses[1], losses[0]), 2e-2) << what;
      expect_gradients_close(grads_of(*math), grads_of(*flash), 1e-2, 5e-2, what);
    }
  }
  std::string kernels;
  for (const auto& k : models::attention_kernels_used()) kernels += k + "; ";
  EXPECT_NE(kernels.find("flash-varlen: flash attention on packed rows (cuda, BFloat16)"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("short-varlen: salt-cpp's kernel for short jets on packed rows (cuda, BFloat16)"),
            std::string::npos)
      << kernels;
}

// salt-cpp's short-jet kernel on the card (models/kernels/cuda/short_attention.cu) against
// the same block maths on the CPU (tests/models/kernels/short_attention_test.cpp checks
// those against plain attention): float32 to rounding, bf16 and fp16 to their
// precision; forward and the gradient of q, k and v.
// Jets of 0 to `longest` rows, GN2's head size.
void expect_short_attention_follows_cpu(int64_t jets, int64_t longest) {
  torch::manual_seed(6);
  const int64_t heads = 8, dh = 32, d = heads * dh;
  auto lengths = torch::randint(0, longest + 1, {jets}, torch::kLong);
  lengths[0] = longest;
  auto starts = torch::cat({torch::zeros({1}, torch::kLong), lengths.cumsum(0)});
  const int64_t n = starts[jets].item<int64_t>();
  auto qkv = torch::randn({n, 3 * d});
  auto upstream = torch::randn({n, d});
  const double scale = 1.0 / std::sqrt(double(dh));
  auto x = qkv.clone().requires_grad_(true);
  auto want = models::short_varlen_attention(x, starts, longest, heads, scale);
  (want * upstream).sum().backward();
  ASSERT_TRUE(models::short_varlen_applies(qkv.to(kCuda), heads, longest));
  for (auto type : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
    auto xg = qkv.to(kCuda, type).requires_grad_(true);
    auto got = models::short_varlen_attention(xg, starts.to(kCuda), longest, heads, scale);
    EXPECT_EQ(got.scalar_type(), type);
    (got * upstream.to(kCuda, type)).sum().backward();
    const double tol = type == torch::kFloat ? 1e-5 : type == torch::kHalf ? 5e-3 : 2e-2;
    EXPECT_LT(rel_diff(got.to(torch::kFloat), want), tol) << type << ", " << jets << " jets";
    EXPECT_LT(rel_diff(xg.grad().to(torch::kFloat), x.grad()), type == torch::kFloat ? 1e-5 : 4 * tol)
        << type << ", " << jets << " jets";
  }
}

TEST_F(Gpu, ShortAttentionKernelFollowsItsCpuBlocks) {
  expect_short_attention_follows_cpu(2000, 40);
  expect_short_attention_follows_cpu(70000, 4);  // more jets than flash's grid takes
  // Jets long enough that the backward's shared memory needs the opt-in above 48 KB.
  expect_short_attention_follows_cpu(50, 70);
}

// salt-cpp's segment-sum kernel (models/kernels/cuda/segment_sum.cu) against LibTorch's
// operators on the card, in each type it takes, with and without an order, 70000
// segments (GN2's tracks at batch 4000 are ~64000) and NaN rows past the last
// segment, which neither may read; 128 columns (GN2's), 24 (a block narrower than
// 128 threads) and 200 (some threads sum two columns).
TEST_F(Gpu, SegmentSumKernelFollowsLibTorch) {
  ASSERT_TRUE(models::segment_sum_kernel_compiled()) << "built without salt-cpp's CUDA kernels";
  torch::manual_seed(11);
  const auto counts = torch::randint(0, 30, {70000}, torch::kLong);
  const int64_t rows = counts.sum().item<int64_t>();
  const auto order = torch::cat({torch::randperm(rows, torch::kLong), torch::arange(rows, rows + 3, torch::kLong)});
  for (const int64_t columns : {128, 24, 200}) {
    auto g = torch::randn({rows + 3, columns});
    g.narrow(0, rows, 3).fill_(std::numeric_limits<float>::quiet_NaN());
    for (const auto type : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
      for (const bool ordered : {false, true}) {
        const auto gc = g.to(kCuda, type);
        const auto cc = counts.to(kCuda);
        const auto oc = ordered ? order.to(kCuda) : torch::Tensor();
        const auto want = models::segment_sum_rows_reference(gc, cc, oc);
        const auto got = models::segment_sum_rows(gc, cc, oc, /*use_kernel=*/true);
        const std::string what = std::string(c10::toString(type)) + (ordered ? ", ordered, " : ", ") +
                                 std::to_string(columns) + " columns";
        ASSERT_EQ(got.scalar_type(), type) << what;
        EXPECT_TRUE(torch::isfinite(got).all().item<bool>()) << what;
        // Both sum in float32 and round once: a float32 summation order apart, which
        // a half type's rounding may turn into one unit in its last place.
        const double tol = type == torch::kFloat ? 1e-5 : type == torch::kHalf ? 1e-3 : 8e-3;
        EXPECT_TRUE(torch::allclose(got.to(torch::kFloat), want.to(torch::kFloat), tol, 1e-5)) << what;
      }
    }
  }
}

// salt-cpp's norm-and-cast kernel (models/kernels/cuda/norm_cast.cu) against its lane
// maths on the CPU (tests/models/kernels/norm_cast_test.cpp holds those to LibTorch's
// layer_norm and cast) and against LibTorch's layer_norm and cast on the card, forward
// and gradient: 70000 rows (GN2's tracks at batch 4000 are ~64000) of GN2's 256
// columns, of 24 (fewer than a warp's lanes) and of 200. The forward may differ by
// one unit of the half type where the float32 sums, added in another order or with
// nvcc's fused multiply-adds, fall on either side of a rounding boundary.
TEST_F(Gpu, NormCastKernelFollowsItsCpuMaths) {
  ASSERT_TRUE(models::norm_cast_kernel_compiled()) << "built without salt-cpp's CUDA kernels";
  torch::manual_seed(12);
  for (const int64_t d : {256, 24, 200}) {
    for (const auto type : {torch::kBFloat16, torch::kHalf}) {
      const std::string what = std::string(c10::toString(type)) + ", " + std::to_string(d) + " columns";
      const auto rows = torch::randn({70000, d}) * 3 + 1.5;
      const auto upstream = torch::randn({70000, d}).to(type);
      auto x = rows.clone().requires_grad_(true);
      auto y = models::layer_norm_cast(x, type);
      y.backward(upstream);
      auto xg = rows.to(kCuda).requires_grad_(true);
      auto yg = models::layer_norm_cast(xg, type);
      yg.backward(upstream.to(kCuda));
      auto xr = rows.to(kCuda).requires_grad_(true);
      auto want = models::layer_norm_cast_reference(xr, type);
      want.backward(upstream.to(kCuda));
      ASSERT_EQ(yg.scalar_type(), type) << what;
      ASSERT_EQ(xg.grad().scalar_type(), torch::kFloat) << what;
      const double unit = type == torch::kBFloat16 ? 1.0 / 128 : 1.0 / 1024;  // one unit, relative, at most
      for (const auto* other : {&y, &want}) {
        const auto o = other->to(kCuda, torch::kFloat);
        EXPECT_TRUE(torch::allclose(yg.to(torch::kFloat), o, unit, 1e-6)) << what;
        EXPECT_GT(torch::eq(yg.to(torch::kFloat), o).to(torch::kFloat).mean().item<double>(), 0.999) << what;
      }
      EXPECT_LT(rel_diff(xg.grad(), x.grad()), 1e-5) << what;
      EXPECT_LT(rel_diff(xg.grad(), xr.grad()), 1e-5) << what;
    }
  }
}

// salt-cpp's vertexing edge kernels (models/kernels/cuda/pair_relu.cu forward, the
// segment sums with the ReLU's mask backward) against LibTorch's gathers, add and
// ReLU on the card, at GN2's size (70,000 tracks, ~1M edges, 128 columns, the two
// halves of one product 256 apart), and against the kernels' functions on the CPU
// (tests/models/kernels/pair_relu_test.cpp) in float32. The forward adds and rounds
// as LibTorch's add does: equal. The gradients are float32 sums in another order.
TEST_F(Gpu, PairReluKernelFollowsLibTorch) {
  ASSERT_TRUE(models::pair_relu_kernel_compiled()) << "built without salt-cpp's CUDA kernels";
  torch::manual_seed(13);
  const int64_t rows = 70000, hidden = 128;
  const auto counts = torch::randint(0, 30, {rows}, torch::kLong);
  const auto row_i = torch::repeat_interleave(torch::arange(rows, torch::kLong), counts);
  const int64_t edges = row_i.size(0);
  const auto row_j = torch::randint(0, rows, {edges}, torch::kLong);
  const auto order = std::get<1>(row_j.sort(/*stable=*/true, 0, false));
  const auto counts_j = torch::bincount(row_j, {}, rows);
  const auto p = torch::randn({rows, 2 * hidden});
  const auto upstream = torch::randn({edges, hidden});
  auto run = [&](torch::Device device, torch::ScalarType type, bool fused) {
    auto leaf = p.to(device, type).requires_grad_(true);
    const models::PairSide senders{counts.to(device), torch::Tensor()};
    const models::PairSide receivers{counts_j.to(device), order.to(device)};
    const auto p_i = leaf.narrow(1, 0, hidden), p_j = leaf.narrow(1, hidden, hidden);
    const auto ri = row_i.to(device), rj = row_j.to(device);
    auto h = fused ? models::pair_relu(p_i, p_j, ri, rj, senders, receivers)
                   : models::pair_relu_reference(p_i, p_j, ri, rj);
    h.backward(upstream.to(device, type));
    return std::make_pair(h.detach().to(torch::kCPU, torch::kFloat), leaf.grad().to(torch::kCPU, torch::kFloat));
  };
  for (const auto type : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
    const std::string what = c10::toString(type);
    const auto [h, grad] = run(kCuda, type, true);
    const auto [want_h, want_grad] = run(kCuda, type, false);
    EXPECT_TRUE(torch::equal(h, want_h)) << what;
    const double tol = type == torch::kFloat ? 1e-5 : type == torch::kHalf ? 1e-3 : 8e-3;
    EXPECT_TRUE(torch::allclose(grad, want_grad, tol, 1e-5)) << what;
    if (type != torch::kFloat) continue;
    const auto [cpu_h, cpu_grad] = run(torch::kCPU, type, true);
    EXPECT_TRUE(torch::equal(h, cpu_h)) << what;
    EXPECT_TRUE(torch::allclose(grad, cpu_grad, 1e-5, 1e-5)) << what;
  }
}

// The run-ahead limit (training/step/steps_ahead.h): with depth 1, a step issued while
// the previous one (20 float32 4096^3 products, tens of ms on any card) is still
// running waits for it; with depth 0 nothing waits.
TEST_F(Gpu, StepsAheadHoldsTheHostBack) {
  for (int depth : {1, 0}) {
    cuda::StepsAhead ahead(depth);
    auto a = torch::randn({4096, 4096}, kCuda);
    for (int step = 0; step < 3; ++step) {
      for (int i = 0; i < 20; ++i) a = torch::tanh(a.mm(a) * 1e-3);
      ahead.step_issued(0);
    }
    EXPECT_EQ(ahead.steps(), 3);
    if (depth == 1)
      EXPECT_GE(ahead.waits(), 1);
    else
      EXPECT_EQ(ahead.waits(), 0);
    torch::cuda::synchronize();
  }
}

// A one-rank NCCL run (this machine has one card; two ranks need two): the
// rendezvous, the start-up broadcast and the bucketed gradient all-reduce of a
// GN2 step go through NCCL on CUDA tensors, and leave what a plain backward gives
// (the mean over one rank is the gradient itself).
TEST_F(Gpu, NcclOneRankGroupSyncsAGn2Step) {
  using namespace models::testing;
  parallel::DistEnv env;
  env.launcher = parallel::Launcher::kTorchrun;
  env.master_port = parallel::free_local_port();
  auto group = parallel::ProcessGroup::connect(env, kCuda, parallel::GroupOptions{}.set_timeout(std::chrono::seconds(60)));
  EXPECT_EQ(group->backend_name(), "nccl");
  auto ctx = make_context(2, 19);
  auto model = build(small_gn2_yaml(1, "flash-varlen"), ctx);
  model->to(kCuda);
  parallel::broadcast_module(*group, *model);
  auto batch = toy_batch({3, 7, 12, 0, 5, 9}, 16);
  auto labels = labels_on_gpu(batch.labels);
  auto loss = [&] { return model->forward(on_gpu(batch.inputs), on_gpu(batch.pad_masks), &labels).loss; };
  loss().backward();
  std::vector<torch::Tensor> plain;
  for (const auto& g : grads_of(*model)) plain.push_back(g.defined() ? g.clone() : torch::Tensor());
  model->zero_grad();
  // Small buckets: several all-reduces, most started by the hooks during backward.
  parallel::GradSync sync(*group, model->parameters(), parallel::GradSyncOptions{}.set_bucket_bytes(4096));
  sync.begin_backward(true);
  loss().backward();
  sync.finish();
  EXPECT_GT(sync.num_buckets(), 1u);
  EXPECT_GT(sync.stats().buckets_launched_in_backward, 0);
  // Two backward passes differ by the kernels' own nondeterminism (atomic adds):
  // pool_net.gate_nn.bias, whose gradient is analytically zero, gave noise 23.5x
  // apart on the H100 at ab05bfc. So each difference is measured against at least
  // 1e-5 of the largest gradient, with Gn2LossAndGradientsMatchTheCpu's 3e-4.
  expect_gradients_close(plain, grads_of(*model), 1e-5, 3e-4, "after the NCCL sync");
  group->barrier();
}


// Static rows and CUDA graphs last: a capture that went wrong could leave this
// process's CUDA state unusable for the cases after it.
// One bf16 training step of `model` on the card, its forward pass given `context`:
// the loss and every gradient.
std::pair<torch::Tensor, std::vector<torch::Tensor>> bf16_step(models::SaltWrapper& model,
                                                              const models::testing::ToyBatch& batch,
                                                              const models::ForwardContext& context = {}) {
  model->zero_grad();
  auto labels = labels_on_gpu(batch.labels);
  compat::AutocastGuard bf16(torch::kCUDA, torch::kBFloat16);
  auto loss = model->forward(on_gpu(batch.inputs), on_gpu(batch.pad_masks), &labels, context).loss.to(torch::kFloat);
  loss.backward();
  std::vector<torch::Tensor> grads;
  for (const auto& g : grads_of(*model)) grads.push_back(g.defined() ? g.clone() : g);
  return {loss.detach(), grads};
}

// Static rows (models/packing/static_rows.h) on the card, where the attention kernels and
// the segment sums leave padding rows unwritten forward and backward: the step
// equals plain packing with NaN at the padded slots, in every kernel mode.
TEST_F(Gpu, StaticRowsStepEqualsPlainPackingOnTheCard) {
  using namespace models::testing;
  for (int mode = 0; mode < 3; ++mode) {
    auto context = with_kernels(mode > 0, mode == 2);
    const std::string what = mode == 0 ? "flash" : mode == 1 ? "short-varlen" : "short-varlen + segment sums";
    torch::manual_seed(4);
    auto model = build(small_gn2_yaml(2, "flash-varlen"), make_context(2, 19));
    model->to(kCuda);
    model->train();
    const auto batch = nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 5);
    const auto plain = bf16_step(model, batch, context);
    models::StaticRows on;
    context.static_rows = &on;
    const auto stat = bf16_step(model, batch, context);
    ASSERT_TRUE(stat.first.isfinite().item<bool>()) << what;
    EXPECT_LT(rel_diff(stat.first, plain.first), 1e-2) << what;
    for (const auto& g : stat.second)
      if (g.defined()) ASSERT_TRUE(g.isfinite().all().item<bool>()) << what;
    expect_gradients_close(plain.second, stat.second, 1e-2, 5e-2, what);
  }
}

// Two batches of one bucket dispatch the same operators on the card too, with the
// kernels of a GN2 fit (flash-varlen): the condition for replaying a CUDA graph.
TEST_F(Gpu, StaticRowsDispatchTheSameOperatorsForOneBucket) {
  using namespace models::testing;
  auto model = build(small_gn2_yaml(2, "flash-varlen"), make_context(2, 19));
  model->to(kCuda);
  model->train();
  auto trace = [&](const ToyBatch& batch) {
    OpTrace t;
    models::StaticRows on;
    models::ForwardContext context;
    context.static_rows = &on;
    bf16_step(model, batch, context);
    return t.take();
  };
  // 35 and 36 tracks (bucket 36), 202 and 208 edges (bucket 208).
  const auto first = nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 21);
  const auto second = nan_padded_batch({9, 2, 7, 6, 8, 1, 3, 0}, 9, 22);
  trace(first);
  const auto a = trace(first), b = trace(second);
  ASSERT_GT(a.size(), 500u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "operator " << i;
}

// The training step as CUDA graphs (training/step/step_graphs.h) against the same step
// run eagerly with static rows by a twin model, batch by batch: bucket A's first
// batch runs eagerly, its second is captured and replayed, its third replayed;
// bucket B's first eager, its second captured. After each step both models take
// the same plain SGD step and set their gradients to none (as zero_grad), so the
// replays read parameters that changed in place.
TEST_F(Gpu, StepGraphsReplayTheEagerStep) {
  using namespace models::testing;
  torch::manual_seed(4);
  auto eager = build(small_gn2_yaml(2, "flash-varlen"), make_context(2, 19));
  auto graphed = build(small_gn2_yaml(2, "flash-varlen"), make_context(2, 19));
  copy_parameters(*eager, *graphed);
  for (auto* m : {&eager, &graphed}) {
    (*m)->to(kCuda);
    (*m)->train();
  }
  const std::vector<ToyBatch> batches = {
      nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 21), nan_padded_batch({9, 2, 7, 6, 8, 1, 3, 0}, 9, 22),
      nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 23), nan_padded_batch({9, 2, 7, 6, 8, 1, 3, 1}, 9, 24),
      nan_padded_batch({9, 2, 7, 6, 8, 1, 2, 2}, 9, 25)};
  auto on_card = [](const ToyBatch& t) { return training::batch_to_device(as_batch(t), kCuda); };
  const training::Autocast bf16{true, torch::kBFloat16};
  auto step_of = [&bf16](models::SaltWrapper& model) {
    return [&model, &bf16](const training::DeviceBatch& b, models::StaticRows* static_rows) {
      models::ForwardContext context;
      context.static_rows = static_rows;
      auto out = training::forward_batch(*model, b, true, bf16, kCuda, context);
      out.loss.backward();
      return out;
    };
  };
  auto grads = [](models::SaltWrapper& model) {
    std::vector<torch::Tensor> out;
    for (const auto& g : grads_of(*model)) out.push_back(g.defined() ? g.clone() : g);
    return out;
  };
  auto sgd = [](models::SaltWrapper& model) {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.grad().defined()) p.sub_(0.05 * p.grad());
    model->zero_grad();
  };
  training::StepGraphs graphs(*graphed, kCuda);
  for (std::size_t i = 0; i < batches.size(); ++i) {
    torch::Tensor want;
    {
      models::StaticRows on;
      want = step_of(eager)(on_card(batches[i]), &on).loss.detach().to(torch::kFloat);
    }
    const auto got = graphs.run(on_card(batches[i]), step_of(graphed)).loss.to(torch::kFloat);
    const std::string what = "batch " + std::to_string(i);
    EXPECT_LT(rel_diff(got, want), 1e-3) << what;
    expect_gradients_close(grads(eager), grads(graphed), 1e-2, 1e-2, what);
    sgd(eager);
    sgd(graphed);
  }
  expect_gradients_close(eager->parameters(), graphed->parameters(), 1e-3, 1e-3, "parameters after the steps");
  EXPECT_FALSE(graphs.given_up());
  EXPECT_EQ(graphs.graphs(), 2);
  EXPECT_EQ(graphs.replays(), 3);
}

// A bf16 step of a small GN2 with the norm-and-cast kernel (ForwardKernels::
// norm_cast_kernel) against LibTorch's layer_norm and cast: every pre-norm of the
// packed encoder takes the kernel forward and backward (its operators in the
// trace), and the loss and gradients agree within bf16's rounding, eager and as a
// replayed CUDA graph.
TEST_F(Gpu, NormCastStepFollowsLibTorchsNormAndCast) {
  using namespace models::testing;
  torch::manual_seed(4);
  auto model = build(small_gn2_yaml(2, "flash-varlen"), make_context(2, 19));
  model->to(kCuda);
  model->train();
  const auto batch = nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 5);
  models::ForwardContext plain_context, fused_context;
  fused_context.kernels.norm_cast_kernel = true;
  const auto plain = bf16_step(model, batch, plain_context);
  OpTrace trace;
  const auto fused = bf16_step(model, batch, fused_context);
  int64_t forwards = 0, backwards = 0;
  for (const auto& line : trace.take()) {
    forwards += line.rfind("salt::layer_norm_cast ", 0) == 0 || line == "salt::layer_norm_cast";
    backwards += line.rfind("salt::layer_norm_cast_backward", 0) == 0;
  }
  EXPECT_GT(forwards, 0);
  EXPECT_EQ(forwards, backwards);
  ASSERT_TRUE(fused.first.isfinite().item<bool>());
  EXPECT_LT(rel_diff(fused.first, plain.first), 1e-2);
  expect_gradients_close(plain.second, fused.second, 1e-2, 5e-2, "norm and cast, eager");

  const training::Autocast bf16{true, torch::kBFloat16};
  training::StepGraphs graphs(*model, kCuda);
  for (int i = 0; i < 3; ++i) {  // warm-up, capture, replay of one bucket
    model->zero_grad();
    const auto got = graphs.run(training::batch_to_device(as_batch(batch), kCuda),
                                [&](const training::DeviceBatch& b, models::StaticRows* static_rows) {
                                  models::ForwardContext context = fused_context;
                                  context.static_rows = static_rows;
                                  auto out = training::forward_batch(*model, b, true, bf16, kCuda, context);
                                  out.loss.backward();
                                  return out;
                                });
    EXPECT_LT(rel_diff(got.loss.to(torch::kFloat), plain.first), 1e-2) << "graphed step " << i;
  }
  EXPECT_FALSE(graphs.given_up());
  EXPECT_GE(graphs.replays(), 1);
}

// A bf16 step of a small GN2 with the vertexing edge kernels (ForwardKernels::
// segment_sum_kernel: pair_relu.h's forward and the masked segment sums) against
// LibTorch's gathers, add and ReLU: the edge net's first hidden layer takes the
// kernels forward and backward (their operators in the trace), and the loss and
// gradients agree within bf16's rounding, eager and as a replayed CUDA graph.
TEST_F(Gpu, EdgeKernelsStepFollowsLibTorchsOperators) {
  using namespace models::testing;
  torch::manual_seed(4);
  auto model = build(small_gn2_yaml(2, "flash-varlen"), make_context(2, 19));
  model->to(kCuda);
  model->train();
  const auto batch = nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 5);
  models::ForwardContext plain_context, fused_context;
  fused_context.kernels.segment_sum_kernel = true;
  const auto plain = bf16_step(model, batch, plain_context);
  OpTrace trace;
  const auto fused = bf16_step(model, batch, fused_context);
  int64_t forwards = 0, backwards = 0;
  for (const auto& line : trace.take()) {
    forwards += line.rfind("salt::pair_relu ", 0) == 0 || line == "salt::pair_relu";
    backwards += line.rfind("salt::pair_relu_backward", 0) == 0;
  }
  EXPECT_EQ(forwards, 1);   // one vertexing task
  EXPECT_EQ(backwards, 2);  // its senders' and receivers' sums
  ASSERT_TRUE(fused.first.isfinite().item<bool>());
  EXPECT_LT(rel_diff(fused.first, plain.first), 1e-2);
  expect_gradients_close(plain.second, fused.second, 1e-2, 5e-2, "edge kernels, eager");

  const training::Autocast bf16{true, torch::kBFloat16};
  training::StepGraphs graphs(*model, kCuda);
  for (int i = 0; i < 3; ++i) {  // warm-up, capture, replay of one bucket
    model->zero_grad();
    const auto got = graphs.run(training::batch_to_device(as_batch(batch), kCuda),
                                [&](const training::DeviceBatch& b, models::StaticRows* static_rows) {
                                  models::ForwardContext context = fused_context;
                                  context.static_rows = static_rows;
                                  auto out = training::forward_batch(*model, b, true, bf16, kCuda, context);
                                  out.loss.backward();
                                  return out;
                                });
    EXPECT_LT(rel_diff(got.loss.to(torch::kFloat), plain.first), 1e-2) << "graphed step " << i;
  }
  EXPECT_FALSE(graphs.given_up());
  EXPECT_GE(graphs.replays(), 1);
}

// A step that waits for the card (here: no host copies of the masks, so static
// rows read the device's count) cannot be a graph. Its bucket's eager warm-up,
// with device syncs refused, finds it before any capture: the graphs are given up
// and the step is run again as it is, with its own result.
TEST_F(Gpu, StepGraphsGiveUpOnAStepThatWaitsForTheCard) {
  using namespace models::testing;
  torch::manual_seed(4);
  auto model = build(small_gn2_yaml(2, "flash-varlen"), make_context(2, 19));
  model->to(kCuda);
  model->train();
  const auto t = nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 21);
  training::DeviceBatch batch;
  batch.inputs = on_gpu(t.inputs);
  batch.pad_masks = on_gpu(t.pad_masks);
  batch.labels = labels_on_gpu(t.labels);
  batch.size = 8;  // no twins
  const training::Autocast bf16{true, torch::kBFloat16};
  auto step = [&](const training::DeviceBatch& b, models::StaticRows* static_rows) {
    models::ForwardContext context;
    context.static_rows = static_rows;
    auto out = training::forward_batch(*model, b, true, bf16, kCuda, context);
    out.loss.backward();
    return out;
  };
  {  // The sync debug mode salt-cpp sets is the one LibTorch reads (one copy of its state).
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
    EXPECT_THROW(torch::ones({1}, kCuda).item<float>(), c10::Error);
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  }
  const auto want = step(batch, nullptr).loss.detach().to(torch::kFloat);
  model->zero_grad();
  training::StepGraphs graphs(*model, kCuda);
  for (int i = 0; i < 3; ++i) {
    EXPECT_LT(rel_diff(graphs.run(batch, step).loss.detach().to(torch::kFloat), want), 1e-3) << "step " << i;
    model->zero_grad();
  }
  EXPECT_TRUE(graphs.given_up());
  EXPECT_EQ(graphs.graphs(), 0);
}

}  // namespace
}  // namespace salt::testing
