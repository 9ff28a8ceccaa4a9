// Muon, as torch.optim.Muon (torch >= 2.9, torch/optim/_muon.py), which salt's
// HybridMuonAdamW (salt/optim/hybrid_muon_adamw.py) uses for 2-D weight matrices,
// and salt's name policy that picks those matrices. Per parameter with a gradient:
//   buf = lerp(buf, g, 1 - momentum)                   (buf starts at zeros)
//   u = nesterov ? lerp(g, buf, momentum) : buf
//   O = NewtonSchulz(u) in bfloat16 (zeropower_via_newtonschulz below)
//   p *= 1 - lr * wd;  p -= adjusted_lr * O
// with adjusted_lr = lr * sqrt(max(1, rows/cols)) ("original", salt's choice) or
// lr * 0.2 * sqrt(max(rows, cols)) ("match_rms_adamw").
#pragma once
#include <torch/torch.h>

#include <array>
#include <string>
#include <vector>

namespace salt::training {

enum class MuonLrAdjust { kOriginal, kMatchRmsAdamW };

struct MuonOptions : torch::optim::OptimizerCloneableOptions<MuonOptions> {
  explicit MuonOptions(double lr = 1e-3) : lr_(lr) {}
  typedef std::array<double, 3> coefficients_t;
  TORCH_ARG(double, lr);
  TORCH_ARG(double, weight_decay) = 0.1;  // torch's default; salt passes lrs_config.weight_decay
  TORCH_ARG(double, momentum) = 0.95;
  TORCH_ARG(bool, nesterov) = true;
  TORCH_ARG(coefficients_t, ns_coefficients) = coefficients_t{3.4445, -4.775, 2.0315};
  TORCH_ARG(double, eps) = 1e-7;
  TORCH_ARG(int64_t, ns_steps) = 5;
  TORCH_ARG(MuonLrAdjust, adjust_lr) = MuonLrAdjust::kOriginal;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

struct MuonParamState : torch::optim::OptimizerCloneableParamState<MuonParamState> {
  TORCH_ARG(torch::Tensor, momentum_buffer);
};

class Muon : public torch::optim::Optimizer {
 public:
  // Every parameter must be 2-D (torch raises otherwise).
  Muon(std::vector<torch::Tensor> params, const MuonOptions& defaults);
  torch::Tensor step(LossClosure closure = nullptr) override;
};

// torch's _zeropower_via_newtonschulz: the approximately orthogonalised `update`
// (2-D), computed in bfloat16 and returned as bfloat16.
torch::Tensor zeropower_via_newtonschulz(const torch::Tensor& update, const MuonOptions::coefficients_t& abc,
                                         int64_t steps, double eps);

// salt's MuonParamPolicy: a trainable 2-D parameter goes to Muon unless its
// lowercased name matches one of the exclusion regexes (bias, norms, embeddings,
// heads/outputs). Applied to salt-cpp's names (model->named_parameters(), which
// follow salt's module names under "model."), GN2 splits as (tests/training/
// optim/optimizers_test.cpp, SplitsGN2ByName prints it):
//   Muon:  init_nets.*.net.net.N.weight, tasks.*.net.net.N.weight,
//          encoder.registers, encoder.layers.*.attn.fn.in_proj_weight,
//          encoder.layers.*.dense.fn.in_proj.weight, pool_net.gate_nn.weight
//   AdamW: every bias, every out_proj.weight (attention, dense, encoder.out_proj),
//          and any norm weights.
bool is_muon_param(const std::string& name, const torch::Tensor& param);

}  // namespace salt::training
