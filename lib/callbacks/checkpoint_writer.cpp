#include "callbacks/checkpoint_writer.h"

#include "training/checkpoints/checkpoint.h"

namespace salt::callbacks {

void write_checkpoint(FitState& s, const std::filesystem::path& path, bool weights_only) {
  auto state = s.actions.capture();
  state.weights_only = weights_only;
  for (const auto& [k, v] : s.metrics.val) state.metrics.emplace_back(k, v);
  std::filesystem::create_directories(path.parent_path());  // ModelCheckpoint: a '/' in a metric name makes a folder
  training::save_checkpoint(path, state, s.optimization);
}

}  // namespace salt::callbacks
