// salt.models.transformer.NormResidual around an Attention or GLU (`fn`):
//   pre:  x + drop_path(ls(fn(norm(x))))
//   post: norm(x + drop_path(ls(fn(x))))
//   none: x + drop_path(ls(fn(x)))
// `ls` (LayerScale, parameter `gamma`) only exists when ls_init is set, as in salt.
#pragma once
#include <torch/torch.h>

#include <optional>
#include <string>
#include <utility>

#include "models/layers/norm.h"

#include "export/graph.h"

namespace salt::models {

struct ResidualOptions {
  TORCH_ARG(std::string, norm) = "LayerNorm";
  TORCH_ARG(std::string, norm_type) = "pre";  // pre | post | none
  TORCH_ARG(std::optional<double>, ls_init) = std::nullopt;
  TORCH_ARG(double, drop_path) = 0.0;
};

class LayerScaleImpl : public torch::nn::Module {
 public:
  LayerScaleImpl(int64_t dim, double init) : torch::nn::Module("LayerScale") {
    gamma = register_parameter("gamma", torch::full({dim}, init));
  }
  torch::Tensor forward(const torch::Tensor& x) { return x * gamma; }
  torch::Tensor gamma;
};
TORCH_MODULE(LayerScale);

// Stochastic depth: drops the whole residual branch per sample while training.
torch::Tensor drop_path(const torch::Tensor& x, double prob, bool training);

// The same on packed tokens [N, ...]: one draw per jet (`jet` [N] indexes [batch]),
// so all tokens of a jet keep or drop the branch together, as on the padded layout.
torch::Tensor drop_path_tokens(const torch::Tensor& x, double prob, bool training, const torch::Tensor& jet,
                               int64_t batch);

// Validates norm_type; throws UsageError naming it otherwise.
void check_norm_type(const std::string& norm_type);

template <class Fn>
class NormResidualImpl : public torch::nn::Module {
 public:
  NormResidualImpl(Fn f, int64_t dim, const ResidualOptions& o)
      : torch::nn::Module("NormResidual"), options_(o) {
    check_norm_type(o.norm_type());
    fn = register_module("fn", std::move(f));
    if (o.norm_type() != "none") norm = register_module("norm", Norm(o.norm(), dim));
    if (o.ls_init()) ls = register_module("ls", LayerScale(dim, *o.ls_init()));
  }

  template <class... Args>
  torch::Tensor forward(const torch::Tensor& x, Args&&... args) {
    const bool pre = options_.norm_type() == "pre";
    auto out = fn->forward(pre ? norm->forward(x) : x, std::forward<Args>(args)...);
    if (ls) out = ls->forward(out);
    out = x + drop_path(out, options_.drop_path(), is_training());
    return options_.norm_type() == "post" ? norm->forward(out) : out;
  }

  // forward() with fn replaced by call(normed x) (padded layout).
  template <class Call>
  torch::Tensor forward_call(const torch::Tensor& x, Call&& call) {
    const bool pre = options_.norm_type() == "pre";
    auto out = call(pre ? norm->forward(x) : x);
    if (ls) out = ls->forward(out);
    out = x + drop_path(out, options_.drop_path(), is_training());
    return options_.norm_type() == "post" ? norm->forward(out) : out;
  }

  // forward() on packed tokens [N, D] (jet [N] of `batch` jets), fn replaced by
  // call(normed x) so that the caller picks fn's packed entry point. fn's packed
  // entry points read the normed rows through one linear layer only, so a pre-norm
  // may write them in autocast's type (`norm_cast_kernel`, Norm::forward_for_product).
  template <class Call>
  torch::Tensor forward_tokens(const torch::Tensor& x, const torch::Tensor& jet, int64_t batch, bool norm_cast_kernel,
                               Call&& call) {
    const bool pre = options_.norm_type() == "pre";
    auto out = call(pre ? norm->forward_for_product(x, norm_cast_kernel) : x);
    if (ls) out = ls->forward(out);
    out = x + drop_path_tokens(out, options_.drop_path(), is_training(), jet, batch);
    return options_.norm_type() == "post" ? norm->forward(out) : out;
  }

  // forward() in an ONNX graph (eval: no drop path); call(normed x) exports fn.
  template <class Call>
  ox::Value to_onnx(ox::Graph& g, const ox::Value& x, Call&& call) {
    const bool pre = options_.norm_type() == "pre";
    auto out = call(pre ? norm->to_onnx(g, x) : x);
    if (ls) out = g.op("Mul", {out, g.constant(ls->gamma, "gamma")});
    out = g.op("Add", {x, out});
    return options_.norm_type() == "post" ? norm->to_onnx(g, out) : out;
  }

  Fn fn{nullptr};
  Norm norm{nullptr};
  LayerScale ls{nullptr};

 private:
  ResidualOptions options_;
};

}  // namespace salt::models
