// Forward+backward training-step throughput of GN2 on the CPU, salt-cpp next to a
// plain-PyTorch implementation of the same architecture (bench/python/gn2_reference.py,
// run as a subprocess with /usr/bin/python3, same sizes, same thread count), for
//   - GN2 (salt's configs/GN2/GN2.yaml: embed 256, 4 layers, 8 heads, out 128, task
//     heads [128, 64, 32]) at batch 1000, and
//   - the CPU demo GN2 (configs/GN2.yaml + configs/GN2_cpu.yaml: embed 64, 2 layers,
//     4 heads, out 32, task heads [32, 16]) at batch 500,
// 40 track slots with 5..25 valid tracks per jet (mean ~15), jet classification +
// track origin + vertexing with their losses. Both parameter counts are printed
// and must be equal. Then the attention kernels alone at GN2's shape.
// --gpu-suite (scripts/gpu_check.sh): salt's GN2 at batch 4000 (--batch), the whole
// training step with AdamW, salt-cpp (attn_type flash-varlen, as salt's GN2.yaml)
// next to the PyTorch reference eager (SDPA + fused AdamW) and torch.compile'd,
// with jets/s, the ratios and the MFU: the step's model FLOPs (counted on the valid
// tracks: matrix products forward x 3) over the card's bf16 dense peak (--peak-tflops,
// default 989, the H100 SXM's).
// --op-census: after the timed steps, one step's operators by count, copies and own
// time (bench/op_census.h): where the CPU step's time goes.
// Usage: bench_model [--quick] [--threads N] [--iters N] [--no-python] [--op-census]
//                    [--device cpu|cuda] [--precision 32|bf16-mixed] [--python PATH]
//                    [--gpu-suite [--quick] [--batch N] [--peak-tflops T]] [--profile-steps N [--batch N]]
// --profile-steps N: salt-cpp's GN2 step alone (salt's size, --batch, default 4000),
//   its N timed steps between cudaProfilerStart/Stop for `ncu --profile-from-start off`
//   (scripts/gpu_check.sh's profile step: the kernels that take the step's time).
//   --gpu-suite --quick: salt-cpp's step alone (its sync probe and op census; flash
//   attention, the segment-sum kernel, static rows, CUDA graphs and a thread per core
//   beside it), no PyTorch: a short device call.
//   defaults: 2 threads, 2 timed steps after a warm-up (--quick: 1 step, GN2 at batch 250),
//   CPU, float32, /usr/bin/python3 (on the GPU machine: --device cuda --python python3).
#include <torch/cuda.h>
#if SALT_CUDA
#include <cuda_profiler_api.h>
#endif
#include "bench_step.h"
#include "op_census.h"
#include "sync_probe.h"
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/install_paths.h"
#include "config/yaml_load.h"
#include "core/torch_compat.h"
#include "models/kernels/cpu_bf16.h"
#include "models/packing/host_twins.h"
#include "models/model_factory.h"
#include "models/packing/static_rows.h"
#include "models/summary.h"
#include "training/step/batch_device.h"
#include "training/optim/optimization.h"
#include "training/step/step_options.h"
#include "training/step/step_graphs.h"
#include "training/step/train_step.h"

using namespace salt::models;

namespace {

// salt's GN2 model section (configs/GN2/GN2.yaml) with the sizes as placeholders.

struct Size {
  std::string name;
  int64_t embed, layers, heads, out;
  std::string hidden;  // task heads, "128,64,32"
  int64_t batch;
  std::string attn_type = "torch-math";
  bool with_optimizer = false;  // AdamW step in the timed step
  // The batch's host copies are known to the model (models/packing/host_twins.h), as in
  // salt fit: its masks' counts and labels' range need no read of the device.
  bool host_twins = true;
  bool probe_syncs = false;  // after the timed steps, one step under bench/sync_probe.h (CUDA)
  bool census = false;       // after those, one step under bench/op_census.h
  bool static_rows = false;  // rows padded to their bucket (models/packing/static_rows.h), eager
  bool graphs = false;       // forward and backward as a CUDA graph (training/step/step_graphs.h)
  // The model's kernels (models/packing/forward_context.h); unset: the run's switches
  // (SALT_SHORT_ATTENTION, SALT_SEGMENT_SUM_KERNEL), as salt fit takes them.
  std::optional<salt::models::ForwardKernels> kernels;
};

// Where and how the step runs; the PyTorch reference gets the same.
struct Setup {
  torch::Device device = torch::kCPU;
  std::string precision = "32";
  bool profile = false;  // the timed steps between cudaProfilerStart/Stop (for ncu --profile-from-start off)
  bool bf16() const { return precision == "bf16-mixed"; }
  void sync() const {
    if (device.is_cuda()) torch::cuda::synchronize();
  }
};

struct Result {
  double jets_per_s = 0;
  long long params = 0;
  bool ok = false;
  double host_s = 0;  // per step: the host's time to issue it (the device may still be running)
};

// The timed steps as the region a kernel profiler records (ncu --profile-from-start
// off, scripts/gpu_check.sh's profile step); nothing without CUDA.
class ProfiledRegion {
 public:
  explicit ProfiledRegion(bool on) : on_(on) {
#if SALT_CUDA
    if (on_) cudaProfilerStart();
#endif
  }
  void stop() {
#if SALT_CUDA
    if (on_) cudaProfilerStop();
#endif
    on_ = false;
  }
  ~ProfiledRegion() { stop(); }

 private:
  bool on_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// tests/fixtures/GN2_model.yaml (the model tests' GN2) at this size, with the
// reference's settings: the math attention kernel, class names instead of a class dict.
YAML::Node model_yaml(const Size& s) {
  auto y = salt::config::copy_tree(YAML::LoadFile(salt::build_source_dir().string() + "/tests/fixtures/GN2_model.yaml"));
  YAML::Node hidden(YAML::NodeType::Sequence);
  std::stringstream list(s.hidden);
  for (std::string item; std::getline(list, item, ',');) hidden.push_back(std::stoll(item));
  auto a = y["init_args"];
  auto init = a["init_nets"][0]["dense_config"];
  init["output_size"] = s.embed;
  init["hidden_layers"] = YAML::Load("[" + std::to_string(s.embed) + "]");
  auto enc = a["encoder"]["init_args"];
  enc["num_layers"] = s.layers;
  enc["embed_dim"] = s.embed;
  enc["out_dim"] = s.out;
  enc["attn_type"] = s.attn_type;
  enc["attn_kwargs"]["num_heads"] = s.heads;
  a["pool_net"]["init_args"]["input_size"] = s.out;
  for (auto task : a["tasks"]["init_args"]["modules"]) {
    auto args = task["init_args"];
    auto dense = args["dense_config"];
    const bool pairwise = task["class_path"].as<std::string>() == "salt.models.VertexingTask";
    dense["input_size"] = pairwise ? 2 * s.out : s.out;
    dense["hidden_layers"] = salt::config::copy_tree(hidden);
    if (dense["context_size"]) dense["context_size"] = s.out;
    if (args["use_class_dict"]) args["use_class_dict"] = false;
  }
  a["tasks"]["init_args"]["modules"][0]["init_args"]["class_names"] = YAML::Load("[bjets, cjets, ujets, taujets]");
  return y;
}

// Same random batch as gn2_reference.py (same generator calls after seed 0).
Result run_salt_cpp(const Size& s, int64_t length, int64_t iters, const Setup& setup) {
  torch::manual_seed(0);
  const int64_t batch = s.batch;
  auto n_valid = torch::randint(5, 26, {batch}, torch::kLong);
  auto mask = torch::arange(length).unsqueeze(0) >= n_valid.unsqueeze(1);
  TensorMap inputs{{"jets", torch::randn({batch, 2})},
                   {"tracks", torch::randn({batch, length, 19}).masked_fill(mask.unsqueeze(-1), 0.0)}};
  TensorMap masks{{"tracks", mask}};
  Labels labels;
  labels["jets"]["flavour_label"] = torch::randint(0, 4, {batch}, torch::kLong);
  labels["tracks"]["ftagTruthOriginLabel"] = torch::randint(0, 8, {batch, length}, torch::kLong);
  labels["tracks"]["ftagTruthVertexIndex"] = torch::randint(-1, 4, {batch, length}, torch::kLong);
  // The batch as salt fit hands it over (its host twins: batch_to_device), or
  // without the twins.
  auto device_batch = salt::training::batch_to_device(salt::Batch{inputs, masks, labels, 0, batch}, setup.device);
  if (!s.host_twins) device_batch.twins = salt::HostTwins{};

  ModelContext ctx;
  ctx.variables = {{"jets", {"pt_btagJes", "eta_btagJes"}}, {"tracks", std::vector<std::string>(19, "v")}};
  ctx.norm = {{"jets", {std::vector<float>(2, 0.f), std::vector<float>(2, 1.f)}},
              {"tracks", {std::vector<float>(19, 0.f), std::vector<float>(19, 1.f)}}};
  ctx.name = "GN2";
  auto model = build_model(model_yaml(s), ctx);
  model->to(setup.device);
  model->train();
  // salt fit's step (bench_step.h); with graphs, their first step eager and the
  // second captured: both in the warm-up.
  auto step_options = salt::bench::bench_step_options(setup.device, setup.precision);
  auto context = step_options.context();
  context.graphs().wanted = s.graphs;
  if (s.kernels) context.kernels(*s.kernels);
  step_options.context(context);
  salt::training::TrainStep train_step(*model, step_options);
  if (s.graphs)
    train_step.start_graphs(salt::training::cuda_graphs_refusal(setup.device, /*one_process=*/true,
                                                                /*accumulate_grad_batches=*/1, *model));
  // The optimizer salt fit runs (AdamW in multi-tensor kernels) at the reference's
  // learning rate 1e-4 and weight decay 0.01 (torch's default), its schedule flat
  // and long enough for every step here.
  std::optional<salt::training::Optimization> optimization;
  if (s.with_optimizer)
    optimization.emplace(model->named_parameters(), salt::training::OptimizerKind::kAdamW,
                         salt::training::LrsConfig{1e-4, 1e-4, 1e-4, 0.1, 0.01, -1}, int64_t{1} << 20);
  // at(phase), where given, is told as each phase of the step starts.
  auto step = [&](const std::function<void(const char*)>& at = {}) {
    if (!optimization) {  // apply() leaves the gradients zeroed
      if (at) at("zero_grad");
      model->zero_grad();
    }
    train_step.set_phase_observer(at);
    StaticRows static_rows;  // eager static rows (graphs make their own)
    train_step.forward_backward(device_batch, {}, s.static_rows && !s.graphs ? &static_rows : nullptr);
    if (at) at("optimizer");
    if (optimization) train_step.apply(*optimization);
  };
  step();  // warm-up
  step();  // a second one: the caching allocator and cuBLAS settle in the first
  setup.sync();
  ProfiledRegion profiled(setup.profile);
  auto t0 = std::chrono::steady_clock::now();
  double host = 0;
  for (int64_t i = 0; i < iters; ++i) {
    auto issued = std::chrono::steady_clock::now();
    step();
    host += seconds_since(issued);
  }
  setup.sync();
  profiled.stop();
  // How many steps the graphs replayed (or that they gave up): at call M (H200, 13d010b)
  // the bench's graphed step ran at the eager static rows' speed (0.86x) while a fit's
  // graphs replayed 995 of 1000 steps at 1.71x the eager epoch.
  if (s.graphs) train_step.stop_graphs();
  const double dt = seconds_since(t0) / static_cast<double>(iters);
  host /= static_cast<double>(iters);
  std::printf("  salt-cpp: %.3f s/batch, %.1f valid tracks/jet", dt, n_valid.to(torch::kDouble).mean().item<double>());
  if (setup.device.is_cuda()) std::printf("; the host issues a step in %.3f s (%.0f%% of it)", host, 100 * host / dt);
  std::printf("\n");
#if SALT_CUDA
  if (s.probe_syncs && setup.device.is_cuda()) {
    salt::bench::SyncProbe probe;
    step([&probe](const char* phase) { probe.phase(phase); });
    probe.phase("card");  // the host waits for the card to finish the step
    setup.sync();
    probe.report();
  }
#endif
  if (s.census) {
    salt::bench::OpCensus census;
    step();
    setup.sync();
    census.report();
  }
  return {batch / dt, static_cast<long long>(count_parameters(*model).trainable), true, host};
}

// Model FLOPs of one training step (forward + backward = 3 x forward's matrix
// products), counted on what any implementation must compute: the valid tracks
// plus one register per jet, every ordered pair of valid tracks for vertexing. The
// jets are the benchmark's (seed 0: 5..25 valid tracks).
double gn2_step_flops(const Size& s) {
  torch::manual_seed(0);
  auto n_valid = torch::randint(5, 26, {s.batch}, torch::kLong);
  std::vector<int64_t> hidden;
  std::stringstream list(s.hidden);
  for (std::string item; std::getline(list, item, ',');) hidden.push_back(std::stoll(item));
  auto mlp = [&](int64_t in, int64_t out) {  // 2 x multiply-adds of Dense(in, hidden..., out)
    double f = 0;
    int64_t prev = in;
    for (auto h : hidden) f += 2.0 * prev * h, prev = h;
    return f + 2.0 * prev * out;
  };
  const double d = static_cast<double>(s.embed), o = static_cast<double>(s.out);
  double forward = 0;
  auto nv = n_valid.accessor<int64_t, 1>();
  for (int64_t b = 0; b < s.batch; ++b) {
    const double n = static_cast<double>(nv[b]), t = n + 1;  // + the register
    forward += n * (2.0 * 21 * d + 2.0 * d * d);               // init net [21 -> D -> D]
    forward += static_cast<double>(s.layers) * (16.0 * t * d * d + 4.0 * t * t * d);  // qkv, scores, AV, out, dense 2D
    forward += 2.0 * t * d * o + 2.0 * t * o;                  // out_proj, pooling gate
    forward += mlp(s.out, 4) + n * mlp(2 * s.out, 8) + n * (n - 1) * mlp(3 * s.out, 1);  // the three heads
  }
  return 3.0 * forward;
}

std::string reference_script() {
  std::string path = salt::build_source_dir().string() + "/bench/python/gn2_reference.py";
  if (std::ifstream(path).good()) return path;
  return "bench/python/gn2_reference.py";
}

// Debian's python3-torch here; the GPU machine's python3 holds a CUDA torch.
std::string python = "/usr/bin/python3";

// Empty when torch is importable, else why not.
std::string python_unavailable() {
  const std::string cmd = python + " -c 'import torch' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return "torch is not importable by " + python;
  if (!std::ifstream(reference_script()).good()) return reference_script() + " not found";
  return {};
}

Result run_pytorch(const Size& s, int64_t length, int64_t iters, int threads, const Setup& setup,
                   const std::string& extra = "", int timeout_s = 0) {
  const std::string cmd = (timeout_s > 0 ? "timeout " + std::to_string(timeout_s) + " " : std::string()) + python + " " + reference_script() + " --batch " + std::to_string(s.batch) +
                          " --device " + (setup.device.is_cuda() ? "cuda" : "cpu") + " --precision " + setup.precision +
                          " --length " + std::to_string(length) + " --threads " + std::to_string(threads) +
                          " --embed " + std::to_string(s.embed) + " --layers " + std::to_string(s.layers) +
                          " --heads " + std::to_string(s.heads) + " --out " + std::to_string(s.out) +
                          " --task-hidden " + s.hidden + " --iters " + std::to_string(iters) + " " + extra + " 2>&1";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 512> buf{};
  std::string all;
  while (std::fgets(buf.data(), buf.size(), pipe)) {
    std::string line = buf.data();
    all += line;
    double sec = 0, jps = 0;
    long long params = 0;
    if (std::sscanf(line.c_str(), "RESULT params=%lld sec_per_batch=%lf jets_per_s=%lf", &params, &sec, &jps) == 3) {
      r = {jps, params, true};
      std::printf("  PyTorch:  %.3f s/batch\n", sec);
    } else if (line.rfind("torch ", 0) == 0) {
      std::printf("  PyTorch:  %s", line.c_str());
    }
  }
  const int rc = pclose(pipe);
  if (!r.ok) std::printf("  PyTorch reference failed (exit %d):\n%s\n", rc, all.c_str());
  return r;
}

// salt's GN2 (configs/GN2/GN2.yaml's sizes, flash-varlen) with AdamW in the step.
Size gn2_size(int64_t batch) {
  return {"GN2 (salt's size: embed 256, 4 layers, 8 heads, out 128, heads [128,64,32])", 256, 4, 8, 128,
          "128,64,32", batch, "flash-varlen", true};
}

// The largest batch whose training step (bf16 forward, backward, AdamW) fits on
// the card: doubling from `fits` (a batch known to train) until the allocator
// gives up, then halving the gap down to an eighth of that batch.
void print_largest_batch(const Size& gn2, int64_t length, const Setup& setup, int64_t fits) {
  auto trains = [&](int64_t b) {
    Size big = gn2;
    big.batch = b;
    std::printf("  batch %lld:\n", static_cast<long long>(b));
    try {
      run_salt_cpp(big, length, 1, setup);
      return true;
    } catch (const c10::Error& e) {
      const std::string what = e.what_without_backtrace();
      std::printf("    does not fit: %s\n", what.substr(0, what.find('\n')).substr(0, 160).c_str());
      return false;
    }
  };
  int64_t fails = 0;
  for (int64_t b = fits * 2; b <= gn2.batch * 512; b *= 2) {
    if (!trains(b)) {
      fails = b;
      break;
    }
    fits = b;
  }
  while (fails > 0 && fails - fits > fits / 8) {
    const int64_t mid = (fits + fails) / 2 / 1000 * 1000;
    if (mid <= fits) break;
    (trains(mid) ? fits : fails) = mid;
  }
  std::printf("  largest batch that trains: %lld jets%s\n", static_cast<long long>(fits),
              fails > 0 ? (" (" + std::to_string(fails) + " does not)").c_str() : "");
}

// salt's GN2 step at salt's size, its timed steps marked for a kernel profiler.
int run_profile(Setup setup, int64_t steps, int64_t batch) {
  setup.profile = true;
  std::printf("bench_model --profile-steps %lld: GN2 at salt's size, batch %lld, %s, %s\n",
              static_cast<long long>(steps), static_cast<long long>(batch), setup.device.str().c_str(),
              setup.precision.c_str());
  run_salt_cpp(gn2_size(batch), 40, steps, setup);
  return 0;
}

// The same step with one of salt-cpp's kernels (ForwardKernels) off and then on, the
// others as the run's switches say, timed one right after the other in the same
// process (runs drift with their order).
std::pair<Result, Result> off_then_on(bool salt::models::ForwardKernels::*kernel, const Size& gn2, int64_t length,
                                      int64_t iters, const Setup& setup) {
  Size off = gn2, on = gn2;
  off.kernels = on.kernels =
      salt::training::forward_kernels(salt::training::read_step_options(), setup.bf16() && !setup.device.is_cuda());
  (*off.kernels).*kernel = false;
  (*on.kernels).*kernel = true;
  auto off_result = run_salt_cpp(off, length, iters, setup);
  return {off_result, run_salt_cpp(on, length, iters, setup)};
}

// salt-cpp's short-jet kernel (the default) against flash attention's
// (SALT_SHORT_ATTENTION=0), `rounds` times.
void compare_short_attention(const Size& gn2, int64_t length, int64_t iters, const Setup& setup,
                             const std::function<double(double)>& mfu, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    const auto [flash, fast] =
        off_then_on(&salt::models::ForwardKernels::short_attention, gn2, length, iters, setup);
    std::printf("    short-varlen: %.0f jets/s, MFU %.1f%% (flash-varlen right before %.0f: %.2fx)\n", fast.jets_per_s,
                100 * mfu(fast.jets_per_s), flash.jets_per_s, fast.jets_per_s / flash.jets_per_s);
  }
}

// salt-cpp's vertexing edge kernels (SALT_SEGMENT_SUM_KERNEL=1, off by default until a
// card has measured them): the gradients' segment sums (models/kernels/segment_sum.h) and
// the edge net's first layer with its ReLU (pair_relu.h), against LibTorch's operators.
void compare_segment_sum(const Size& gn2, int64_t length, int64_t iters, const Setup& setup) {
  const auto [torch_ops, kernel] =
      off_then_on(&salt::models::ForwardKernels::segment_sum_kernel, gn2, length, iters, setup);
  std::printf("    edge kernels (segment sums, pair ReLU): %.0f jets/s (LibTorch's operators right before %.0f: "
              "%.2fx)\n",
              kernel.jets_per_s, torch_ops.jets_per_s, kernel.jets_per_s / torch_ops.jets_per_s);
}

// salt-cpp's norm-and-cast kernel for the pre-norms (models/kernels/norm_cast.h,
// SALT_NORM_CAST_KERNEL=1, off by default until a card has measured it) against
// LibTorch's float32 layer_norm and autocast's cast; bf16 or half steps only.
void compare_norm_cast(const Size& gn2, int64_t length, int64_t iters, const Setup& setup) {
  if (!setup.device.is_cuda() || !setup.bf16())
    return (void)std::printf("    norm-and-cast kernel: timed on a card in bf16-mixed only\n");
  const auto [torch_ops, kernel] =
      off_then_on(&salt::models::ForwardKernels::norm_cast_kernel, gn2, length, iters, setup);
  std::printf("    norm-and-cast kernel: %.0f jets/s (layer_norm and cast right before %.0f: %.2fx)\n",
              kernel.jets_per_s, torch_ops.jets_per_s, kernel.jets_per_s / torch_ops.jets_per_s);
}

// Static rows (models/packing/static_rows.h) eagerly, then the step as a CUDA graph
// (training/step/step_graphs.h, SALT_CUDA_GRAPHS=1), each against the default step
// timed right before: what padding costs, and what replaying saves.
void compare_graphs(const Size& gn2, int64_t length, int64_t iters, const Setup& setup) {
  if (!setup.device.is_cuda()) return (void)std::printf("    static rows and CUDA graphs: timed on a card only\n");
  Size padded = gn2, graphed = gn2;
  padded.static_rows = true;
  graphed.graphs = true;
  for (const auto& [what, size] : {std::pair{"static rows, eager", padded}, {"CUDA graphs", graphed}}) {
    const auto plain = run_salt_cpp(gn2, length, iters, setup);
    const auto r = run_salt_cpp(size, length, iters, setup);
    std::printf("    %s: %.0f jets/s (the default step right before %.0f: %.2fx)\n", what, r.jets_per_s, plain.jets_per_s,
                r.jets_per_s / plain.jets_per_s);
  }
}

// LibTorch's default thread count, one per core, against the one thread salt fit
// computes with on a card: what the one-thread default saves.
void compare_threads(const Size& gn2, int64_t length, int64_t iters, const Setup& setup, int cores) {
  torch::set_num_threads(cores);
  auto all = run_salt_cpp(gn2, length, iters, setup);
  torch::set_num_threads(1);
  auto one = run_salt_cpp(gn2, length, iters, setup);
  std::printf("  salt-cpp on %d host threads: %.0f jets/s (1 thread right after: %.0f, %.2fx)\n", cores, all.jets_per_s,
              one.jets_per_s, one.jets_per_s / all.jets_per_s);
}

// salt's GN2 training step (AdamW included) next to PyTorch eager and compiled;
// `quick`: salt-cpp's alone (the default step with its sync probe and op census,
// against flash attention, the segment-sum kernel and a thread per core), for a
// short device call.
int run_gpu_suite(const Setup& setup, int64_t iters, int threads, int64_t batch, double peak_tflops, bool quick) {
  const Size gn2 = gn2_size(batch);
  const int64_t length = 40;
  const double flops = gn2_step_flops(gn2);
  std::printf("bench_model --gpu-suite: LibTorch %s, %s, precision %s, batch %lld, %lld track slots (5-25 valid), "
              "%lld timed steps, AdamW in the step; model FLOPs per step %.3g\n",
              salt::compat::torch_version().c_str(), setup.device.str().c_str(), setup.precision.c_str(),
              static_cast<long long>(batch), static_cast<long long>(length), static_cast<long long>(iters), flops);
  std::printf("%s, batch %lld\n", gn2.name.c_str(), static_cast<long long>(batch));
  // As `salt fit` on a card (training/step/threads.h): one host thread, the short-jet
  // attention kernel (models/kernels/short_attention.h); each is timed the other way below.
  const int cores = torch::get_num_threads();
  torch::set_num_threads(1);
  std::printf("  salt-cpp computes with 1 host thread, as salt fit on a card (%d with one per core, below)\n", cores);
  Size probed = gn2;
  probed.probe_syncs = true;
  probed.census = true;
  auto cpp = run_salt_cpp(probed, length, iters, setup);
  auto mfu = [&](double jets_per_s) { return flops * jets_per_s / static_cast<double>(batch) / (peak_tflops * 1e12); };
  std::printf("  salt-cpp: %.0f jets/s, MFU %.1f%% of %.0f TFLOP/s\n", cpp.jets_per_s, 100 * mfu(cpp.jets_per_s),
              peak_tflops);
  if (quick) {
    compare_short_attention(gn2, length, iters, setup, mfu, 1);
    compare_segment_sum(gn2, length, iters, setup);
    compare_norm_cast(gn2, length, iters, setup);
    compare_graphs(gn2, length, iters, setup);
    compare_threads(gn2, length, iters, setup, cores);
    return 0;
  }
  const std::string no_python = python_unavailable();
  if (!no_python.empty()) {
    std::printf("  PyTorch reference skipped: %s\n", no_python.c_str());
    return 1;
  }
  auto eager = run_pytorch(gn2, length, iters, threads, setup, "--attention sdpa --optimizer fused-adamw");
  auto compiled = run_pytorch(gn2, length, iters, threads, setup, "--attention sdpa --optimizer fused-adamw --compile", 120);
  for (const auto& [name, r] : {std::pair{"eager (SDPA, fused AdamW)", eager}, {"compiled", compiled}}) {
    if (!r.ok) {
      std::printf("  PyTorch %s: failed or out of time\n", name);
      continue;
    }
    std::printf("  PyTorch %s: %.0f jets/s, MFU %.1f%%; ratio salt-cpp / PyTorch %.2fx; parameters %s\n", name,
                r.jets_per_s, 100 * mfu(r.jets_per_s), cpp.jets_per_s / r.jets_per_s,
                r.params == cpp.params ? "equal" : "DIFFERENT");
  }
  // The same step with salt's other attention kernels (same weights' shapes, same
  // function): which one suits ~15 tokens per jet on this card.
  if (setup.device.is_cuda()) {
    std::printf("  salt-cpp by attention kernel (batch %lld):\n", static_cast<long long>(batch));
    for (const char* attn : {"torch-math", "torch-meff"}) {
      Size other = gn2;
      other.attn_type = attn;
      auto r = run_salt_cpp(other, length, iters, setup);
      std::printf("    %s: %.0f jets/s (the default step %.0f)\n", attn, r.jets_per_s, cpp.jets_per_s);
    }
    compare_short_attention(gn2, length, iters, setup, mfu, 2);
    compare_segment_sum(gn2, length, iters, setup);
    compare_norm_cast(gn2, length, iters, setup);
    compare_graphs(gn2, length, iters, setup);
    compare_threads(gn2, length, iters, setup, cores);
  }
  // The same step reading its masks' counts and labels' range from the device, as
  // before host twins: what the waits for device values cost.
  if (setup.device.is_cuda()) {
    // Timed after, and again before, the same step with twins: runs in one process
    // differ by up to ~8 % with their order (H200, a5a1ab4 and 74fa619).
    Size reads = gn2;
    reads.host_twins = false;
    auto r = run_salt_cpp(reads, length, iters, setup);
    auto again = run_salt_cpp(gn2, length, iters, setup);
    std::printf("  salt-cpp reading the device for masks and labels: %.0f jets/s (with host twins %.0f before, %.0f "
                "after: %.2fx)\n",
                r.jets_per_s, cpp.jets_per_s, again.jets_per_s, again.jets_per_s / r.jets_per_s);
  }
  // Where the time goes: a step that grows with the batch is the device's work;
  // one that does not, the host's (issuing kernels, waiting on device values).
  std::printf("  salt-cpp by batch (the step's cost per jet):\n");
  for (int64_t b : {batch * 4, batch * 16}) {
    Size big = gn2;
    big.batch = b;
    std::printf("  batch %lld:\n", static_cast<long long>(b));
    auto r = run_salt_cpp(big, length, std::max<int64_t>(2, iters / 4), setup);
    std::printf("    %.0f jets/s, MFU %.1f%%\n", r.jets_per_s,
                100 * gn2_step_flops(big) * r.jets_per_s / static_cast<double>(b) / (peak_tflops * 1e12));
  }
  if (setup.device.is_cuda()) print_largest_batch(gn2, length, setup, batch * 16);
  return eager.ok && eager.params == cpp.params ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a crash still leaves how far it got in a log file
  int64_t iters = 2;
  int threads = 2;
  bool quick = false, use_python = true, op_census = false;
  Setup setup;
  bool gpu_suite = false;
  int64_t profile_steps = 0;
  int64_t suite_batch = 4000;
  double peak_tflops = 989.0;  // H100 SXM, bf16 dense
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--no-python") use_python = false;
    else if (a == "--op-census") op_census = true;
    else if (a == "--python" && i + 1 < argc) python = argv[++i];
    else if (a == "--device" && i + 1 < argc) {
      const std::string d = argv[++i];
      if (d != "cpu" && d.rfind("cuda", 0) != 0) {
        std::fprintf(stderr, "bench_model: --device must be cpu or cuda[:N], not '%s'\n", d.c_str());
        return 2;
      }
      setup.device = torch::Device(d);
    }
    else if (a == "--precision" && i + 1 < argc) setup.precision = argv[++i];
    else if (a == "--iters" && i + 1 < argc) iters = std::atoll(argv[++i]);
    else if (a == "--gpu-suite") gpu_suite = true;
    else if (a == "--profile-steps" && i + 1 < argc) profile_steps = std::atoll(argv[++i]);
    else if (a == "--batch" && i + 1 < argc) suite_batch = std::atoll(argv[++i]);
    else if (a == "--peak-tflops" && i + 1 < argc) peak_tflops = std::atof(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: bench_model [--quick] [--threads N] [--iters N] [--no-python] [--op-census] [--device cpu|cuda] "
                   "[--precision 32|bf16-mixed] [--python PATH] [--gpu-suite [--quick] [--batch N] [--peak-tflops T]] "
                   "[--profile-steps N [--batch N]]\n");
      return 2;
    }
  }
  // CPU bf16 as salt fit sets it for the process (SALT_CPU_BF16); the step takes the
  // other switches from its options (bench_step_options).
  salt::training::apply_process_options(salt::training::read_step_options());
  if (setup.precision != "32" && setup.precision != "bf16-mixed") {
    std::fprintf(stderr, "bench_model: --precision must be 32 or bf16-mixed, not '%s'\n", setup.precision.c_str());
    return 2;
  }
  if (setup.device.is_cuda() && !torch::cuda::is_available()) {
    std::fprintf(stderr, "bench_model: --device cuda but this LibTorch sees no CUDA device\n");
    return 2;
  }
  if (quick && !gpu_suite) iters = 1;
  if (profile_steps > 0) return run_profile(setup, profile_steps, suite_batch);
  if (gpu_suite) return run_gpu_suite(setup, iters, threads, suite_batch, peak_tflops, quick);
  torch::set_num_threads(threads);
  const int64_t length = 40;
  const std::vector<Size> sizes = {
      {"GN2 (embed 256, 4 layers, 8 heads, out 128, heads [128,64,32])", 256, 4, 8, 128, "128,64,32", quick ? 250 : 1000},
      {"GN2_cpu (embed 64, 2 layers, 4 heads, out 32, heads [32,16])", 64, 2, 4, 32, "32,16", 500},
  };

  std::printf("bench_model: forward+backward training step, LibTorch %s, %s, precision %s, %d threads, %lld track "
              "slots, 5-25 valid, %lld timed step(s) after a warm-up\n",
              salt::compat::torch_version().c_str(), setup.device.str().c_str(), setup.precision.c_str(),
              torch::get_num_threads(), static_cast<long long>(length), static_cast<long long>(iters));
  std::string no_python = use_python ? python_unavailable() : "disabled by --no-python";
  if (!no_python.empty()) std::printf("PyTorch reference skipped: %s\n", no_python.c_str());

  bool params_equal = true;
  for (Size s : sizes) {
    std::printf("%s, batch %lld\n", s.name.c_str(), static_cast<long long>(s.batch));
    s.census = op_census;
    auto cpp = run_salt_cpp(s, length, iters, setup);
    s.census = false;
    {  // what the host twins (models/packing/host_twins.h) cost or save where no read waits
      Size off = s;
      off.host_twins = false;
      const auto r = run_salt_cpp(off, length, iters, setup);
      std::printf("  salt-cpp without host twins: %.0f jets/s (with: %.0f, %.2fx)\n", r.jets_per_s, cpp.jets_per_s,
                  cpp.jets_per_s / r.jets_per_s);
    }
    Result py;
    if (no_python.empty()) py = run_pytorch(s, length, iters, threads, setup);
    std::printf("  parameters: salt-cpp %lld", cpp.params);
    if (py.ok) {
      std::printf(", PyTorch %lld (%s)\n", py.params, py.params == cpp.params ? "equal" : "DIFFERENT");
      params_equal = params_equal && py.params == cpp.params;
      std::printf("  jets/s: salt-cpp %.0f, PyTorch %.0f, ratio %.2fx\n", cpp.jets_per_s, py.jets_per_s,
                  cpp.jets_per_s / py.jets_per_s);
    } else {
      std::printf("\n  jets/s: salt-cpp %.0f\n", cpp.jets_per_s);
    }
  }

  // The attention kernels alone, forward, at GN2's shape (D 256, 8 heads, 40 slots + 1 register).
  // CPU only: the packed varlen kernel is a CPU kernel.
  if (!setup.device.is_cuda()) {
    torch::manual_seed(0);
    const int64_t batch = quick ? 250 : 1000, h = 8, dh = 32, l = length + 1, d = h * dh;
    auto n_valid = torch::randint(5, 26, {batch}, torch::kLong) + 1;  // + the register
    auto key_pad = torch::arange(l).unsqueeze(0) >= n_valid.unsqueeze(1);
    auto q = torch::randn({batch, h, l, dh}), k = torch::randn({batch, h, l, dh}), v = torch::randn({batch, h, l, dh});
    auto allowed = key_pad.logical_not().view({batch, 1, 1, l});
    auto time_it = [&](auto&& fn) {
      fn();
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 3; ++i) fn();
      return seconds_since(t0) / 3;
    };
    torch::NoGradGuard ng;
    const double scale = 1.0 / std::sqrt(double(dh));
    const double te = time_it([&] { return attention_explicit(q, k, v, allowed, 0.0, scale); });
    std::printf("attention kernel forward, batch %lld: explicit masked softmax (padded) %.1f ms", static_cast<long long>(batch),
                te * 1e3);
    // The packed varlen kernel on the valid tokens only.
    auto idx = TokenIndex::from_mask(key_pad);
    auto qkv = torch::cat({idx.gather(q.transpose(1, 2).reshape({batch, l, d})),
                           idx.gather(k.transpose(1, 2).reshape({batch, l, d})),
                           idx.gather(v.transpose(1, 2).reshape({batch, l, d}))},
                          1);
    auto starts = torch::cat({torch::zeros({1}, torch::kLong), n_valid.cumsum(0)});
    auto order = torch::arange(qkv.size(0), torch::kLong);
    const double tv = time_it([&] { return varlen_attention(qkv, order, starts, h, scale); });
    auto diff = (idx.scatter(varlen_attention(qkv, order, starts, h, scale)) -
                 attention_explicit(q, k, v, allowed, 0.0, scale).transpose(1, 2).reshape({batch, l, d}))
                    .masked_fill(key_pad.unsqueeze(-1), 0.0)
                    .abs()
                    .max()
                    .item<double>();
    std::printf(", packed varlen %.1f ms (max |diff| %.1e)", tv * 1e3, diff);
#if SALT_TORCH_AT_LEAST(2, 0)
    const double tf = time_it([&] { return salt::compat::fused_attention(q, k, v, allowed.expand({batch, 1, l, l}), 0.0); });
    std::printf(", fused SDPA (padded) %.1f ms\n", tf * 1e3);
#else
    std::printf(", fused SDPA n/a (LibTorch < 2.0)\n");
#endif
  }
  if (!params_equal) {
    std::printf("ERROR: parameter counts differ between salt-cpp and the PyTorch reference\n");
    return 1;
  }
  return 0;
}
