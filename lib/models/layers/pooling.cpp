#include "models/layers/pooling.h"

#include "models/packing/common.h"
#include "models/registry.h"

#include "export/layers.h"

namespace salt::models {
namespace {

const config::Binding<GlobalAttentionPoolingOptions>& pooling_binding() {
  static const auto b = config::Binding<GlobalAttentionPoolingOptions>({}).required(
      "input_size", SALT_MEMBER(input_size), "Embedding size of the constituents.", config::t_size());
  return b;
}

PoolNet build_pooling(const YAML::Node& init_args, const BuildContext& ctx) {
  const auto size = pooling_binding().read(init_args).input_size();
  if (size != ctx.constituent_dim)
    throw UsageError(ctx.arg("input_size") + ": " + std::to_string(size) + " does not match the embedding size " +
                     std::to_string(ctx.constituent_dim) + " it pools");
  return PoolNet(std::shared_ptr<PoolNetImpl>(GlobalAttentionPooling(size).ptr()));
}

const bool kPoolingRegistered = register_model_component<PoolNet>(
    {"salt.models.GlobalAttentionPooling", "pooling", pooling_binding().type(),
     "Softmax-weighted sum over valid constituents and registers.", config::Support::kFull, "",
     {"salt.models.pooling.GlobalAttentionPooling"}},
    build_pooling);

}  // namespace

GlobalAttentionPoolingImpl::GlobalAttentionPoolingImpl(int64_t input_size)
    : PoolNetImpl("GlobalAttentionPooling") {
  gate_nn = register_module("gate_nn", torch::nn::Linear(input_size, 1));
}

torch::Tensor GlobalAttentionPoolingImpl::weights(const torch::Tensor& x, const torch::Tensor& pad_mask) {
  auto scores = gate_nn->forward(x).squeeze(-1);
  return masked_softmax(scores, pad_mask, 1);
}

torch::Tensor GlobalAttentionPoolingImpl::forward(const torch::Tensor& x, const torch::Tensor& pad_mask) {
  return (x * weights(x, pad_mask).unsqueeze(-1)).sum(1);
}

torch::Tensor GlobalAttentionPoolingImpl::forward_packed(const torch::Tensor& x, const TokenLayout& layout) {
  auto scores = layout.scatter(gate_nn->forward(x)).squeeze(-1);  // [B, Lc]
  auto w = masked_softmax(scores, layout.pad_mask, 1);
  return torch::bmm(w.unsqueeze(1), layout.scatter(x)).squeeze(1);
}


ox::Value attention_pool_onnx(ox::Graph& g, const ox::Value& x, const torch::nn::Linear& gate) {
  auto w = g.op("Softmax", {ox::linear(g, x, gate)}, {{"axis", int64_t{0}}});  // [L, 1]
  return g.op("MatMul", {g.op("Transpose", {w}, {{"perm", std::vector<int64_t>{1, 0}}}), x});
}

ox::Value GlobalAttentionPoolingImpl::to_onnx(ox::Graph& g, const ox::Value& x) {
  return attention_pool_onnx(g, x, gate_nn);
}

torch::Tensor GlobalAttentionPoolingImpl::pool(const PoolInputs& in) {
  return forward_packed(in.packed.x, TokenLayout::of(in.packed));
}

ox::Value GlobalAttentionPoolingImpl::pool_onnx(ox::Graph& g, const ox::Value& tokens, const ox::Value&) {
  return to_onnx(g, tokens);
}

}  // namespace salt::models
