// Forward+backward throughput of GN2 (salt's configs/GN2/GN2.yaml model) on the
// CPU at batch 1000 with 40 track slots, ~15 valid per jet, and the attention
// kernel alone (explicit masked softmax vs fused SDPA where LibTorch >= 2.0).
// Usage: bench_model [--batch N] [--iters N] [--threads N]   (defaults 1000, 1, LibTorch's)
#include <torch/torch.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/torch_compat.h"
#include "models/model_factory.h"
#include "models/summary.h"

using namespace salt::models;

namespace {

// salt's GN2 model section (configs/GN2/GN2.yaml), attn_type left to the caller.
const char* kGN2 = R"(
class_path: salt.models.SaltModel
init_args:
  init_nets:
    - input_name: tracks
      dense_config: { output_size: 256, hidden_layers: [256], activation: ReLU }
  encoder:
    class_path: salt.models.Transformer
    init_args:
      num_layers: 4
      embed_dim: 256
      out_dim: 128
      attn_type: ATTN
      dense_kwargs: { activation: ReLU, gated: False }
      attn_kwargs: { num_heads: 8 }
  pool_net:
    class_path: salt.models.GlobalAttentionPooling
    init_args: { input_size: 128 }
  tasks:
    class_path: torch.nn.ModuleList
    init_args:
      modules:
        - class_path: salt.models.ClassificationTask
          init_args:
            name: jets_classification
            input_name: jets
            label: flavour_label
            class_names: [bjets, cjets, ujets, taujets]
            loss: torch.nn.CrossEntropyLoss
            dense_config: { input_size: 128, output_size: 4, hidden_layers: [128, 64, 32], activation: ReLU }
        - class_path: salt.models.ClassificationTask
          init_args:
            name: track_origin
            input_name: tracks
            label: ftagTruthOriginLabel
            weight: 0.5
            loss: torch.nn.CrossEntropyLoss
            dense_config: { input_size: 128, output_size: 8, hidden_layers: [128, 64, 32], activation: ReLU, context_size: 128 }
        - class_path: salt.models.VertexingTask
          init_args:
            name: track_vertexing
            input_name: tracks
            label: ftagTruthVertexIndex
            weight: 1.5
            loss: { class_path: torch.nn.BCEWithLogitsLoss, init_args: { reduction: none } }
            dense_config: { input_size: 256, output_size: 1, hidden_layers: [128, 64, 32], activation: ReLU, context_size: 128 }
)";

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 1000, iters = 1, length = 40;  // one timed step after a warm-up keeps it under a minute
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--batch") batch = std::atoll(argv[i + 1]);
    else if (a == "--iters") iters = std::atoll(argv[i + 1]);
    else if (a == "--threads") torch::set_num_threads(std::atoi(argv[i + 1]));
  }
  torch::manual_seed(0);

  ModelContext ctx;
  ctx.variables = {{"jets", {"pt_btagJes", "eta_btagJes"}}, {"tracks", std::vector<std::string>(19, "v")}};
  ctx.norm = {{"jets", {std::vector<float>(2, 0.f), std::vector<float>(2, 1.f)}},
              {"tracks", {std::vector<float>(19, 0.f), std::vector<float>(19, 1.f)}}};
  ctx.name = "GN2";

  // Random inputs: 5..25 valid tracks per jet (mean 15), padded slots zero.
  auto n_valid = torch::randint(5, 26, {batch}, torch::kLong);
  auto mask = torch::arange(length).unsqueeze(0) >= n_valid.unsqueeze(1);
  salt::models::TensorMap inputs{{"jets", torch::randn({batch, 2})},
                                 {"tracks", torch::randn({batch, length, 19}).masked_fill(mask.unsqueeze(-1), 0.0)}};
  salt::models::TensorMap masks{{"tracks", mask}};
  Labels labels;
  labels["jets"]["flavour_label"] = torch::randint(0, 4, {batch}, torch::kLong);
  labels["tracks"]["ftagTruthOriginLabel"] = torch::randint(0, 8, {batch, length}, torch::kLong);
  labels["tracks"]["ftagTruthVertexIndex"] = torch::randint(-1, 4, {batch, length}, torch::kLong);

  std::printf("salt-cpp bench_model: GN2 forward+backward, LibTorch %s, %d threads, batch %lld, %lld slots, %.1f valid "
              "tracks/jet\n",
              salt::compat::torch_version().c_str(), torch::get_num_threads(), static_cast<long long>(batch),
              static_cast<long long>(length), n_valid.to(torch::kDouble).mean().item<double>());

  std::vector<std::string> kernels = {"torch-math"};
  if (salt::compat::kHasFusedAttention) kernels.push_back("torch-flash");
  for (const auto& kernel : kernels) {
    std::string yaml = kGN2;
    yaml.replace(yaml.find("ATTN"), 4, kernel);
    auto model = build_model(YAML::Load(yaml), ctx);
    model->train();
    if (kernel == kernels.front())
      std::printf("%lld trainable parameters\n", static_cast<long long>(count_parameters(*model).trainable));
    auto step = [&] {
      model->zero_grad();
      auto out = model->forward(inputs, masks, &labels);
      out.loss.backward();
    };
    step();  // warm-up
    auto t0 = std::chrono::steady_clock::now();
    if (std::getenv("SALT_PROF")) { torch::autograd::profiler::RecordProfile rp(std::getenv("SALT_PROF")); step(); }
    for (int64_t i = 0; i < iters; ++i) step();
    const double dt = seconds_since(t0) / static_cast<double>(iters);
    std::printf("  attn_type %-11s (%s): %.3f s/batch, %.0f jets/s\n", kernel.c_str(),
                attn_type_uses_fused_kernel(kernel) ? "fused SDPA" : "explicit softmax", dt, batch / dt);
  }

  // The attention kernel alone at GN2's shape (D 256, 8 heads, 41 tokens with the register).
  {
    const int64_t h = 8, dh = 32, l = length + 1;
    auto q = torch::randn({batch, h, l, dh}), k = torch::randn({batch, h, l, dh}), v = torch::randn({batch, h, l, dh});
    auto allowed = torch::cat({mask, torch::zeros({batch, 1}, torch::kBool)}, 1).logical_not().view({batch, 1, 1, l});
    auto time_it = [&](auto&& fn) {
      fn();
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 5; ++i) fn();
      return seconds_since(t0) / 5;
    };
    torch::NoGradGuard ng;
    const double te = time_it([&] { return attention_explicit(q, k, v, allowed, 0.0, 1.0 / std::sqrt(double(dh))); });
    std::printf("  attention kernel forward, explicit masked softmax: %.1f ms\n", te * 1e3);
#if SALT_TORCH_AT_LEAST(2, 0)
    const double tf = time_it([&] { return salt::compat::fused_attention(q, k, v, allowed.expand({batch, 1, l, l}), 0.0); });
    auto diff = (salt::compat::fused_attention(q, k, v, allowed.expand({batch, 1, l, l}), 0.0) -
                 attention_explicit(q, k, v, allowed, 0.0, 1.0 / std::sqrt(double(dh)))).abs().max().item<double>();
    std::printf("  attention kernel forward, fused SDPA: %.1f ms (max |diff| %.2e)\n", tf * 1e3, diff);
#else
    std::printf("  attention kernel forward, fused SDPA: n/a (LibTorch < 2.0)\n");
#endif
  }
  return 0;
}
