// What a batch job will run, decided and checked before anything is written:
// the `salt fit` command line of every run, composed and validated exactly as
// `salt fit` will (config::resolve + training::prepare_run, which opens the data
// files), and the resources the batch system must give it. Slurm and HTCondor
// share this; only the job files differ.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "submit/arg_prepass.h"
#include "submit/sweep.h"

namespace salt::submit {

// The helper's own resource options; nullopt when not given on the command line.
struct ResourceRequest {
  std::optional<int> nodes;          // -n/--nodes
  std::optional<int> gpus_per_node;  // -g/--gpus_per_node (0: CPU only)
  std::optional<int> cpus_per_task;  // -cpt/--cpus_per_task
  bool cpu = false;                  // --cpu (same as -g 0)
  bool multi_node = true;            // false for HTCondor (one machine per job)
  // The options as the command spells them, for messages (HTCondor: --gpus, --cpus).
  std::string nodes_option = "-n/--nodes", gpus_option = "-g/--gpus_per_node", cpus_option = "-cpt/--cpus_per_task";
};

// Agreed with the config: ntasks-per-node = gpus_per_node = trainer.devices,
// nodes = trainer.num_nodes, cpus-per-task = data.num_workers.
struct Resources {
  int nodes = 1;
  int gpus_per_node = 1;  // 0: a CPU job
  int cpus_per_task = 1;
  int tasks_per_node() const { return gpus_per_node > 0 ? gpus_per_node : 1; }
  bool operator==(const Resources& o) const {
    return nodes == o.nodes && gpus_per_node == o.gpus_per_node && cpus_per_task == o.cpus_per_task;
  }
};

struct PlanInput {
  std::vector<std::string> configs;      // -c files, in order
  std::vector<Passthrough> passthrough;  // --config.key=value
  std::vector<SweepRun> sweep;           // empty: a single run
  ResourceRequest request;
  bool force = false;                    // -> salt --force
  bool fixed_run_dir = false;            // requeue: fixed --log_suffix and --overwrite_config
  std::optional<std::string> log_suffix; // -sls
  std::string tag;                       // sweep runs are <log_suffix or tag>_<index>
  std::string default_suffix;            // requeue without -sls: a timestamp, as salt
};

struct PlannedRun {
  std::vector<std::string> args;  // this run's own flags, after the common ones
  std::filesystem::path run_dir;  // empty when salt will timestamp it
};

struct Plan {
  Resources resources;
  std::vector<std::string> common_args;  // `salt fit` flags shared by every run
  std::vector<PlannedRun> runs;
  std::vector<std::string> notes;        // explicit options that replaced config-file values
};

// Throws UsageError / InputError (one line, naming the run of a sweep) when a
// config does not compose, validate or open, or contradicts an explicit option.
Plan make_plan(const PlanInput& input);

// "salt fit <common> <run args>" for display (shell-quoted).
std::string describe_run(const Plan& plan, std::size_t index);

}  // namespace salt::submit
