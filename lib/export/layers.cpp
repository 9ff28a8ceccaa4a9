#include "export/layers.h"

namespace salt::ox {

Value linear(Graph& g, const Value& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  std::vector<Value> in{x, g.constant(weight, "weight")};
  if (bias.defined()) in.push_back(g.constant(bias, "bias"));
  return g.op("Gemm", in, {{"transB", int64_t{1}}});
}

Value linear_nd(Graph& g, const Value& x, const torch::nn::Linear& layer) {
  auto y = g.op("MatMul", {x, g.constant(layer->weight.detach().t(), "weight_t")});
  return layer->bias.defined() ? g.op("Add", {y, g.constant(layer->bias.detach(), "bias")}) : y;
}

Value linear(Graph& g, const Value& x, const torch::nn::Linear& layer) {
  return linear(g, x, layer->weight, layer->bias);
}

Value layer_norm(Graph& g, const Value& x, int64_t dim, float eps) {
  return g.op("LayerNormalization", {x, g.constant(torch::ones({dim}), "ln_scale"), g.constant(torch::zeros({dim}), "ln_bias")},
              {{"axis", int64_t{-1}}, {"epsilon", eps}});
}

Value layer_norm(Graph& g, const Value& x, const torch::nn::LayerNorm& norm) {
  const auto& o = norm->options;
  return g.op("LayerNormalization", {x, g.constant(norm->weight.detach(), "ln_scale"), g.constant(norm->bias.detach(), "ln_bias")},
              {{"axis", int64_t{-1}}, {"epsilon", static_cast<float>(o.eps())}});
}

Value rms_norm(Graph& g, const Value& x, const torch::Tensor& weight, float eps) {
  auto mean_sq = g.op("ReduceMean", {g.op("Mul", {x, x})}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}});
  auto inv = g.op("Reciprocal", {g.op("Sqrt", {g.op("Add", {mean_sq, g.scalar(eps)})})});
  return g.op("Mul", {g.op("Mul", {x, inv}), g.constant(weight, "rms_weight")});
}

Value dim0(Graph& g, const Value& x) {
  return g.op("Slice", {g.op("Shape", {x}), g.ints({0}), g.ints({1})});
}

Value rows_like(Graph& g, const Value& v, const Value& like) {
  auto columns = g.op("Slice", {g.op("Shape", {v}), g.ints({1}), g.ints({2})});
  return g.op("Expand", {v, g.op("Concat", {dim0(g, like), columns}, {{"axis", int64_t{0}}})});
}

Value attach_context(Graph& g, const Value& x, const Value& context) {
  return g.op("Concat", {rows_like(g, context, x), x}, {{"axis", int64_t{-1}}});
}

std::vector<Value> split_columns(Graph& g, const Value& x, int64_t k) {
  if (k == 1) return {x};
  return g.op_n("Split", {x, g.ints(std::vector<int64_t>(static_cast<size_t>(k), 1))}, static_cast<int>(k),
                {{"axis", int64_t{-1}}});
}

Value to_scalar(Graph& g, const Value& x) { return g.op("Reshape", {x, g.ints({})}); }

}  // namespace salt::ox
