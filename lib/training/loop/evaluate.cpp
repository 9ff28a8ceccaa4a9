#include "training/loop/evaluate.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <regex>

#include "training/callback_registry.h"
#include "core/errors.h"
#include "core/signals.h"
#include "core/torch_compat.h"
#include "data/loader.h"
#include "models/tasks/classification_task.h"
#include "plot/run_plots.h"
#include "training/step/batch_device.h"
#include "training/step/forward_batch.h"
#include "training/outputs/btag_task.h"
#include "training/outputs/progress.h"
#include "training/checkpoints/checkpoint.h"
#include "training/step/device.h"
#include "training/run_setup.h"
#include "training/step/validation.h"

namespace salt::training {
namespace fs = std::filesystem;

fs::path best_checkpoint(const fs::path& ckpt_dir) {
  // A diverged run writes loss=nan: such a checkpoint is the worst, not invisible.
  static const std::regex loss_value("loss=(nan|-?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+))");
  std::error_code ec;
  if (!fs::is_directory(ckpt_dir, ec))
    throw UsageError("no --ckpt_path given and " + ckpt_dir.string() +
                     " does not exist; pass --ckpt_path or the config.yaml of a trained run");
  fs::path best;
  double best_loss = 0;
  for (const auto& entry : fs::directory_iterator(ckpt_dir)) {
    if (entry.path().extension() != ".ckpt") continue;
    std::smatch m;
    const auto name = entry.path().filename().string();
    if (!std::regex_search(name, m, loss_value)) continue;
    const double loss = m[1] == "nan" ? std::numeric_limits<double>::infinity() : std::stod(m[1]);
    if (best.empty() || loss < best_loss || (loss == best_loss && entry.path() < best)) {
      best = entry.path();
      best_loss = loss;
    }
  }
  if (best.empty()) throw UsageError("no --ckpt_path given and no '*loss=*.ckpt' checkpoint in " + ckpt_dir.string());
  return best;
}

std::string sample_name(const fs::path& test_file) {
  const auto stem = test_file.stem().string();
  std::vector<std::string> tokens;
  std::size_t start = 0, pos;
  while ((pos = stem.find('_', start)) != std::string::npos) {
    tokens.push_back(stem.substr(start, pos - start));
    start = pos + 1;
  }
  tokens.push_back(stem.substr(start));
  return tokens.size() == 4 ? tokens[3] : stem;
}

namespace {

// Probabilities and truth for the jet classification task, collected over the test set.
struct FlavourCollector {
  BtagTask btag;
  std::vector<float> pb, pc, pu;
  std::vector<Flavour> truth;

  void add(const torch::Tensor& logits, const Batch& batch) {
    const auto [probs, flavour] = btag.probabilities(logits, batch);
    const auto p = probs.to(torch::kCPU).contiguous();
    const auto f = flavour.to(torch::kCPU).contiguous();
    const auto pa = p.accessor<float, 2>();
    const auto fa = f.accessor<int64_t, 1>();
    for (int64_t i = 0; i < p.size(0); ++i) {
      pb.push_back(pa[i][0]);
      pc.push_back(pa[i][1]);
      pu.push_back(pa[i][2]);
      truth.push_back(static_cast<Flavour>(fa[i]));
    }
  }
};

}  // namespace

namespace {

std::filesystem::path chosen_checkpoint(const RunSetup& setup) {
  return setup.run.ckpt_path ? fs::path(*setup.run.ckpt_path)
                             : best_checkpoint(fs::path(setup.run.trainer.default_root_dir) / "ckpts");
}

// `<ckpt dir>/<ckpt stem>__test_<sample>[_<test_suff>].h5` (salt's name).
fs::path prediction_file(const fs::path& checkpoint, const fs::path& test_file,
                         const std::optional<std::string>& test_suff) {
  auto name = checkpoint.stem().string() + "__test_" + sample_name(test_file);
  if (test_suff) {
    if (test_suff->find('/') != std::string::npos || *test_suff == "..")
      throw UsageError("data.test_suff '" + *test_suff + "' must not contain '/': it becomes part of the prediction "
                       "file's name");
    name += "_" + *test_suff;
  }
  return checkpoint.parent_path() / (name + ".h5");
}

// `salt validate`'s val/... and `salt test`'s test/... losses, one line each.
void print_metrics(const std::map<std::string, double>& metrics) {
  for (const auto& [k, v] : metrics) std::printf("%-40s %.6f\n", k.c_str(), v);
  std::fflush(stdout);
}

}  // namespace

std::map<std::string, double> validate_checkpoint(const config::ResolvedConfig& resolved, const StepOptions& switches) {
  auto setup = prepare_run(resolved, Stage::kFit);
  const auto& data_config = setup.run.data;
  const auto checkpoint = chosen_checkpoint(setup);
  spdlog::info("validating checkpoint {}", checkpoint.string());
  load_module_state(*setup.model, load_checkpoint(checkpoint).state_dict, checkpoint.string());
  auto reader = open_reader(setup, data_config.val_file, data_config.num_val, "num_val");
  refuse_empty(*reader, data_config.val_file, data_config.num_val, "num_val", "nothing to validate");
  const auto device = select_device(setup.run.trainer);
  setup.model->to(device);
  data::LoaderOptions loader_options;
  loader_options.set_num_workers(data_config.num_workers).set_prefetch_factor(data_config.prefetch_factor);
  data::Loader loader(reader, data::SamplerOptions::evaluation(reader->num_rows(), data_config.batch_size), loader_options);
  const int64_t batches = setup.run.trainer.limit_val.apply(loader.batches_per_epoch());
  const auto step = make_step_context(setup.run.trainer, device, switches);
  auto means = validation_pass(setup.model, loader, 0, batches, step, {}, true, {}).means("val");
  print_metrics(means);
  return means;
}

// Pictures are extras: one that cannot be drawn (no truth labels in the file,
// a run without metrics.csv) is a warning line, not a failed test.
std::vector<std::filesystem::path> draw_plots(const EvaluateResult& result) {
  std::vector<std::filesystem::path> written;
  const auto attempt = [&](const auto& draw) {
    try {
      auto files = draw();
      written.insert(written.end(), files.begin(), files.end());
    } catch (const InputError& e) {
      spdlog::warn("no plot: {}", e.what());
    }
  };
  if (!result.output.empty()) attempt([&] { return plot::plot_predictions(result.output); });
  const auto run_dir = result.checkpoint.parent_path().parent_path();
  if (std::filesystem::exists(run_dir / "metrics.csv")) attempt([&] { return plot::plot_losses(run_dir); });
  for (const auto& f : written)
    if (f.extension() == ".png") spdlog::info("plot written to {} (and .pdf)", f.string());
  return written;
}

EvaluateResult evaluate(const config::ResolvedConfig& resolved, const StepOptions& switches) {
  auto setup = prepare_run(resolved, Stage::kTest);
  const auto& trainer = setup.run.trainer;
  const auto& data_config = setup.run.data;
  EvaluateResult result;
  result.checkpoint = chosen_checkpoint(setup);
  spdlog::info("testing checkpoint {}", result.checkpoint.string());
  auto state = load_checkpoint(result.checkpoint);
  load_module_state(*setup.model, state.state_dict, result.checkpoint.string());

  auto reader = open_reader(setup, data_config.test_file, data_config.num_test, "num_test", /*test_stage=*/true);
  refuse_empty(*reader, data_config.test_file, data_config.num_test, "num_test", "nothing to test, no predictions would be written");
  const auto device = select_device(trainer);
  // Bucketed rows as in training: padding rows reach no prediction (the files equal
  // plain packing's, FitTest.CpuBf16BucketedRowsLeavePredictionsAlone).
  const auto step = make_step_context(trainer, device, switches);
  setup.model->to(device);
  setup.model->eval();

  auto callbacks = callbacks::make_callbacks(trainer.callbacks, trainer);
  callbacks::TestState test;
  test.setup = &setup;
  test.checkpoint = result.checkpoint;
  test.test_file = reader->path();  // for a wildcard, its virtual file (salt names the sample after it too)
  test.num_rows = reader->num_rows();
  test.output = prediction_file(result.checkpoint, reader->path(), data_config.test_suff);
  callbacks.call(&callbacks::Callback::on_test_start, test);
  std::error_code ec;  // found before the test runs, not when the file is written after it
  if (test.wants_predictions && fs::is_directory(test.output, ec))
    throw InputError(test.output.string() + " is a directory, where salt test writes its predictions; move it or "
                     "choose another data.test_suff");

  data::LoaderOptions loader_options;
  loader_options.set_num_workers(data_config.num_workers).set_prefetch_factor(data_config.prefetch_factor);
  data::Loader loader(reader, data::SamplerOptions::evaluation(reader->num_rows(), data_config.batch_size), loader_options);
  const int64_t batches = trainer.limit_test.apply(loader.batches_per_epoch());
  FlavourCollector flavours{find_btag_task(*setup.model)};
  LossTotals losses;
  torch::NoGradGuard no_grad;
  // Batch logs get about ten lines; a terminal redraws the bar at every batch.
  const int refresh = Progress::stderr_is_terminal() ? 1 : static_cast<int>(std::max<int64_t>(1, batches / 10));
  Progress progress(trainer.enable_progress_bar, refresh);
  progress.start("test", 0, 0, batches);
  loader.start_epoch(0);
  for (int64_t b = 0; b < batches; ++b) {
    if (int sig = stop_signal()) throw StopRequested{sig};
    auto batch = loader.next();
    if (!batch) break;
    const auto [on_device, out] = evaluation_step(*setup.model, *batch, step, losses);
    progress.update(b, batch->size, [&losses] {  // read only when the bar is drawn (a GPU's loss waits for it)
      const auto means = losses.means("test");
      return means.count("test/loss") ? means.at("test/loss") : NAN;
    });
    if (const auto& task = flavours.btag.task) flavours.add(out.preds.at(task->input_name()).at(task->name()), *batch);
    if (test.wants_predictions)
      callbacks.call(&callbacks::Callback::on_test_batch_end, test, *batch,
                     setup.model->predictions(out, on_device.pad_masks, &batch->labels));
  }
  loader.stop();
  progress.finish(std::to_string(progress.jets()) + " jets");
  result.metrics = losses.means("test");  // none when no batch had labels
  print_metrics(result.metrics);
  callbacks.call(&callbacks::Callback::on_test_end, test);
  if (test.written) {
    result.output = test.output;
    spdlog::info("predictions written to {}", result.output.string());
  }
  if (flavours.btag.task) {
    result.performance = btag_performance(flavours.pb, flavours.pc, flavours.pu, flavours.truth);
    std::cout << format_performance(*result.performance, setup.run.name);
  }
  result.plots = draw_plots(result);
  return result;
}

}  // namespace salt::training
