#include "training/step/step_options.h"

#include <torch/torch.h>

#include <cstdlib>

#include "core/env_switches.h"
#include "core/cpu_budget.h"
#include "core/env_switch.h"
#include "core/omp_spin.h"
#include "models/kernels/cpu_bf16.h"
#include "models/kernels/segment_sum.h"
#include "training/step/batch_device.h"
#include "training/step/threads.h"

namespace salt::training {

namespace {

// An on/off switch: 0 or 1, else the default; says what each value means.
StepOption<bool> switch_from(const EnvLookup& env, const char* name, bool otherwise, const char* off, const char* on) {
  const char* value = env(name);
  const bool set = value && *value;
  return {env_switch(name, value, otherwise, off, on), set ? OptionSource::kEnvironment : OptionSource::kDefault};
}

StepOption<CpuBf16Mode> cpu_bf16_from(const EnvLookup& env, bool cpu_emulates_bf16) {
  const auto chosen = env_choice("SALT_CPU_BF16", env("SALT_CPU_BF16"),
                                 {{"native", "LibTorch's bf16 kernels"},
                                  {"emulated", "bf16-rounded inputs multiplied in float32"}});
  if (chosen.empty()) return {cpu_emulates_bf16 ? CpuBf16Mode::kEmulated : CpuBf16Mode::kNative};
  return {chosen == "emulated" ? CpuBf16Mode::kEmulated : CpuBf16Mode::kNative, OptionSource::kEnvironment};
}

template <class T>
YAML::Node entry(const StepOption<T>& option) {
  YAML::Node node(YAML::NodeType::Map);
  node["value"] = option.value;
  node["source"] = source_name(option.source);
  return node;
}

}  // namespace

const char* source_name(OptionSource source) {
  return source == OptionSource::kEnvironment ? "environment" : "default";
}

StepOptions parse_step_options(const EnvLookup& env, int cores, bool cpu_emulates_bf16) {
  StepOptions o;
  o.host_twins =
      switch_from(env, "SALT_HOST_TWINS", o.host_twins.value, "the model reads the device", "the batch's host copies");
  o.copy_stream = switch_from(env, "SALT_COPY_STREAM", o.copy_stream.value, "the compute stream", "a copy stream");
  // On unless 0 (where the run allows: train_step.cpp): graphs run a card's epoch in
  // about 60 % of the eager time (docs/gpu.md, docs/performance.md).
  o.cuda_graphs =
      switch_from(env, "SALT_CUDA_GRAPHS", o.cuda_graphs.value, "eager steps", "CUDA graphs for the training steps");
  // The kernels' defaults and why: models::ForwardKernels (models/packing/forward_context.h).
  o.short_attention = switch_from(env, "SALT_SHORT_ATTENTION", o.short_attention.value, "flash attention",
                                  "salt-cpp's kernel for short jets");
  o.segment_sum_kernel = switch_from(env, "SALT_SEGMENT_SUM_KERNEL", o.segment_sum_kernel.value,
                                     "LibTorch's operators", "salt-cpp's kernel");
  o.norm_cast_kernel = switch_from(env, "SALT_NORM_CAST_KERNEL", o.norm_cast_kernel.value,
                                   "LibTorch's layer_norm and autocast's cast", "salt-cpp's kernel");
  o.cpu_bf16 = cpu_bf16_from(env, cpu_emulates_bf16);
  o.cpu_bf16_static_rows = switch_from(env, "SALT_CPU_BF16_STATIC_ROWS", o.cpu_bf16.value == CpuBf16Mode::kNative,
                                       "each batch's own row count", "rows padded to their bucket");
  if (const auto depth = env_whole_number("SALT_MAX_STEPS_AHEAD", env("SALT_MAX_STEPS_AHEAD"), 0, 1000))
    o.steps_ahead = {static_cast<int>(*depth), OptionSource::kEnvironment};
  if (const auto threads = threads_from_env(env("OMP_NUM_THREADS"), cores))
    o.threads = {*threads, OptionSource::kEnvironment};
  const auto spin = spin_setting(env), timeout = blas_timeout_setting(env);
  o.gomp_spin = {spin.value, spin.from_environment ? OptionSource::kEnvironment : OptionSource::kDefault};
  o.openblas_thread_timeout = {timeout.value,
                               timeout.from_environment ? OptionSource::kEnvironment : OptionSource::kDefault};
  return o;
}

StepOptions read_step_options() {
  const EnvLookup process_env = [](const char* name) -> const char* { return salt::process_env(name); };
  return parse_step_options(process_env, affinity_cores(), models::cpu_bf16_emulated_by_default());
}

models::ForwardKernels forward_kernels(const StepOptions& options, bool cpu_bf16_steps) {
  models::ForwardKernels kernels;
  kernels.short_attention = options.short_attention.value;
  kernels.segment_sum_kernel = options.segment_sum_kernel.value;
  kernels.norm_cast_kernel = options.norm_cast_kernel.value;
  kernels.bucketed_rows =
      cpu_bf16_steps && options.cpu_bf16.value == CpuBf16Mode::kNative && options.cpu_bf16_static_rows.value;
  return kernels;
}

void apply_process_options(const StepOptions& options) {
  models::set_cpu_bf16_emulated(options.cpu_bf16.value == CpuBf16Mode::kEmulated);
}

YAML::Node step_options_yaml(const StepOptions& options) {
  YAML::Node node(YAML::NodeType::Map);
  node["host_twins"] = entry(options.host_twins);
  node["copy_stream"] = entry(options.copy_stream);
  node["cuda_graphs"] = entry(options.cuda_graphs);
  node["short_attention"] = entry(options.short_attention);
  node["segment_sum_kernel"] = entry(options.segment_sum_kernel);
  node["norm_cast_kernel"] = entry(options.norm_cast_kernel);
  StepOption<std::string> bf16{options.cpu_bf16.value == CpuBf16Mode::kEmulated ? "emulated" : "native",
                               options.cpu_bf16.source};
  node["cpu_bf16"] = entry(bf16);
  node["cpu_bf16_static_rows"] = entry(options.cpu_bf16_static_rows);
  node["steps_ahead"] = entry(options.steps_ahead);
  node["threads"] = entry(StepOption<int>{torch::get_num_threads(), options.threads.source});
  node["gomp_spin"] = entry(options.gomp_spin);
  node["openblas_thread_timeout"] = entry(options.openblas_thread_timeout);
  return node;
}

YAML::Node step_options_yaml(const StepOptions& options, const StepUse& use) {
  auto node = step_options_yaml(options);
  node["host_twins"]["used"] = use.on_cuda && options.host_twins.value;
  node["copy_stream"]["used"] = use.on_cuda && options.copy_stream.value;
  node["cuda_graphs"]["used"] = use.graphs_refusal.empty();
  if (!use.graphs_refusal.empty()) node["cuda_graphs"]["why"] = use.graphs_refusal;
  // salt-cpp's own CUDA kernels, where asked for: on a card each batch settles them
  // (resources' attention_kernels says which ran), elsewhere never.
  const bool own_kernels = use.on_cuda && models::segment_sum_kernel_compiled();
  if (!own_kernels || !options.short_attention.value) node["short_attention"]["used"] = false;
  if (!own_kernels || !options.segment_sum_kernel.value) node["segment_sum_kernel"]["used"] = false;
  if (!own_kernels || !use.half_autocast || !options.norm_cast_kernel.value) node["norm_cast_kernel"]["used"] = false;
  node["cpu_bf16"]["used"] = use.cpu_bf16_steps;
  node["cpu_bf16_static_rows"]["used"] = forward_kernels(options, use.cpu_bf16_steps).bucketed_rows;
  return node;
}

void record_graphs_count(YAML::Node step_options, const GraphsCount& count) {
  auto graphs = step_options["cuda_graphs"];
  graphs["used"] = count.replayed > 0;
  graphs["captured"] = count.captured;
  graphs["replayed"] = count.replayed;
  graphs["given_up"] = count.given_up;
}

}  // namespace salt::training
