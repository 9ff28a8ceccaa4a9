#include "submit/run_plan.h"

#include <spdlog/spdlog.h>

#include "config/compose.h"
#include "config/run_args.h"
#include "core/errors.h"
#include "submit/shell_quote.h"
#include "training/loop/run_dir.h"
#include "repro/dirty_check.h"
#include "repro/git_state.h"
#include "repro/repository.h"
#include "training/run_setup.h"

namespace salt::submit {
namespace fs = std::filesystem;

namespace {

config::ResolvedConfig resolve_args(const std::vector<std::string>& args) {
  auto run = config::parse_run_args("fit", args);
  return config::resolve(config::find_base_config(), run.ops);
}

// Set on the helper's own command line (a --config.* passthrough or a sweep value)
// rather than in a config file: a contradiction there is a mistake, not a default.
bool from_command_line(const std::string& origin) { return origin.rfind("command line", 0) == 0; }

std::string with_origin(const std::string& key, const std::string& value, const std::string& origin) {
  return key + "=" + value + (origin.empty() ? "" : " (" + origin + ")");
}

using config::Setting;
using config::setting;

// One agreement rule: the explicit option wins over a config file (with a note),
// contradicts a command-line value (error), and is taken from the config when absent.
int agree(const std::string& option, const std::string& key, std::optional<int> requested, const Setting& s,
          int fallback, std::vector<std::string>& notes, const std::string& run_label) {
  if (!requested) return s.value.value_or(fallback);
  if (s.value == requested) return *requested;
  if (from_command_line(s.origin))
    throw UsageError(option + " " + std::to_string(*requested) + " contradicts " + with_origin(key, s.text, s.origin) +
                     run_label + "; drop one of them");
  notes.push_back(option + " " + std::to_string(*requested) + " replaces " + with_origin(key, s.text, s.origin));
  return *requested;
}

struct Agreed {
  Resources resources;
  std::vector<std::string> salt_flags;  // what makes the config say the same
  std::vector<std::string> notes;
};

Agreed agree_resources(const config::ResolvedConfig& user, const ResourceRequest& req, const std::string& run_label) {
  Agreed a;
  auto& res = a.resources;
  const auto accel = setting(user, "trainer", "accelerator");
  const bool accel_cpu = accel.text == "cpu";
  const bool accel_gpu = accel.text == "gpu" || accel.text == "cuda";

  const auto& gpus_opt = req.gpus_option;
  if (req.gpus_per_node && *req.gpus_per_node < 0)
    throw UsageError(gpus_opt + " must be 0 (CPU only) or more, got " + std::to_string(*req.gpus_per_node));
  if (req.nodes && *req.nodes < 1)
    throw UsageError(req.nodes_option + " must be at least 1, got " + std::to_string(*req.nodes));
  if (req.cpus_per_task && *req.cpus_per_task < 0)
    throw UsageError(req.cpus_option + " must be 0 or more, got " + std::to_string(*req.cpus_per_task));
  if (req.cpu && req.gpus_per_node && *req.gpus_per_node > 0)
    throw UsageError("--cpu contradicts " + gpus_opt + " " + std::to_string(*req.gpus_per_node));
  std::optional<int> gpus = req.cpu ? std::optional<int>(0) : req.gpus_per_node;
  const bool cpu_job = gpus ? *gpus == 0 : accel_cpu;

  const auto devices = setting(user, "trainer", "devices");
  if (cpu_job) {
    res.gpus_per_node = 0;
    if (accel_gpu) {
      const auto opt = req.cpu ? std::string("--cpu") : gpus_opt + " 0";
      if (from_command_line(accel.origin))
        throw UsageError(opt + " contradicts " + with_origin("trainer.accelerator", accel.text, accel.origin) +
                         run_label);
      a.notes.push_back(opt + " replaces " + with_origin("trainer.accelerator", accel.text, accel.origin));
    }
    // One process per node on CPU; salt's CPU training uses one device.
    if (!accel_cpu) a.salt_flags.push_back("--trainer.accelerator=cpu");
    if (devices.text != "1") a.salt_flags.push_back("--trainer.devices=1");
  } else {
    if (accel_cpu) {
      const auto opt = gpus_opt + " " + std::to_string(*gpus);
      if (from_command_line(accel.origin))
        throw UsageError(opt + " contradicts " + with_origin("trainer.accelerator", accel.text, accel.origin) +
                         run_label + "; use --cpu for a CPU job");
      a.notes.push_back(opt + " replaces " + with_origin("trainer.accelerator", accel.text, accel.origin));
      a.salt_flags.push_back("--trainer.accelerator=gpu");
    }
    res.gpus_per_node = agree(gpus_opt, "trainer.devices", gpus, devices, 1, a.notes, run_label);
    if (res.gpus_per_node < 1) throw UsageError("trainer.devices must be at least 1 for a GPU job" + run_label);
    if (devices.text != std::to_string(res.gpus_per_node))
      a.salt_flags.push_back("--trainer.devices=" + std::to_string(res.gpus_per_node));
  }

  const auto nodes = setting(user, "trainer", "num_nodes");
  res.nodes = agree(req.nodes_option, "trainer.num_nodes", req.nodes, nodes, 1, a.notes, run_label);
  if (res.nodes < 1)
    throw UsageError("trainer.num_nodes must be at least 1, got " + std::to_string(res.nodes) + run_label);
  if (res.nodes > 1 && !req.multi_node)
    throw UsageError("trainer.num_nodes=" + std::to_string(res.nodes) +
                     ": this batch system runs a job on one machine");
  if (nodes.text != std::to_string(res.nodes))
    a.salt_flags.push_back("--trainer.num_nodes=" + std::to_string(res.nodes));

  const auto workers = setting(user, "data", "num_workers");
  const int num_workers =
      agree(req.cpus_option, "data.num_workers", req.cpus_per_task, workers, 1, a.notes, run_label);
  if (num_workers < 0)
    throw UsageError("data.num_workers must be 0 or more, got " + std::to_string(num_workers) + run_label);
  // num_workers 0 (load in the training thread) still needs one CPU.
  res.cpus_per_task = std::max(num_workers, 1);
  if (workers.text != std::to_string(num_workers))
    a.salt_flags.push_back("--data.num_workers=" + std::to_string(num_workers));
  return a;
}

std::string run_label(const PlanInput& in, std::size_t i) {
  return in.sweep.empty() ? "" : " in sweep run " + std::to_string(i);
}

// Adds "sweep run i: " to errors of one run of a sweep.
template <class F>
auto for_run(const PlanInput& in, std::size_t i, F&& f) {
  if (in.sweep.empty()) return f();
  try {
    return f();
  } catch (const UsageError& e) {
    throw UsageError("sweep run " + std::to_string(i) + ": " + e.what());
  } catch (const InputError& e) {
    throw InputError("sweep run " + std::to_string(i) + ": " + e.what());
  }
}

}  // namespace

Plan make_plan(const PlanInput& in) {
  if (in.configs.empty()) throw UsageError("--config is required");
  std::vector<std::string> user_args;  // what the user asked salt for, before agreement
  for (const auto& c : in.configs) {
    std::error_code ec;
    if (!fs::is_regular_file(c, ec)) throw UsageError("--config '" + c + "': no such file");
    user_args.push_back("--config=" + fs::absolute(c).lexically_normal().string());
  }
  for (const auto& p : in.passthrough) user_args.push_back(salt_flag(p));

  const std::size_t num_runs = in.sweep.empty() ? 1 : in.sweep.size();
  Plan plan;
  std::vector<std::string> derived;
  for (std::size_t i = 0; i < num_runs; ++i) {
    auto own = in.sweep.empty() ? std::vector<std::string>{} : sweep_flags(in.sweep[i]);
    auto args = user_args;
    args.insert(args.end(), own.begin(), own.end());
    auto agreed = for_run(in, i, [&] { return agree_resources(resolve_args(args), in.request, run_label(in, i)); });
    if (i == 0) {
      plan.resources = agreed.resources;
      derived = agreed.salt_flags;
      plan.notes = agreed.notes;
    } else if (!(agreed.resources == plan.resources)) {
      throw UsageError("sweep run " + std::to_string(i) +
                       " needs other resources than run 0 (trainer.devices, trainer.num_nodes, data.num_workers): "
                       "the runs of one job array share them; set them with the helper's options instead");
    }
    PlannedRun run;
    run.args = own;
    if (!in.sweep.empty())
      run.args.push_back("--log_suffix=" + in.log_suffix.value_or(in.tag) + "_" + std::to_string(i));
    plan.runs.push_back(std::move(run));
  }

  plan.common_args = user_args;
  plan.common_args.insert(plan.common_args.end(), derived.begin(), derived.end());
  if (in.sweep.empty() && (in.log_suffix || in.fixed_run_dir))
    plan.common_args.push_back("--log_suffix=" + in.log_suffix.value_or(in.default_suffix));
  if (in.fixed_run_dir) plan.common_args.push_back("--overwrite_config");
  if (in.force) plan.common_args.push_back("--force");

  // Validate every run as `salt fit` will, before anything is written.
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    auto& run = plan.runs[i];
    for_run(in, i, [&] {
      auto args = plan.common_args;
      args.insert(args.end(), run.args.begin(), run.args.end());
      auto resolved = resolve_args(args);
      auto setup = training::prepare_run(resolved, training::Stage::kFit);
      if (setup.run.log_suffix) {
        run.run_dir = fs::absolute(training::run_directory(setup.run.trainer.default_root_dir, setup.run.name,
                                                           *setup.run.log_suffix, ""))
                          .lexically_normal();
        if (fs::exists(run.run_dir / "config.yaml") && !setup.run.overwrite_config)
          throw UsageError((run.run_dir / "config.yaml").string() +
                           " already exists: the job would fail at start; use another --salt_log_suffix or --tag");
      }
      return 0;
    });
  }
  // A dirty git tree would make every job refuse at its start: say so now (the
  // same check `salt fit` runs; -f/--force skips both).
  if (!in.force) {
    if (auto repo = repro::Repository::discover(fs::current_path())) {
      const fs::path logs_root = resolve_args(plan.common_args).run.trainer.default_root_dir;
      repro::refuse_if_dirty(repro::read_state(*repo, repro::salt_output_dirs(logs_root, fs::current_path())));
    }
  }
  return plan;
}

std::string describe_run(const Plan& plan, std::size_t index) {
  auto args = plan.common_args;
  const auto& own = plan.runs.at(index).args;
  args.insert(args.end(), own.begin(), own.end());
  return "salt fit " + shell_join(args);
}

}  // namespace salt::submit
