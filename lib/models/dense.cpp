#include "models/dense.h"

#include "core/errors.h"
#include "models/activation.h"
#include "models/common.h"

namespace salt::models {

DenseImpl::DenseImpl(const DenseOptions& options)
    : torch::nn::Module("Dense"), options_(options), output_size_(options.output_size().value_or(options.input_size())) {
  std::vector<int64_t> hidden = options.hidden_layers().value_or(
      std::vector<int64_t>{options.input_size() * options.hidden_dim_scale()});
  std::vector<int64_t> nodes{options.input_size() + options.context_size()};
  nodes.insert(nodes.end(), hidden.begin(), hidden.end());
  nodes.push_back(output_size_);
  for (auto n : nodes)
    if (n <= 0) throw UsageError("Dense: layer sizes must be positive, got " + std::to_string(n));

  net = torch::nn::Sequential();
  const size_t num_layers = nodes.size() - 1;
  for (size_t i = 0; i < num_layers; ++i) {
    if (options.dropout() > 0) net->push_back(torch::nn::Dropout(options.dropout()));
    net->push_back(torch::nn::Linear(torch::nn::LinearOptions(nodes[i], nodes[i + 1]).bias(options.bias())));
    if (i + 1 != num_layers)
      net->push_back(make_activation(options.activation(), "Dense.activation"));
    else if (options.final_activation())
      net->push_back(make_activation(*options.final_activation(), "Dense.final_activation"));
  }
  register_module("net", net);
}

torch::Tensor DenseImpl::forward(const torch::Tensor& x, const torch::Tensor& context) {
  if (options_.context_size() > 0) {
    if (!context.defined()) throw UsageError("Dense: expected a context vector, none given");
    return net->forward(attach_context(x, context));
  }
  return net->forward(x);
}

}  // namespace salt::models
