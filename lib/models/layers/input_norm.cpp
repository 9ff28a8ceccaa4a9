#include "models/layers/input_norm.h"

#include <cmath>

#include "core/errors.h"

#include "export/graph.h"

namespace salt::models {

InputNormImpl::InputNormImpl(const std::map<std::string, NormStats>& stats) : torch::nn::Module("InputNorm") {
  for (const auto& [input, s] : stats) {
    if (s.means.size() != s.stds.size())
      throw UsageError("InputNorm: '" + input + "' has " + std::to_string(s.means.size()) + " means but " +
                       std::to_string(s.stds.size()) + " stds");
    for (size_t i = 0; i < s.means.size(); ++i) {
      if (!std::isfinite(s.means[i]) || !std::isfinite(s.stds[i]))
        throw UsageError("InputNorm: non-finite normalisation value for '" + input + "' variable " + std::to_string(i));
      if (s.stds[i] == 0.0f)
        throw UsageError("InputNorm: zero standard deviation for '" + input + "' variable " + std::to_string(i));
    }
    auto means = torch::tensor(s.means, torch::kFloat32);
    auto stds = torch::tensor(s.stds, torch::kFloat32);
    // register_buffer returns a reference into the module's buffer list, which the
    // next registration may move: copy each handle before registering the next.
    torch::Tensor mean_buffer = register_buffer(input + "_means", means);
    torch::Tensor std_buffer = register_buffer(input + "_stds", stds);
    buffers_[input] = {mean_buffer, std_buffer};
  }
}

torch::Tensor InputNormImpl::normalise(const std::string& input, const torch::Tensor& x) const {
  auto it = buffers_.find(input);
  if (it == buffers_.end()) throw UsageError("InputNorm: no normalisation parameters for input '" + input + "'");
  // Module::to() swaps buffer data in place (set_data), so these handles follow moves.
  const auto& [means, stds] = it->second;
  if (x.size(-1) != means.size(0))
    throw InputError("InputNorm: input '" + input + "' has " + std::to_string(x.size(-1)) + " variables, expected " +
                     std::to_string(means.size(0)));
  return (x - means) / stds;
}

TensorMap InputNormImpl::forward(const TensorMap& inputs) {
  TensorMap out;
  for (const auto& [name, x] : inputs) {
    out[name] = passes_through(name) ? x : normalise(name, x);
  }
  return out;
}

bool InputNormImpl::passes_through(const std::string& name) {
  return name == "EDGE" || name == "parameters" || name == "objects" || name.rfind('_', 0) == 0;
}

ox::Value InputNormImpl::to_onnx(ox::Graph& g, const std::string& input, const ox::Value& x) const {
  if (passes_through(input)) return x;
  auto it = buffers_.find(input);
  if (it == buffers_.end()) throw UsageError("InputNorm: no normalisation parameters for input '" + input + "'");
  const auto& [means, stds] = it->second;
  return g.op("Div", {g.op("Sub", {x, g.constant(means, input + "_means")}), g.constant(stds, input + "_stds")});
}

}  // namespace salt::models
