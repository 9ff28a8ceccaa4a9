#include "core/env_switches.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "core/omp_spin.h"

namespace salt {

const std::vector<EnvSwitchSpec>& env_switches() {
  static const std::vector<EnvSwitchSpec> table = {
      {"SALT_HOST_TWINS", "0 or 1", "1", "on a card, the model reads the batch's host copies instead of the device",
       "training/step"},
      {"SALT_COPY_STREAM", "0 or 1", "1", "on a card, batches are copied on a stream of their own", "training/step"},
      {"SALT_CUDA_GRAPHS", "0 or 1", "1 where the run allows", "on a card, training steps run as CUDA graphs",
       "training/step"},
      {"SALT_SHORT_ATTENTION", "0 or 1", "1", "on a card, salt-cpp's attention kernel for short jets", "training/step"},
      {"SALT_SEGMENT_SUM_KERNEL", "0 or 1", "0",
       "on a card, salt-cpp's kernels for the vertexing edges (segment sums, first layer's ReLU)", "training/step"},
      {"SALT_NORM_CAST_KERNEL", "0 or 1", "0",
       "on a card, salt-cpp's kernel for a pre-norm LayerNorm written in autocast's type", "training/step"},
      {"SALT_CPU_BF16", "native or emulated", "the machine's choice",
       "CPU bf16: LibTorch's kernels, or bf16-rounded inputs multiplied in float32", "training/step"},
      {"SALT_CPU_BF16_STATIC_ROWS", "0 or 1", "1 with native bf16",
       "CPU bf16 steps pad their rows to buckets (fewer kernel shapes)", "training/step"},
      {"SALT_MAX_STEPS_AHEAD", "0 to 1000", "0", "on a card, steps queued before the host waits for one",
       "training/step"},
      {"OMP_NUM_THREADS", "1 to 4 per core", "the cores the process may use",
       "compute threads of a CPU run (OpenMP's own variable, read by salt-cpp first)", "training/step"},
      {"SALT_DIST_BACKEND", "gloo or nccl", "nccl on cards, gloo on the CPU", "the data-parallel backend", "parallel"},
      {"SALT_DIST_TIMEOUT", "seconds, 0.001 to 10000000", "60",
       "how long ranks wait for each other (rendezvous and collectives)", "parallel"},
      {"SALT_DIST_OVERLAP", "0 or 1", "1", "all-reduce gradient buckets during backward, not after it", "parallel"},
      {"SALT_DIST_BUCKET_MB", "MiB, 0.001 to 1048576", "25", "the size of a gradient all-reduce bucket", "parallel"},
      {"SALT_SHARE_DIR", "a folder", "<bin>/../share/salt", "where salt's shipped files are", "core"},
      {"SALT_BASE_CONFIG", "a file", "share/salt/configs/base.yaml", "salt's base config, composed under every run",
       "config"},
      {"SALT_ORT_DIR", "a folder", "share/salt/ort", "the ONNX Runtime (onnxruntime-node) that checks exports",
       "deploy"},
      {"SALT_SET_GOMP_SPINCOUNT", "1 or 2 (salt-cpp sets it)", "unset",
       "marks the restart with a short OpenMP spin; not for users", "core"},
  };
  return table;
}

const char* env_value(const char* name) {
  for (const auto& s : env_switches())
    if (std::strcmp(s.name, name) == 0) return std::getenv(name);
  throw std::logic_error(std::string("environment variable ") + name + " is not declared in core/env_switches.cpp");
}

std::vector<std::pair<std::string, std::string>> env_switches_set() {
  std::vector<std::pair<std::string, std::string>> set;
  for (const auto& s : env_switches())
    if (const char* v = std::getenv(s.name); v && std::strcmp(s.name, kShortSpinMarker) != 0)
      set.emplace_back(s.name, v);
  return set;
}

const char* process_env(const char* name) {
  return std::strncmp(name, "SALT_", 5) == 0 ? env_value(name) : std::getenv(name);
}

namespace {

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

}  // namespace

std::string env_switches_help() {
  std::string out = "Environment variables salt-cpp reads (value now; when unset, the default):\n";
  for (const auto& s : env_switches()) {
    const char* now = std::getenv(s.name);
    const std::string value = now ? std::string("=") + now : std::string(" unset (") + s.fallback + ")";
    out +=
        "  " + padded(std::string(s.name) + value, 52) + " " + s.values + "\n      " + s.help + " [" + s.owner + "]\n";
  }
  return out;
}

std::string env_switches_markdown() {
  std::string out =
      "# Environment variables\n\n"
      "Generated from lib/core/env_switches.cpp by `salt --help-env --markdown` (scripts/update_docs.sh).\n"
      "`salt --help-env` prints the same with each variable's value now. A value outside what a\n"
      "variable takes is refused in one line naming it.\n\n"
      "| Variable | Takes | Unset | What it does | Read in |\n|---|---|---|---|---|\n";
  for (const auto& s : env_switches())
    out += std::string("| `") + s.name + "` | " + s.values + " | " + s.fallback + " | " + s.help + " | `lib/" +
           s.owner + "` |\n";
  return out;
}

}  // namespace salt
