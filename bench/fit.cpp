// Fit throughput on the CPU: `salt fit` jets/s for GN2 (full size and the CPU
// variant) and DIPS on toy data, next to a baseline measured in the same run:
// the model's own forward + backward + optimizer step on batches already in
// memory. fit / model-only shows what the loop and the loader cost on top.
//
//   bench_fit [--jets N] [--threads T] [--quick]
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>
#include <unistd.h>  // getpid

#include "core/install_paths.h"
#include "config/compose.h"
#include "config/run_args.h"
#include "data/loader.h"
#include "data/toy_data.h"
#include "training/loop/fit.h"
#include "training/step/batch_device.h"
#include "training/optim/optimization.h"
#include "training/run_setup.h"
#include "training/step/threads.h"
#include "training/step/train_step.h"
#include "core/remove_tree.h"

namespace fs = std::filesystem;
using namespace salt;

namespace {

struct Case {
  std::string label;
  std::vector<std::string> configs;
  int64_t batch;
  int64_t jets;  // training jets for this case
};

config::ResolvedConfig resolve(const Case& c, const fs::path& data_dir, const fs::path& logs) {
  std::vector<std::string> args;
  for (const auto& f : c.configs) {
    args.push_back("-c");
    args.push_back((salt::build_source_dir() / "configs" / f).string());
  }
  std::vector<std::string> extra{"--data.train_file=" + (data_dir / "pp_output_train.h5").string(),
                                 "--data.val_file=" + (data_dir / "pp_output_val.h5").string(),
                                 "--data.norm_dict=" + (data_dir / "norm_dict.yaml").string(),
                                 "--data.class_dict=" + (data_dir / "class_dict.yaml").string(),
                                 "--data.batch_size=" + std::to_string(c.batch),
                                 "--data.num_train=" + std::to_string(c.jets),
                                 "--data.num_workers=1",
                                 "--trainer.max_epochs=1",
                                 "--trainer.limit_val_batches=0",
                                 "--trainer.precision=32",
                                 "--trainer.enable_progress_bar=false",
                                 "--trainer.enable_model_summary=false",
                                 "--trainer.default_root_dir=" + logs.string(),
                                 "--force=true"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto run = config::parse_run_args("fit", args);
  return config::resolve(config::find_base_config(), run.ops);
}

// salt fit's training step (forward + backward + model.optimizer's step, AdamW by
// default) on batches read beforehand: the model alone.
double model_only_jets_per_s(const config::ResolvedConfig& config, int64_t jets) {
  auto setup = training::prepare_run(config, training::Stage::kFit);
  auto reader = training::open_reader(setup, setup.run.data.train_file, jets, "num_train");
  std::vector<Batch> batches;
  for (int64_t start = 0; start + setup.run.data.batch_size <= reader->num_rows(); start += setup.run.data.batch_size)
    batches.push_back(reader->read(start, setup.run.data.batch_size));
  training::LrsConfig lrs{1e-5, 1e-4, 1e-5, 0.1, 1e-5, -1};
  const auto kind = training::optimizer_kind(setup.run.model.optimizer);
  training::Optimization opt(setup.model->named_parameters(), kind, lrs, static_cast<int64_t>(batches.size()) + 1);
  setup.model->train();
  // salt fit's step for this config (training/step/train_step.h), on batches already in memory.
  training::TrainStep train_step(*setup.model, training::fit_step_options(setup.run.trainer, torch::kCPU, training::read_step_options()));
  auto step = [&](const Batch& b) {
    train_step.forward_backward(training::batch_to_device(b, torch::kCPU));
    train_step.apply(opt);
  };
  step(batches.front());  // warm-up
  auto t0 = std::chrono::steady_clock::now();
  int64_t seen = 0;
  for (std::size_t i = 1; i < batches.size(); ++i) {
    step(batches[i]);
    seen += batches[i].size;
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(seen) / s;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t jets = 20000;
  int threads = 0;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--jets") && i + 1 < argc) jets = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else {
      std::printf("usage: bench_fit [--jets N] [--threads T] [--quick]\n");
      return std::strcmp(argv[i], "--help") ? 2 : 0;
    }
  }
  if (threads > 0) torch::set_num_threads(threads);
  else {
    config::TrainerConfig cpu;  // this bench trains on the CPU: OMP_NUM_THREADS or LibTorch's count
    cpu.accelerator = "cpu";
    training::configure_torch_threads(cpu, training::read_step_options().threads);
  }
  spdlog::set_level(spdlog::level::warn);
  if (quick) jets = std::min<int64_t>(jets, 4000);
  auto tmp = fs::temp_directory_path() / ("salt-bench-fit-" + std::to_string(getpid()));
  data::write_toy_data(data::ToyDataOptions().set_out_dir(tmp / "data").set_num_train(jets).set_num_val(1000).set_num_test(0));

  std::vector<Case> cases{{"GN2 (CPU size: embed 64, 2 layers)", {"GN2.yaml", "GN2_cpu.yaml"}, 500, jets},
                          {"DIPS", {"dips.yaml"}, 1000, jets},
                          {"GN2 (full size)", {"GN2.yaml"}, 1000, quick ? 2000 : 3000}};
  std::printf("fit throughput on the CPU, %d torch threads, %lld toy jets per case (LZF, 1 loader thread)\n",
              torch::get_num_threads(), static_cast<long long>(jets));
  std::printf("%-36s %7s %14s %16s %8s\n", "model", "batch", "fit jets/s", "model-only j/s", "ratio");
  for (const auto& c : cases) {
    auto config = resolve(c, tmp / "data", tmp / "logs");
    auto result = training::fit(config);
    double fit_rate = static_cast<double>(result.train_jets) / result.train_seconds;
    double model_rate = model_only_jets_per_s(config, c.jets);
    std::printf("%-36s %7lld %14.0f %16.0f %8.2f\n", c.label.c_str(), static_cast<long long>(c.batch), fit_rate,
                model_rate, fit_rate / model_rate);
    std::fflush(stdout);
  }
  salt::remove_tree(tmp);
  return 0;
}
