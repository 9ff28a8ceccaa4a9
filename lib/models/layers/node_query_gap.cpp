#include "models/layers/node_query_gap.h"

#include "core/errors.h"
#include "export/graph.h"
#include "models/layers/pooling.h"
#include "models/packing/common.h"
#include "models/registry.h"

namespace salt::models {

namespace {

struct NodeQueryGAPConfig {
  int64_t input_size = 0;
};

const config::Binding<NodeQueryGAPConfig>& node_query_gap_binding() {
  static const auto b = config::Binding<NodeQueryGAPConfig>({}).required(
      "input_size", SALT_FIELD(input_size), "Embedding size of the constituents and object queries.", config::t_size());
  return b;
}

const bool kNodeQueryGapRegistered = register_model_component<PoolNet>(
    {"salt.models.NodeQueryGAP", "pooling", node_query_gap_binding().type(),
     "Attention pooling of the constituents and of a MaskFormer decoder's object queries, concatenated (2 x input_size).",
     config::Support::kFull, "", {"salt.models.pooling.NodeQueryGAP"}},
    [](const YAML::Node& init_args, const BuildContext& ctx) {
      if (ctx.objects_dim == 0)
        throw UsageError(ctx.path + ".class_path: salt.models.NodeQueryGAP pools a MaskFormer decoder's object queries; "
                         "it needs model.model.init_args.mask_decoder");
      const auto c = node_query_gap_binding().read(init_args);
      if (c.input_size != ctx.constituent_dim || c.input_size != ctx.objects_dim)
        throw UsageError(ctx.arg("input_size") + ": " + std::to_string(c.input_size) + " must be the size of the encoded "
                         "constituents and of the object queries (" + std::to_string(ctx.constituent_dim) + ")");
      return PoolNet(std::shared_ptr<PoolNetImpl>(NodeQueryGAP(c.input_size).ptr()));
    });

}  // namespace

NodeQueryGAPImpl::NodeQueryGAPImpl(int64_t input_size) : PoolNetImpl("NodeQueryGAP") {
  gate_nn_1 = register_module("gate_nn_1", torch::nn::Linear(input_size, 1));
  gate_nn_2 = register_module("gate_nn_2", torch::nn::Linear(input_size, 1));
}

torch::Tensor NodeQueryGAPImpl::forward(const torch::Tensor& nodes, const torch::Tensor& pad_mask,
                                        const torch::Tensor& queries) {
  auto mask = pad_mask.defined() ? pad_mask : torch::zeros({nodes.size(0), nodes.size(1)}, nodes.options().dtype(torch::kBool));
  const auto w_nodes = masked_softmax(gate_nn_1->forward(nodes).squeeze(-1), mask, 1);
  const auto pooled_nodes = (nodes * w_nodes.unsqueeze(-1)).sum(1);
  const auto padded = torch::cat({queries, torch::zeros({queries.size(0), 1, queries.size(2)}, queries.options())}, 1);
  const auto w_queries = torch::softmax(gate_nn_2->forward(padded), 1);
  return torch::cat({pooled_nodes, (padded * w_queries).sum(1)}, -1);
}

ox::Value NodeQueryGAPImpl::to_onnx(ox::Graph& g, const ox::Value& nodes, const ox::Value& queries) {
  const int64_t d = gate_nn_2->weight.size(1);
  auto padded = g.op("Concat", {queries, g.constant(torch::zeros({1, d}), "zero_query")}, {{"axis", int64_t{0}}});
  return g.op("Concat", {attention_pool_onnx(g, nodes, gate_nn_1), attention_pool_onnx(g, padded, gate_nn_2)}, {{"axis", int64_t{-1}}});
}

torch::Tensor NodeQueryGAPImpl::pool(const PoolInputs& in) {
  return forward(in.sequence.x, in.sequence.mask(), in.queries);
}

ox::Value NodeQueryGAPImpl::pool_onnx(ox::Graph& g, const ox::Value& tokens, const ox::Value& queries) {
  return to_onnx(g, tokens, queries);
}

}  // namespace salt::models
