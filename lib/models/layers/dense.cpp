#include "models/layers/dense.h"

#include "core/errors.h"
#include "export/layers.h"
#include "models/layers/activation.h"
#include "models/layers/padded_dropout.h"
#include "models/packing/common.h"

namespace salt::models {

const config::Binding<DenseOptions>& dense_binding() {
  using namespace config;
  static const Binding<DenseOptions> b = [] {
    Binding<DenseOptions> d(DenseOptions(0));
    d.derived("input_size", SALT_MEMBER(input_size), "Input features (init nets: derived from data.variables when null).", t_size())
        .arg("output_size", SALT_MEMBER(output_size), "Output features (null: input_size).",
             t_optional(t_size()))
        .arg("hidden_layers", SALT_MEMBER(hidden_layers), "Sizes of the hidden layers (null: [input_size * hidden_dim_scale]).",
             t_optional(t_list(t_size())))
        .arg("hidden_dim_scale", SALT_MEMBER(hidden_dim_scale), "Hidden size multiplier when hidden_layers is null.", t_size())
        .arg("activation", SALT_MEMBER(activation), "Activation after each hidden layer (torch.nn class name).",
             activation_type())
        .arg("final_activation", SALT_MEMBER(final_activation), "Activation after the output layer (null: none).",
             t_optional(activation_type()))
        .arg("dropout", SALT_MEMBER(dropout), "Dropout after each hidden activation.", t_probability())
        .arg("bias", SALT_MEMBER(bias), "Linear layers have a bias.")
        .arg("context_size", SALT_MEMBER(context_size), "Size of a context vector concatenated before the input.",
             at_least(t_int(), 0))
        .arg("mup", SALT_MEMBER(mup), "muP initialisation (model.mup_config): weights N(0, 1/out_features), biases 0.");
    return d;
  }();
  return b;
}

// A Dense named as a component (a MaskDecoder's class_net and mask_net); the
// component that holds it builds it (it knows the input size).
const bool kDenseRegistered = config::register_component({"salt.models.Dense", "dense", dense_binding().type(),
                                                     "An MLP (salt.models.Dense).", config::Support::kFull, "",
                                                     {"salt.models.dense.Dense"}});

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
  if (options.mup())
    for (auto& m : net->modules(/*include_self=*/false))
      if (auto l = std::dynamic_pointer_cast<torch::nn::LinearImpl>(m)) {
        torch::nn::Linear linear(l);
        mup_init_linear(linear);
      }
}

void mup_init_linear(torch::nn::Linear& linear) {
  torch::NoGradGuard no_grad;
  linear->weight.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(linear->weight.size(0))));
  if (linear->bias.defined()) linear->bias.zero_();
}

torch::Tensor DenseImpl::run(torch::Tensor h, const TokenIndex* rows_of) {
  if (!rows_of || !is_training() || options_.dropout() <= 0 || !h.device().is_cpu()) return net->forward(h);
  for (auto& layer : *net) {
    if (dynamic_cast<torch::nn::DropoutImpl*>(layer.ptr().get()))
      h = padded_dropout(h, options_.dropout(), *rows_of);
    else
      h = layer.forward(h);
  }
  return h;
}

torch::Tensor DenseImpl::forward(const torch::Tensor& x, const torch::Tensor& context, const TokenIndex* rows_of) {
  if (options_.context_size() > 0) {
    if (!context.defined()) throw UsageError("Dense: expected a context vector, none given");
    return run(attach_context(x, context), rows_of);
  }
  return run(x, rows_of);
}

torch::nn::Linear DenseImpl::first_linear() const {
  return torch::nn::Linear(net->ptr<torch::nn::LinearImpl>(0));
}

torch::Tensor DenseImpl::forward_after_first(torch::Tensor h) {
  for (auto it = net->begin() + 1; it != net->end(); ++it) h = it->forward(h);
  return h;
}

bool DenseImpl::relu_follows_first() const {
  if (!first_layer_is_linear() || net->size() < 2) return false;
  const auto relu = std::dynamic_pointer_cast<torch::nn::ReLUImpl>(net->ptr(1));
  return relu && !relu->options.inplace();
}

torch::Tensor DenseImpl::forward_after_first_relu(torch::Tensor h) {
  if (!relu_follows_first()) throw UsageError("Dense: no ReLU after the first Linear");
  for (auto it = net->begin() + 2; it != net->end(); ++it) h = it->forward(h);
  return h;
}

torch::Tensor DenseImpl::forward_gathered(const torch::Tensor& x, const torch::Tensor& context,
                                          const torch::Tensor& jet, const TokenIndex* rows_of) {
  const int64_t c = options_.context_size();
  if (c == 0) return run(x, rows_of);
  if (!context.defined()) throw UsageError("Dense: expected a context vector, none given");
  if (!first_layer_is_linear()) return run(attach_context(x, context.index_select(0, jet)), rows_of);
  auto first = first_linear();
  const auto& w = first->weight;
  auto h = torch::nn::functional::linear(x, w.narrow(1, c, w.size(1) - c));
  auto ctx = torch::nn::functional::linear(context, w.narrow(1, 0, c), first->bias);
  return forward_after_first(h + gather_rows(ctx, jet));
}

ox::Value DenseImpl::to_onnx(ox::Graph& g, const ox::Value& x, const ox::Value& context) {
  ox::Value h = x;
  if (options_.context_size() > 0) {
    if (context.empty()) throw UsageError("Dense: expected a context vector, none given");
    h = ox::attach_context(g, x, context);
  }
  for (const auto& layer : net->children()) {
    if (auto* lin = dynamic_cast<torch::nn::LinearImpl*>(layer.get()))
      h = ox::linear(g, h, lin->weight, lin->bias);
    else if (!dynamic_cast<torch::nn::DropoutImpl*>(layer.get()))
      h = activation_to_onnx(g, *layer, h);
  }
  return h;
}

}  // namespace salt::models
