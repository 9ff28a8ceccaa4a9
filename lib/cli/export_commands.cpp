// salt to_onnx / get_onnx_metadata / compare_models, with salt's flag names.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "cli/count_checks.h"
#include "core/errors.h"
#include "core/signals.h"
#include "deploy/compare_models.h"
#include "deploy/feature_map.h"
#include "deploy/to_onnx.h"
#include "export/graph.h"

namespace salt::cli {

namespace {

void add_to_onnx(CLI::App& app) {
  auto o = std::make_shared<deploy::ExportOptions>();
  struct Optional {
    std::string config, name, output, test_file, object_name;
  };
  auto opt = std::make_shared<Optional>();
  auto* sub = app.add_subcommand("to_onnx", "Export a trained model to ONNX for Athena (checked in ONNX Runtime).");
  sub->add_option("--ckpt_path", o->ckpt_path, "Checkpoint path.")->required();
  sub->add_option("-c,--config", opt->config,
                  "Saved training config. If not provided, look in the parent directory of `ckpt_path`.");
  sub->add_option("-t,--track_selection", o->track_selection,
                  "Track selection, must match `trk_select_regexes` in 'DataPrepUtilities.cxx'.")
      ->check(CLI::IsMember(deploy::track_selections()))
      ->capture_default_str();
  sub->add_option("-n,--name", opt->name, "Model name, used in the *_px outputs. Taken from the config if not provided.");
  sub->add_flag("-o,--overwrite", o->overwrite, "Overwrite existing exported ONNX model.");
  sub->add_option("--tasks", o->tasks, "Tasks to include in the ONNX model. By default all global tasks are included.");
  sub->add_option("--object_name", opt->object_name,
                  "-mf: MaskFormer: also export the leading object's regression values and each track's object index, "
                  "named after this object (e.g. hadron).");
  sub->add_option("--combine_outputs", o->combine_outputs,
                  "New outputs as sums of existing ones: NAME,[SCALE*]OUTPUT,... (e.g. light,0.5*q,g).");
  sub->add_option("-r,--rename", o->rename, "Rename outputs: OLD:NEW ...");
  sub->add_flag("-f,--force", o->force, "Export with a salt binary built from uncommitted changes.");
  sub->add_option("--output", opt->output, "Where to write the model (default: network.onnx in the run directory).");
  sub->add_option("--test_file", opt->test_file, "Jets for the ONNX Runtime check (default: the config's data.test_file).");
  sub->add_option("--check_jets", o->check_jets, "Test jets compared in ONNX Runtime (plus 0-, 1- and max-track jets).")
      ->check(positive_count())
      ->capture_default_str();
  sub->add_option("--parameter", o->parameters,
                  "Parameterised models: NAME=VALUE fixes a parameter in the graph (default: data.parameters.NAME.test).");
  sub->add_flag("--require_check", o->require_check, "Fail when ONNX Runtime is not available for the check.");
  sub->callback([o, opt, sub] {
    if (sub->count("--config")) o->config = opt->config;
    if (sub->count("--name")) o->name = opt->name;
    if (sub->count("--output")) o->output = opt->output;
    if (sub->count("--test_file")) o->test_file = opt->test_file;
    if (sub->count("--object_name")) o->object_name = opt->object_name;
    // SIGINT/SIGTERM stop the export, its ONNX Runtime child included: temporaries
    // removed, main() prints one line and exits 128 + signal, as `salt fit` does.
    install_stop_handlers();
    const auto result = deploy::to_onnx(*o);
    spdlog::info("Done! Saved ONNX model at {}{}", result.onnx.string(),
                 result.checked ? "" : " (not checked in ONNX Runtime)");
  });
}

std::string read_bytes(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))  // /dev/zero would never end
    throw InputError(path + ": not a regular file, not an ONNX model");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void add_get_onnx_metadata(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  auto key = std::make_shared<std::string>("gnn_config");
  auto* sub = app.add_subcommand("get_onnx_metadata", "Print the metadata of an exported ONNX model.");
  sub->add_option("file", *file, "Path to ONNX file.")->required();
  sub->add_option("-k,--key", *key, "Custom metadata key to extract.")->capture_default_str();
  sub->callback([file, key] {
    const auto info = ox::read_model_info(read_bytes(*file), *file);
    for (const auto& [k, v] : info.metadata)
      if (k == *key) {
        std::cout << "Printing config for model: '" << info.doc_string << "' and key: '" << *key << "'\n" << v << "\n";
        return;
      }
    throw InputError(*file + ": no metadata key '" + *key + "'");
  });
}

void add_compare_models(CLI::App& app) {
  auto o = std::make_shared<deploy::CompareOptions>();
  auto file_b = std::make_shared<std::string>(), tagger_b = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("compare_models", "Compare two taggers' predictions jet by jet.");
  sub->add_option("--file_a", o->file_a, "Path to first evaluation h5 file.")->required();
  sub->add_option("--file_b", *file_b, "Path to second evaluation h5 file (defaults to file_a).");
  sub->add_option("--tagger_a", o->tagger_a, "Name of the first tagger.")->required();
  sub->add_option("--tagger_b", *tagger_b, "Name of the second tagger (defaults to tagger_a).");
  sub->add_flag("--gaussian_regression", o->gaussian_regression, "Compare regression outputs ({tagger}_{var}).");
  sub->add_option("--vars", o->vars, "Which variables to compare.")->capture_default_str();
  auto* cuts = sub->add_option("--cuts", o->cuts, "Which cuts to apply.")->capture_default_str();
  // salt's -n is a float (1e5 works); it must be a positive whole number of jets.
  auto num = std::make_shared<std::optional<double>>();
  sub->add_option("-n,--num", *num, "Compare this many jets (defaults to all; a float such as 1e5 as in salt).");
  sub->callback([o, cuts, file_b, tagger_b, num] {
    if (*num) {
      const double n = **num;
      if (!(n >= 1) || n != std::floor(n) || n > 9e18)
        throw UsageError("compare_models: -n must be a positive whole number of jets, not " + fmt::format("{}", n));
      o->num = static_cast<int64_t>(n);
    }
    if (!file_b->empty()) o->file_b = *file_b;
    if (!tagger_b->empty()) o->tagger_b = *tagger_b;
    o->cuts_given = cuts->count() > 0;
    deploy::compare_models(*o, std::cout);
  });
}

}  // namespace

void add_export_commands(CLI::App& app) {
  add_to_onnx(app);
  add_get_onnx_metadata(app);
  add_compare_models(app);
}

}  // namespace salt::cli
