// What every checkpoint-writing callback does (salt's Checkpoint, ModelCheckpoint,
// StochasticWeightAveraging's swa.ckpt): the run's full state now, with the last
// validation's metrics, into `path` (its folder made). Callers decide when and
// whether to announce it (FitActions::checkpoint_saved).
#pragma once
#include <filesystem>

#include "training/callback.h"

namespace salt::callbacks {

void write_checkpoint(FitState& s, const std::filesystem::path& path, bool weights_only = false);

}  // namespace salt::callbacks
