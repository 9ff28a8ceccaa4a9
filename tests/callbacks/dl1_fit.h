// In-process fits of salt's DL1 on the toy data of an InProcessRun (1000 jets,
// batches of 250: 4 optimizer steps per epoch), shared by the callback tests.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "support/in_process.h"
#include "training/checkpoints/checkpoint.h"
#include "training/loop/fit.h"

namespace salt::testing {

// `salt fit -c configs/DL1.yaml` at the sizes above with `extra` flags, run suffix `suffix`.
inline training::FitResult fit(const std::string& suffix, std::vector<std::string> extra) {
  std::vector<std::string> args{"-c", InProcessRun::repo_config("DL1.yaml"), "--data.batch_size", "250",
                                "--data.num_workers", "0", "--trainer.enable_progress_bar", "false",
                                "--trainer.enable_model_summary", "false", "-ls", suffix};
  args.insert(args.end(), extra.begin(), extra.end());
  return training::fit(InProcessRun::resolve(args));
}

// Whether two checkpoints hold bitwise the same weights.
inline bool same_weights(const std::filesystem::path& a, const std::filesystem::path& b) {
  auto x = training::load_checkpoint(a), y = training::load_checkpoint(b);
  if (x.state_dict.size() != y.state_dict.size()) return false;
  for (std::size_t i = 0; i < x.state_dict.size(); ++i)
    if (!torch::equal(x.state_dict[i].second, y.state_dict[i].second)) return false;
  return true;
}

}  // namespace salt::testing
