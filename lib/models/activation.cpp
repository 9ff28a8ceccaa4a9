#include "models/activation.h"

#include <functional>
#include <map>

#include "core/errors.h"

namespace salt::models {
namespace {

using Factory = std::function<torch::nn::AnyModule()>;

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
      {"Mish", [] { return nn::AnyModule(nn::Mish()); }},
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

config::TypeP activation_type() { return config::t_choice(activation_names(), "activation"); }

}  // namespace salt::models
