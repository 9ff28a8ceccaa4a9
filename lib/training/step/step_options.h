// The switches that change how a training step is computed, and nothing else: the
// same config trains the same model with any of them, only faster or slower (or, for
// SALT_CPU_BF16, with bf16 products rounded the other way). Each is read from the
// environment ONCE, by read_step_options (the only place in lib that reads these
// variables for a step; parallel/local_launch.cpp only looks whether OMP_NUM_THREADS is
// set before setting it for its workers), with core/env_switch.h's rule for every
// one: unset or empty is the default, a mistyped value a UsageError naming the
// variable and what it takes. A fit records each with where it came from in
// metadata.yaml (`step_options`), so two runs that differ only by a switch do not
// look the same afterwards. Torch-free. What each variable takes and means:
// core/env_switches.cpp's table (`salt --help-env`, docs/environment.md); gomp_spin
// and openblas_thread_timeout are libgomp's and OpenBLAS's own, recorded, not parsed.
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>

#include "core/env_switch.h"
#include "models/packing/forward_context.h"

namespace salt::training {

enum class OptionSource { kDefault, kEnvironment };

// "default" or "environment", as metadata.yaml says it.
const char* source_name(OptionSource source);

template <class T>
struct StepOption {
  T value{};
  OptionSource source = OptionSource::kDefault;
};

enum class CpuBf16Mode { kNative, kEmulated };

// Each switch's default is its initialiser here (parse_step_options starts from them);
// the kernels' come from models::ForwardKernels' own (forward_context.h), which every
// forward pass outside a fit takes.
struct StepOptions {
  StepOption<bool> host_twins{true};
  StepOption<bool> copy_stream{true};
  StepOption<bool> cuda_graphs{true};
  StepOption<bool> short_attention{models::ForwardKernels{}.short_attention};
  StepOption<bool> segment_sum_kernel{models::ForwardKernels{}.segment_sum_kernel};
  StepOption<bool> norm_cast_kernel{models::ForwardKernels{}.norm_cast_kernel};
  StepOption<CpuBf16Mode> cpu_bf16{CpuBf16Mode::kNative};  // default: what the CPU runs fast
  StepOption<bool> cpu_bf16_static_rows{true};              // default: cpu_bf16 native
  StepOption<int> steps_ahead{0};
  StepOption<int> threads{0};  // from the environment: the count asked for; 0: choose_threads decides
  StepOption<std::string> gomp_spin{"libgomp's own (300000)"};
  StepOption<std::string> openblas_thread_timeout{"OpenBLAS's own (28)"};
};

using salt::EnvLookup;  // core/env_switch.h

// The one parser: every switch from `env`, OMP_NUM_THREADS's range from `cores`,
// SALT_CPU_BF16's default from `cpu_emulates_bf16`. The first mistyped value is a
// UsageError ("SALT_COPY_STREAM=yes: expected 0 (the compute stream) or 1 (a copy
// stream)").
StepOptions parse_step_options(const EnvLookup& env, int cores, bool cpu_emulates_bf16);

// parse_step_options over this process's environment, the cores it may use and its
// CPU. Called once per command (run_command, before any worker starts), or by a fit
// started without options (benches, in-process tests).
StepOptions read_step_options();

// The kernels' choices (short attention, segment sum, norm and cast) for the model's forward passes
// (models::ForwardContext::kernels), passed down through TrainStep, validation and
// `salt test` as the batches' transfer is (batch_device.h's transfer_from), and
// bucketed rows where `cpu_bf16_steps` (bf16 autocast on the CPU) meets native bf16
// kernels with cpu_bf16_static_rows on.
models::ForwardKernels forward_kernels(const StepOptions& options, bool cpu_bf16_steps);

// Sets the one switch that stays process-wide: CPU bf16, which replaces LibTorch's
// own bf16 kernels for the whole process (models/kernels/cpu_bf16.h). fit() calls it
// when it is built; run_command before test, validate and predict.
void apply_process_options(const StepOptions& options);

// metadata.yaml's `step_options`: each switch's {value, source}, `threads` as the
// count LibTorch computes with.
YAML::Node step_options_yaml(const StepOptions& options);

// Where the fit's steps run, which decides which switches they use.
struct StepUse {
  bool on_cuda = false;
  bool cpu_bf16_steps = false;  // forward_batch.h's cpu_bf16_steps: bf16 autocast on the CPU
  std::string graphs_refusal;   // decide_graphs (step_graphs.h): empty when the steps are graphed
  bool half_autocast = false;   // autocast to bf16 or half (the norm-and-cast kernel writes those)
};

// step_options_yaml, and beside what was asked `used: true|false` where the run
// settles it before its files are written: the card's switches (host twins, copy
// stream) are unused on the CPU, the CPU bf16 ones without CPU bf16 steps, the
// norm-and-cast kernel without half-type autocast, and
// bucketed rows only where forward_kernels buckets them. cuda_graphs says `used`
// and, where unused, `why` (the graphs decision); record_graphs_count corrects
// `used` from what the graphs did.
YAML::Node step_options_yaml(const StepOptions& options, const StepUse& use);

// What a fit's CUDA graphs did: graphs captured, training steps they replayed,
// and whether they gave up (a step that waited for the card; eager since).
struct GraphsCount {
  int64_t captured = 0;
  int64_t replayed = 0;
  bool given_up = false;
};

// metadata.yaml's step_options.cuda_graphs for a fit that graphs its steps: `used`
// once a step was replayed, the counts beside it.
void record_graphs_count(YAML::Node step_options, const GraphsCount& count);

}  // namespace salt::training
