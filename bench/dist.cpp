// Data-parallel throughput on the CPU: `salt fit` jets/s for the CPU-sized GN2
// (configs/GN2.yaml + GN2_cpu.yaml) on toy data with 1 process and with 2
// processes (Gloo on loopback, gradient hooks on and off), and the time of one
// all-reduce of GN2's full gradient (configs/GN2.yaml, ~2.3M parameters) between 2
// processes. Every figure comes from child processes started the way
// `salt fit --trainer.devices N` starts them; the throughput is the one fit logs
// (training batches only, loading included, validation off).
//
//   bench_dist [--jets N] [--quick]
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/install_paths.h"
#include "cli/cli_main.h"
#include "config/compose.h"
#include "config/run_args.h"
#include "data/toy_data.h"
#include "parallel/launch_env.h"
#include "parallel/local_launch.h"
#include "parallel/process_group.h"
#include "models/summary.h"
#include "training/run_setup.h"
#include "core/remove_tree.h"

namespace fs = std::filesystem;
using namespace salt;

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the workers with this process's stdout/stderr captured; returns both.
std::string run_captured(const parallel::LocalLaunchOptions& options, const fs::path& tmp) {
  const auto path = tmp / "captured.txt";
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  FILE* f = std::fopen(path.c_str(), "w");
  ::dup2(fileno(f), 1);
  ::dup2(fileno(f), 2);
  int code = 0;
  std::string failure;
  try {
    code = parallel::run_local_workers(options);
  } catch (const std::exception& e) {
    failure = e.what();
    code = 1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  std::fclose(f);
  auto text = read_all(path);
  if (code != 0) {
    std::fprintf(stderr, "bench_dist: a run failed: %s\n%s\n", failure.c_str(), text.c_str());
    std::exit(1);
  }
  return text;
}

double figure(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) {
    std::fprintf(stderr, "bench_dist: no '%s' in the output:\n%s\n", pattern.c_str(), text.c_str());
    std::exit(1);
  }
  return std::stod(m[1]);
}

std::vector<std::string> fit_args(const fs::path& data, const fs::path& logs, int64_t jets, int devices) {
  const auto cfg = [](const char* f) { return (salt::build_source_dir() / "configs" / f).string(); };
  return {"--as-salt",
          "fit",
          "-c",
          cfg("GN2.yaml"),
          "-c",
          cfg("GN2_cpu.yaml"),
          "--data.train_file=" + (data / "pp_output_train.h5").string(),
          "--data.val_file=" + (data / "pp_output_val.h5").string(),
          "--data.norm_dict=" + (data / "norm_dict.yaml").string(),
          "--data.class_dict=" + (data / "class_dict.yaml").string(),
          "--data.batch_size=500",
          "--data.num_train=" + std::to_string(jets),
          "--data.num_workers=1",
          "--trainer.max_epochs=1",
          "--trainer.limit_val_batches=0",
          "--trainer.enable_progress_bar=false",
          "--trainer.enable_model_summary=false",
          "--trainer.accelerator=cpu",
          "--trainer.devices=" + std::to_string(devices),
          "--trainer.default_root_dir=" + logs.string(),
          "--force=true"};
}

// Worker role: all-reduces a float tensor of `numel` elements `iters` times; rank 0
// prints the mean time.
int allreduce_worker(int64_t numel, int iters) {
  torch::set_num_threads(1);
  auto env = parallel::read_dist_env(parallel::process_environment());
  auto group = parallel::ProcessGroup::connect(env, torch::Device(torch::kCPU),
                                           parallel::GroupOptions::from_environment(parallel::process_environment()));
  auto grads = torch::randn({numel});
  for (int i = 0; i < 3; ++i) group->allreduce_sum(grads);  // connections warm
  group->barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) group->allreduce_sum(grads);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters;
  if (group->rank() == 0) std::printf("allreduce_ms %.3f\n", ms);
  return 0;
}

int64_t gn2_full_parameters(const fs::path& data) {
  std::vector<std::string> args{"-c", (salt::build_source_dir() / "configs" / "GN2.yaml").string(),
                                "--data.train_file=" + (data / "pp_output_train.h5").string(),
                                "--data.val_file=" + (data / "pp_output_val.h5").string(),
                                "--data.norm_dict=" + (data / "norm_dict.yaml").string(),
                                "--data.class_dict=" + (data / "class_dict.yaml").string()};
  auto run = config::parse_run_args("fit", args);
  auto setup = training::prepare_run(config::resolve(config::find_base_config(), run.ops), training::Stage::kFit);
  return models::count_parameters(*setup.model).trainable;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "--as-salt")) return cli::main(argc - 1, argv + 1);
  if (argc > 3 && !std::strcmp(argv[1], "--allreduce-worker")) return allreduce_worker(std::stoll(argv[2]), std::stoi(argv[3]));

  int64_t jets = 20000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--jets") && i + 1 < argc) jets = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--quick")) jets = 8000;
    else {
      std::printf("usage: bench_dist [--jets N] [--quick]\n");
      return std::strcmp(argv[i], "--help") ? 2 : 0;
    }
  }
  spdlog::set_level(spdlog::level::warn);
  ::unsetenv("OMP_NUM_THREADS");  // each case sets its own
  for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SALT_DIST_OVERLAP"}) ::unsetenv(v);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  auto tmp = fs::temp_directory_path() / ("salt-bench-dist-" + std::to_string(getpid()));
  data::write_toy_data(data::ToyDataOptions().set_out_dir(tmp / "data").set_num_train(jets).set_num_val(1000).set_num_test(0));

  std::printf("data-parallel fit on the CPU (%d cores): GN2 CPU size, %lld toy jets, batch 500 per process, 1 epoch\n",
              cores, static_cast<long long>(jets));
  std::printf("%-44s %9s %12s %14s\n", "case (best of 2 runs)", "threads", "fit jets/s", "sync wait/step");
  struct Case {
    const char* label;
    int processes, threads;
    bool overlap;
  };
  std::vector<Case> cases{{"1 process", 1, 1, true},
                          {"1 process", 1, cores, true},
                          {"2 processes, all-reduce in backward hooks", 2, 1, true},
                          {"2 processes, all-reduce after backward", 2, 1, false}};
  // Best of two rounds, interleaved: other jobs on a small machine make single runs noisy.
  std::vector<double> best_rate(cases.size(), 0), best_wait(cases.size(), 1e9);
  for (int round = 0; round < 2; ++round)
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[i];
      parallel::LocalLaunchOptions o;
      o.set_program("/proc/self/exe")
          .set_args(fit_args(tmp / "data", tmp / "logs", jets, c.processes))
          .set_num_processes(c.processes)
          .set_threads_per_process(c.threads)
          .add_env(std::string("SALT_DIST_OVERLAP=") + (c.overlap ? "1" : "0"));
      auto out = run_captured(o, tmp);
      const double rate = figure(out, "([0-9.]+) jets/s over");
      if (rate > best_rate[i]) {
        best_rate[i] = rate;
        if (c.processes > 1) best_wait[i] = figure(out, "([0-9.]+) ms waiting per step");
      }
    }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    char wait[32] = "-";
    if (cases[i].processes > 1) std::snprintf(wait, sizeof wait, "%.2f ms", best_wait[i]);
    std::printf("%-44s %9d %12.0f %14s\n", cases[i].label, cases[i].threads, best_rate[i], wait);
  }
  const double one = best_rate[0], two = best_rate[2];
  std::printf("2 processes x 1 thread vs 1 process x 1 thread: %.2fx\n", two / one);

  const int64_t numel = gn2_full_parameters(tmp / "data");
  parallel::LocalLaunchOptions o;
  o.set_program("/proc/self/exe")
      .set_args({"--allreduce-worker", std::to_string(numel), "20"})
      .set_num_processes(2)
      .set_threads_per_process(1);
  auto out = run_captured(o, tmp);
  const double ms = figure(out, "allreduce_ms ([0-9.]+)");
  std::printf("all-reduce of GN2's full gradient (%lld float32, %.1f MB) between 2 processes, Gloo on loopback: %.1f ms\n",
              static_cast<long long>(numel), static_cast<double>(numel) * 4 / 1e6, ms);
  salt::remove_tree(tmp);
  return 0;
}
