// The weights `salt fit` starts from, written as a checkpoint's state_dict, for
// bench/train_parity.sh to compare with salt's own (its parity probe's init.pt).
// The config is resolved and the model built exactly as `salt fit` does it
// (training::prepare_run: the seed, then the model), nothing trained.
// Usage: bench_init_weights OUT.ckpt [salt fit's config arguments: -c FILE, --key value ...]
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "config/compose.h"
#include "config/run_args.h"
#include "training/checkpoints/checkpoint.h"
#include "training/run_setup.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: bench_init_weights OUT.ckpt [salt fit's config arguments]\n");
    return argc < 2 ? 2 : 0;
  }
  try {
    const std::vector<std::string> args(argv + 2, argv + argc);
    const auto resolved =
        salt::config::resolve(salt::config::find_base_config(), salt::config::parse_run_args("fit", args).ops);
    auto setup = salt::training::prepare_run(resolved, salt::training::Stage::kFit);
    salt::training::CheckpointState state;
    state.weights_only = true;
    state.state_dict = salt::training::module_state(*setup.model);
    salt::training::save_checkpoint(argv[1], state, nullptr);
    std::printf("bench_init_weights: %zu tensors of the model seeded %llu in %s\n", state.state_dict.size(),
                static_cast<unsigned long long>(setup.seed), argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_init_weights: %s\n", e.what());
    return 1;
  }
  return 0;
}
