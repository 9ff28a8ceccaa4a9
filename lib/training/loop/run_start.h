// Where a fit starts, a part of FitRun: its run directory (rank 0 claims it,
// and removes it again if the start fails before the first step) and the
// checkpoint it resumes from, if any: --ckpt_path, or the requeue checkpoint a
// Slurm job left in the same run directory.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "training/checkpoints/checkpoint.h"
#include "training/loop/run_dir.h"

namespace salt::training {

struct RunStart {
  std::filesystem::path run_dir;
  std::unique_ptr<RunDirClaim> claim;      // rank 0: the run directory, locked while the run lives
  std::unique_ptr<RunDirCleanup> cleanup;  // removes a directory this start created, until disarmed
  std::optional<CheckpointState> resume;   // the checkpoint resumed from
  std::string resume_source;               // its path ("" for a new run)
  bool same_dir_resume = false;            // a requeue checkpoint of this run directory
};

}  // namespace salt::training
