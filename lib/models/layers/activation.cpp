#include "models/layers/activation.h"

#include <functional>
#include <map>

#include <cmath>

#include "core/errors.h"
#include "export/graph.h"

namespace salt::models {
namespace {

using Factory = std::function<torch::nn::AnyModule()>;

// torch.nn.Mish, computed in float for bfloat16 inputs on the CPU: LibTorch 1.13
// has no CPU bfloat16 Mish kernel ("mish_cpu" not implemented for 'BFloat16'), and
// salt's DL1 trains at 16-mixed, which is bf16-mixed on a CPU. Newer LibTorch's
// kernel computes in float as well, so results agree; it stays a MishImpl for export.
struct FloatMishImpl : torch::nn::MishImpl {
  torch::Tensor forward(const torch::Tensor& x) {
    if (x.scalar_type() != torch::kBFloat16 || !x.device().is_cpu()) return torch::nn::MishImpl::forward(x);
    return torch::nn::MishImpl::forward(x.to(torch::kFloat)).to(torch::kBFloat16);
  }
};
TORCH_MODULE(FloatMish);

// Default constructor arguments equal torch.nn's, so the modules behave alike.
const std::map<std::string, Factory>& factories() {
  namespace nn = torch::nn;
  static const std::map<std::string, Factory> table = {
      {"ReLU", [] { return nn::AnyModule(nn::ReLU()); }},
      {"ReLU6", [] { return nn::AnyModule(nn::ReLU6()); }},
      {"LeakyReLU", [] { return nn::AnyModule(nn::LeakyReLU()); }},
      {"PReLU", [] { return nn::AnyModule(nn::PReLU()); }},  // one learnable slope, like torch.nn
      {"RReLU", [] { return nn::AnyModule(nn::RReLU()); }},
      {"SiLU", [] { return nn::AnyModule(nn::SiLU()); }},
      {"Mish", [] { return nn::AnyModule(FloatMish()); }},
      {"GELU", [] { return nn::AnyModule(nn::GELU()); }},
      {"ELU", [] { return nn::AnyModule(nn::ELU()); }},
      {"CELU", [] { return nn::AnyModule(nn::CELU()); }},
      {"SELU", [] { return nn::AnyModule(nn::SELU()); }},
      {"Tanh", [] { return nn::AnyModule(nn::Tanh()); }},
      {"Sigmoid", [] { return nn::AnyModule(nn::Sigmoid()); }},
      {"LogSigmoid", [] { return nn::AnyModule(nn::LogSigmoid()); }},
      {"Softplus", [] { return nn::AnyModule(nn::Softplus()); }},
      {"Softsign", [] { return nn::AnyModule(nn::Softsign()); }},
      {"Tanhshrink", [] { return nn::AnyModule(nn::Tanhshrink()); }},
      {"Hardtanh", [] { return nn::AnyModule(nn::Hardtanh()); }},
      {"Identity", [] { return nn::AnyModule(nn::Identity()); }},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, _] : factories()) out.push_back(name);
    return out;
  }();
  return names;
}

torch::nn::AnyModule make_activation(const std::string& name, const std::string& where) {
  auto it = factories().find(name);
  if (it == factories().end()) {
    std::string known;
    for (const auto& n : activation_names()) known += (known.empty() ? "" : ", ") + n;
    throw UsageError(where + ": unknown activation '" + name + "' (choose from " + known + ")");
  }
  return it->second();
}

namespace {

ox::Value softplus(ox::Graph& g, const ox::Value& x) { return g.op("Softplus", {x}); }

}  // namespace

ox::Value activation_to_onnx(ox::Graph& g, const torch::nn::Module& m, const ox::Value& x) {
  namespace nn = torch::nn;
  auto is = [&](auto* type) { return dynamic_cast<const std::remove_pointer_t<decltype(type)>*>(&m) != nullptr; };
  auto clip = [&](float lo, float hi) { return g.op("Clip", {x, g.scalar(lo), g.scalar(hi)}); };
  if (is((nn::ReLUImpl*)nullptr)) return g.op("Relu", {x});
  if (is((nn::ReLU6Impl*)nullptr)) return clip(0.f, 6.f);
  if (is((nn::LeakyReLUImpl*)nullptr))
    return g.op("LeakyRelu", {x}, {{"alpha", float(dynamic_cast<const nn::LeakyReLUImpl&>(m).options.negative_slope())}});
  if (auto* p = dynamic_cast<const nn::PReLUImpl*>(&m)) return g.op("PRelu", {x, g.constant(p->weight, "prelu")});
  if (auto* r = dynamic_cast<const nn::RReLUImpl*>(&m))  // eval: the mean slope
    return g.op("LeakyRelu", {x}, {{"alpha", float((r->options.lower() + r->options.upper()) / 2)}});
  if (is((nn::SiLUImpl*)nullptr)) return g.op("Mul", {x, g.op("Sigmoid", {x})});
  if (is((nn::MishImpl*)nullptr)) return g.op("Mul", {x, g.op("Tanh", {softplus(g, x)})});
  if (is((nn::GELUImpl*)nullptr)) {  // exact GELU: 0.5 x (1 + erf(x / sqrt 2)); opset 17 has no Gelu
    auto erf = g.op("Erf", {g.op("Div", {x, g.scalar(float(std::sqrt(2.0)))})});
    return g.op("Mul", {g.op("Mul", {x, g.scalar(0.5f)}), g.op("Add", {erf, g.scalar(1.f)})});
  }
  if (auto* e = dynamic_cast<const nn::ELUImpl*>(&m)) return g.op("Elu", {x}, {{"alpha", float(e->options.alpha())}});
  if (auto* c = dynamic_cast<const nn::CELUImpl*>(&m)) return g.op("Celu", {x}, {{"alpha", float(c->options.alpha())}});
  if (is((nn::SELUImpl*)nullptr)) return g.op("Selu", {x});
  if (is((nn::TanhImpl*)nullptr)) return g.op("Tanh", {x});
  if (is((nn::SigmoidImpl*)nullptr)) return g.op("Sigmoid", {x});
  if (is((nn::LogSigmoidImpl*)nullptr)) return g.op("Neg", {softplus(g, g.op("Neg", {x}))});
  if (is((nn::SoftplusImpl*)nullptr)) return softplus(g, x);
  if (is((nn::SoftsignImpl*)nullptr)) return g.op("Softsign", {x});
  if (is((nn::TanhshrinkImpl*)nullptr)) return g.op("Sub", {x, g.op("Tanh", {x})});
  if (is((nn::HardtanhImpl*)nullptr)) return clip(-1.f, 1.f);
  if (is((nn::IdentityImpl*)nullptr)) return x;
  throw UsageError("to_onnx: activation " + m.name() + " has no ONNX export");
}

config::TypeP activation_type() { return config::t_choice(activation_names(), "activation"); }

}  // namespace salt::models
