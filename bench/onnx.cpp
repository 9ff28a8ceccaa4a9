// Inference speed of an exported tagger, one jet per call on one CPU thread as
// Athena runs it: ONNX Runtime (onnxruntime-node, scripts/ort_run.js) on the file
// `salt to_onnx` writes, next to salt-cpp's own forward pass on the same jets (a
// batch of one jet, its real constituents only), and salt-cpp batched for scale.
// The ORT figure includes the Node binding's per-call overhead.
// Usage: bench_onnx --ckpt_path CKPT [--config CFG] [--jets N] [--repeat R]
//   (bench/onnx_bench.sh trains salt's GN2 on toy data first and runs this.)
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <string>

#include "config/compose.h"
#include "deploy/check.h"
#include "deploy/feature_map.h"
#include "deploy/ort_runner.h"
#include "deploy/to_onnx.h"
#include "training/checkpoints/checkpoint.h"
#include "training/run_setup.h"

namespace fs = std::filesystem;
using namespace salt;
using models::TensorMap;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  fs::path ckpt, config;
  int64_t jets = 500, repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--ckpt_path") ckpt = argv[i + 1];
    else if (a == "--config") config = argv[i + 1];
    else if (a == "--jets") jets = std::stoll(argv[i + 1]);
    else if (a == "--repeat") repeat = std::stoll(argv[i + 1]);
  }
  if (ckpt.empty()) {
    std::fprintf(stderr, "usage: bench_onnx --ckpt_path CKPT [--config CFG] [--jets N] [--repeat R]\n");
    return 2;
  }
  if (config.empty()) config = fs::absolute(ckpt).parent_path().parent_path() / "config.yaml";
  torch::set_num_threads(1);
  const fs::path model = fs::temp_directory_path() / ("bench_onnx_" + std::to_string(::getpid()) + ".onnx");
  deploy::ExportOptions o;
  o.ckpt_path = ckpt;
  o.config = config;
  o.output = model;
  o.force = o.overwrite = o.require_check = true;
  auto exported = deploy::to_onnx(o);

  const auto resolved =
      config::resolve(config::find_base_config(), {{config::ConfigOp::Kind::kMergeFile, config.string(), "", ""}});
  auto setup = training::prepare_run(resolved, training::Stage::kTest);
  training::load_module_state(*setup.model, training::load_checkpoint(ckpt).state_dict, ckpt.string());
  setup.model->eval();
  Batch batch = deploy::read_check_jets(setup, jets);
  const int64_t n = batch.inputs.at(setup.run.data.global_object).size(0) - 3;  // the test jets only
  const auto features =
      deploy::default_feature_map("r22default", setup.run.data.input_order, setup.run.data.global_object);

  // ONNX Runtime, one session.run per jet, one thread.
  const fs::path in = model.string() + ".in.json", out = model.string() + ".out.json";
  {
    std::ofstream f(in);
    f << deploy::ort_inputs_json(batch, features, n);
  }
  auto ort = deploy::run_ort(deploy::find_ort_runner(), model, in, out, /*threads=*/1, static_cast<int>(repeat));
  const double ort_rate = ort["jets_per_second"].as<double>();

  // salt-cpp: each jet alone (its real constituents, no padding), then the whole set as one batch.
  torch::NoGradGuard no_grad;
  std::vector<std::pair<TensorMap, TensorMap>> single;
  for (int64_t j = 0; j < n; ++j) {
    TensorMap x, masks;
    for (const auto& [name, t] : batch.inputs) {
      auto m = batch.pad_masks.find(name);
      if (m == batch.pad_masks.end()) {
        x[name] = t.narrow(0, j, 1);
        continue;
      }
      auto valid = t[j].index({m->second[j].logical_not()});
      x[name] = valid.unsqueeze(0);
      masks[name] = torch::zeros({1, valid.size(0)}, torch::kBool);
    }
    single.emplace_back(x, masks);
  }
  for (auto& [x, m] : single) setup.model->forward(x, m, nullptr);  // warm-up
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < repeat; ++r)
    for (auto& [x, m] : single) setup.model->forward(x, m, nullptr);
  const double salt_rate = double(repeat * n) / seconds_since(t0);
  TensorMap all, all_masks;
  for (const auto& [name, t] : batch.inputs) all[name] = t.narrow(0, 0, n);
  for (const auto& [name, t] : batch.pad_masks) all_masks[name] = t.narrow(0, 0, n);
  setup.model->forward(all, all_masks, nullptr);
  t0 = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < repeat; ++r) setup.model->forward(all, all_masks, nullptr);
  const double batched_rate = double(repeat * n) / seconds_since(t0);

  std::printf("exported %s: %lld test jets, %lld passes, 1 CPU thread, ONNX Runtime %s\n", ckpt.filename().c_str(),
              static_cast<long long>(n), static_cast<long long>(repeat), ort["ort_version"].as<std::string>().c_str());
  std::printf("%-44s %10.0f jets/s\n", "ONNX Runtime, one jet per call (Node)", ort_rate);
  std::printf("%-44s %10.0f jets/s   (baseline; ratio ORT/salt-cpp %.2f)\n", "salt-cpp forward, one jet per call",
              salt_rate, ort_rate / salt_rate);
  std::printf("%-44s %10.0f jets/s\n", "salt-cpp forward, all jets in one batch", batched_rate);
  fs::remove(model);
  fs::remove(in);
  fs::remove(out);
  return exported.checked ? 0 : 1;
}
