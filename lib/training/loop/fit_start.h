// `salt fit`'s set-up, as stages: each a function from what it needs to what it
// makes (the agreed seed, where the run starts, the weights taken, what the ranks
// must have alike, the plan, the optimizer, git's record, the run files, the
// loaders, salt's batch order, the step). FitRun (fit_run.h) calls them in order
// and keeps what they make as its parts. Internal to training/loop.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/loader.h"
#include "data/sampler.h"
#include "training/fit_plan.h"
#include "training/loop/batch_order.h"
#include "training/loop/fit.h"
#include "training/loop/run_inputs.h"
#include "training/loop/run_loaders.h"
#include "training/loop/run_processes.h"
#include "training/loop/run_start.h"
#include "training/optim/optimization.h"
#include "training/run_setup.h"
#include "training/step/step_context.h"
#include "training/step/step_options.h"
#include "training/step/train_step.h"

namespace salt::training {

// Readies the device (TF32 matmuls on a card, as salt trains) and, with several
// processes, says so and gives every rank rank 0's seed, re-seeding as Lightning's
// DDPStrategy does once the model is built. Returns the run's seed.
uint64_t agree_on_seed(const RunProcesses& processes, const RunSetup& setup);

// Where the run starts: rank 0 claims the run directory and finds the checkpoint to
// resume (--ckpt_path, or a requeue checkpoint in the same directory); the other
// ranks take its answer. The resumed weights are loaded into the model.
RunStart decide_start(RunSetup& setup, const RunProcesses& processes, bool dev_run);

// Fine-tuning (init_from) on a new run, and the freezing a run (or its resumed
// run) asks for. Returns what metadata.yaml records under init_from.
YAML::Node init_weights(RunSetup& setup, const RunStart& start);

// What every rank of a data-parallel run must have alike, in words for the error
// naming a difference.
std::vector<std::pair<std::string, std::string>> rank_settings(const RunSetup& setup, const StepOptions& options,
                                                               const RunInputs& inputs, const RunStart& start);

// The batches of an epoch and the steps of the run (training/fit_plan.h), with the
// training sampler they come from: this rank's share of salt's batches.
struct StepPlan {
  data::SamplerOptions train_sampler;
  TrainPlan plan;
};
StepPlan plan_steps(const RunSetup& setup, const RunInputs& inputs, const RunProcesses& processes,
                    const RunStart& start);

// The one-cycle schedule's length at data.batch_size `batch_size` (0 when that size
// has no full batch): what Lightning plans before the tuners change the size.
int64_t schedule_steps_at(const RunSetup& setup, const RunInputs& inputs, const RunProcesses& processes,
                          int64_t batch_size);

// The optimizer and its schedule, at the resumed run's step with its state.
std::unique_ptr<Optimization> make_optimization(const RunSetup& setup, const TrainPlan& plan, const RunStart& start);

// The git checks (rank 0; none under fast_dev_run): may refuse the run, write
// uncommitted.patch and push a tag. Returns git's metadata.
YAML::Node run_git_checks(const FitHooks& hooks, const RunStart& start, const RunProcesses& processes,
                          bool dev_run);

// config.yaml, metadata.yaml and the dicts in the run directory (rank 0). Returns
// config.yaml as written (the checkpoints' hyper_parameters).
struct RunFilesInput {
  const RunSetup& setup;
  const RunInputs& inputs;
  const RunProcesses& processes;
  const StepOptions& options;
  const StepContext& context;
  const YAML::Node& git;
  const YAML::Node& init_from;
  const std::string& graphs_refusal;
};
std::string write_files(const RunFilesInput& in, const std::filesystem::path& run_dir);

data::LoaderOptions loader_options(const data::DataConfig& data, const RunProcesses& processes);

// The training loader over the planned sampler and the validation loader over
// this rank's share of the validation file; the order is made by make_batch_order.
RunLoaders make_loaders(const RunInputs& inputs, data::SamplerOptions train_sampler,
                        const data::LoaderOptions& options, int64_t batch_size, const RunProcesses& processes);

// salt's batch order from torch's generator (batch_order.h), made before the
// tuners, whose trials draw from it.
std::unique_ptr<BatchOrder> make_batch_order(const BatchOrderOptions& options, const RunStart& start);
// A resumed run's first epoch: an exact resume mid-epoch finishes the epoch in the
// order its checkpoint recorded, a resume from salt's mid-epoch checkpoint starts
// the epoch over as Lightning does (returns true: FitSchedule::lightning_restart).
bool resume_batch_order(BatchOrder& order, const RunStart& start, const TrainPlan& plan, data::Loader& train);

// The options make_batch_order starts from: how salt's loader makes its iterators.
BatchOrderOptions batch_order_options(const RunSetup& setup, const RunStart& start, int world, bool dev_run);

// The training step; a resumed run's loss scale continues from its checkpoint.
std::unique_ptr<TrainStep> make_step(models::SaltWrapperImpl& model, TrainStepOptions options, const RunStart& start);

}  // namespace salt::training
