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

torch::nn::Linear DenseImpl::first_linear() const {
  return torch::nn::Linear(net->ptr<torch::nn::LinearImpl>(0));
}

torch::Tensor DenseImpl::forward_after_first(torch::Tensor h) {
  for (auto it = net->begin() + 1; it != net->end(); ++it) h = it->forward(h);
  return h;
}

torch::Tensor DenseImpl::forward_gathered(const torch::Tensor& x, const torch::Tensor& context,
                                          const torch::Tensor& jet) {
  const int64_t c = options_.context_size();
  if (c == 0) return net->forward(x);
  if (!context.defined()) throw UsageError("Dense: expected a context vector, none given");
  if (!first_layer_is_linear()) return net->forward(attach_context(x, context.index_select(0, jet)));
  auto first = first_linear();
  const auto& w = first->weight;
  auto h = torch::nn::functional::linear(x, w.narrow(1, c, w.size(1) - c));
  auto ctx = torch::nn::functional::linear(context, w.narrow(1, 0, c), first->bias);
  return forward_after_first(h + ctx.index_select(0, jet));
}

}  // namespace salt::models
