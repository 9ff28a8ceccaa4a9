#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/count_checks.h"
#include "core/clean_logs.h"
#include "core/errors.h"
#include "core/signals.h"
#include "config/compose.h"
#include "core/memory.h"
#include "data/shuffle.h"
#include "data/toy_data.h"
#include "data/toy_schema.h"
#include "plot/run_plots.h"

namespace salt::cli {

namespace {

// A data set made earlier in the same folder (another seed, other sizes, a user's own
// norm dict) is replaced only when asked.
void refuse_existing_toy_files(const data::ToyDataOptions& o, bool overwrite) {
  if (overwrite) return;
  const auto dir = std::filesystem::path(o.out_dir);
  std::vector<std::string> found;
  std::vector<std::filesystem::path> written = {dir / "pp_output_train.h5", dir / "norm_dict.yaml", dir / "class_dict.yaml"};
  if (o.num_val > 0) written.push_back(dir / "pp_output_val.h5");
  if (o.num_test > 0) written.push_back(dir / "pp_output_test_ttbar.h5");
  std::error_code ec;
  for (const auto& f : written)
    if (std::filesystem::exists(std::filesystem::symlink_status(f, ec))) found.push_back(f.filename().string());
  if (found.empty()) return;
  std::string list;
  for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
  throw UsageError("salt toydata: " + dir.string() + " already holds " + list +
                   " (pass --overwrite to replace them, or choose another --output_dir)");
}

// `salt toydata`: the learnable toy data set in the preprocessing's format.
void add_toydata_command(CLI::App& app) {
  auto options = std::make_shared<data::ToyDataOptions>();
  options->out_dir = "data/toy";
  auto compression = std::make_shared<std::string>("lzf");
  auto* sub = app.add_subcommand("toydata", "Write a toy data set (train/val/test files, norm and class dicts) in "
                                            "the ATLAS preprocessing's HDF5 format.");
  sub->add_option("-o,--output_dir", options->out_dir, "Directory to write into.")->capture_default_str();
  // Range checks here make bad counts usage errors (exit 2), like every other bad flag.
  sub->add_option("--num_train", options->num_train, "Jets in pp_output_train.h5.")
      ->check(positive_count())
      ->capture_default_str();
  sub->add_option("--num_val", options->num_val, "Jets in pp_output_val.h5 (0: none).")
      ->check(non_negative_count())
      ->capture_default_str();
  sub->add_option("--num_test", options->num_test, "Jets in pp_output_test_ttbar.h5 (0: none).")
      ->check(non_negative_count())
      ->capture_default_str();
  sub->add_option("--seed", options->seed, "Random seed (the files are a pure function of it).")
      ->check(seed_value())
      ->capture_default_str();
  sub->add_option("--compression", *compression, "Chunk compression.")
      ->check(CLI::IsMember({"lzf", "gzip", "none"}))
      ->capture_default_str();
  sub->add_flag("--half_precision", options->half_precision, "Store float inputs as float16, like UPP's precision: half.");
  auto configs = std::make_shared<std::vector<std::string>>();
  auto slots = std::make_shared<int64_t>(20);
  sub->add_option("-c,--config", *configs,
                  "Write what this config reads instead of the GN2 toy set: its datasets, variables and task labels "
                  "(repeatable: overlays compose left to right on configs/base.yaml, as in salt fit).");
  auto* slots_option =
      sub->add_option("--slots", *slots, "With --config: slots per constituent type where data.num_inputs sets none.")
          ->check(count_from(1, data::kMaxToySlots))
          ->capture_default_str();
  auto overwrite = std::make_shared<bool>(false);
  sub->add_flag("--overwrite", *overwrite, "Replace the files of an earlier toy data set in --output_dir.");
  sub->callback([options, compression, configs, slots, slots_option, overwrite] {
    options->compression = data::h5::parse_compression(*compression);
    if (configs->empty() && slots_option->count() > 0)
      spdlog::warn("--slots has no effect without --config (the GN2 toy set has its own 40 track slots)");
    refuse_existing_toy_files(*options, *overwrite);
    // SIGINT/SIGTERM stop between blocks: temp files removed, main() prints one line
    // and exits 128 + signal, as `salt fit` does.
    install_stop_handlers();
    data::ToyDataFiles files;
    if (configs->empty()) {
      files = data::write_toy_data(*options);
    } else {
      std::vector<config::ConfigOp> ops;
      for (const auto& c : *configs) ops.push_back({config::ConfigOp::Kind::kMergeFile, c, "", "--config " + c});
      const auto resolved = config::resolve(config::find_base_config(), ops);
      const auto schema = data::toy_schema_from_config(resolved.run.model.model, resolved.run.data, *slots);
      files = data::write_schema_toy_data(schema, *options);
    }
    std::string written = files.train.string();
    if (options->num_val > 0) written += ", " + files.val.string();
    if (options->num_test > 0) written += ", " + files.test.string();
    spdlog::info("wrote {}, {}, {}", written, files.norm_dict.string(), files.class_dict.string());
  });
}

// `salt shuffle`: a pre-shuffled copy of physics-ordered files (data/shuffle.h).
void add_shuffle_command(CLI::App& app) {
  auto options = std::make_shared<data::ShuffleOptions>();
  auto output = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("shuffle", "Write one pre-shuffled copy of preprocessed HDF5 files (all datasets of "
                                            "a jet move together), out of core in a bounded memory budget, so that "
                                            "weak shuffling sees well-mixed batches.");
  sub->add_option("inputs", options->inputs, "Input files or wildcards (pp_output_train_*.h5); one output for all.")
      ->required();
  sub->add_option("-o,--output", *output, "Output HDF5 file (written under a temp name, then renamed).")->required();
  sub->add_option("--seed", options->seed, "Random seed (the output is a pure function of it and the inputs).")
      ->check(seed_value())
      ->capture_default_str();
  sub->add_option(
         "--memory_mb", options->memory_mb,
         "Memory budget in MiB (growth of resident memory, HDF5's share (8 MiB) included; from 10 to 16777216); the "
         "bucket files need free disk next to the output of about the uncompressed data size.")
      ->check(positive_count())
      ->capture_default_str();
  sub->add_flag("--overwrite", options->overwrite, "Replace an existing output file (never one of the inputs).");
  sub->callback([options, output] {
    options->output = *output;
    install_stop_handlers();
    const double rss_before = current_rss_mb();
    const auto r = data::shuffle_files(*options);
    spdlog::info("shuffled {} jets ({} bytes each) into {} through {} bucket(s), seed {}; memory: {:.1f} MiB "
                 "resident before, {:.1f} MiB peak",
                 r.jets, r.bytes_per_jet, options->output.string(), r.buckets, options->seed, rss_before,
                 peak_rss_mb());
  });
}

// `salt plot RUN_DIR`: redraws a run's pictures (plot/run_plots.h).
void add_plot_command(CLI::App& app) {
  auto run_dir = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("plot", "Redraw a run's pictures: loss curves (<run>/loss_curves.png/.pdf) and the "
                                         "light- and c-jet rejection curves of each prediction file in <run>/ckpts.");
  sub->add_option("run_dir", *run_dir, "Run directory (logs/<run>).")->required();
  sub->callback([run_dir] {
    for (const auto& f : plot::plot_run(*run_dir)) spdlog::info("wrote {}", f.string());
  });
}

// `salt clean_logs`: salt's utility of that name (salt/utils/clean_logs.py), same
// flags and lines on stdout.
void add_clean_logs_command(CLI::App& app) {
  auto folder = std::make_shared<std::string>(), subdirectory = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("clean_logs", "Delete the directories under a folder that do not contain a given "
                                               "subdirectory (e.g. runs under logs/ without ckpts/).");
  sub->add_option("--folder_path", *folder, "Path to the folder to clean.")->required();
  sub->add_option("--subdirectory", *subdirectory, "Name of the subdirectory to check for in each directory.")
      ->required();
  sub->callback([folder, subdirectory] {
    const auto result = delete_dirs_without_subdir(*folder, *subdirectory);
    for (const auto& dir : result.deleted) std::printf("Deleting directory: %s\n", dir.c_str());
    for (const auto& link : result.links) spdlog::warn("{}: a symbolic link to a directory, left alone", link.string());
    std::printf("Deleted %zu directories\n", result.deleted.size());
  });
}

}  // namespace

void add_tool_commands(CLI::App& app) {
  add_toydata_command(app);
  add_shuffle_command(app);
  add_plot_command(app);
  add_clean_logs_command(app);
  add_submit_commands(app);
  add_export_commands(app);
}

}  // namespace salt::cli
