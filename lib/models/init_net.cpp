#include "models/init_net.h"

#include "core/errors.h"

namespace salt::models {

InitNetImpl::InitNetImpl(const InitNetOptions& options) : torch::nn::Module("InitNet"), options_(options) {
  net = register_module("net", Dense(options.dense()));
}

torch::Tensor InitNetImpl::forward(const TensorMap& inputs) {
  auto it = inputs.find(options_.input_name());
  if (it == inputs.end()) throw InputError("InitNet: input '" + options_.input_name() + "' missing from the batch");
  auto x = it->second;
  if (options_.attach_global()) {
    auto g = inputs.find(options_.global_object());
    if (g == inputs.end())
      throw InputError("InitNet '" + options_.input_name() + "': global input '" + options_.global_object() +
                       "' missing from the batch");
    x = attach_context(x, g->second);
  }
  if (x.size(-1) != net->input_size())
    throw InputError("InitNet '" + options_.input_name() + "': got " + std::to_string(x.size(-1)) +
                     " input features, the network expects " + std::to_string(net->input_size()));
  return net->forward(x);
}

torch::Tensor InitNetImpl::forward_packed(const TensorMap& inputs, const TokenIndex& idx) {
  auto it = inputs.find(options_.input_name());
  if (it == inputs.end()) throw InputError("InitNet: input '" + options_.input_name() + "' missing from the batch");
  const auto& x = it->second;
  if (x.dim() != 3)
    throw InputError("SaltModel: input '" + options_.input_name() + "' is not a constituent input (shape [B, L, F])");
  auto rows = idx.gather(x);
  if (!options_.attach_global()) {
    if (x.size(-1) != net->input_size())
      throw InputError("InitNet '" + options_.input_name() + "': got " + std::to_string(x.size(-1)) +
                       " input features, the network expects " + std::to_string(net->input_size()));
    return net->forward(rows);
  }
  auto g = inputs.find(options_.global_object());
  if (g == inputs.end())
    throw InputError("InitNet '" + options_.input_name() + "': global input '" + options_.global_object() +
                     "' missing from the batch");
  const int64_t features = x.size(-1) + g->second.size(-1);
  if (features != net->input_size())
    throw InputError("InitNet '" + options_.input_name() + "': got " + std::to_string(features) +
                     " input features, the network expects " + std::to_string(net->input_size()));
  // Global variables first, as in forward().
  return net->forward(torch::cat({g->second.index_select(0, idx.jet), rows}, -1));
}

}  // namespace salt::models
