// Building blocks shared by the components' ONNX exports: linear layers, the
// two normalisations, broadcasting a per-jet vector over tokens. The exported
// graph sees one jet: the global object is [1, F], a constituent type [n, F].
#pragma once
#include <torch/torch.h>

#include "export/graph.h"

namespace salt::ox {

// x [rows, in] -> [rows, out] with a torch Linear's weight and bias.
Value linear(Graph& g, const Value& x, const torch::nn::Linear& layer);
Value linear(Graph& g, const Value& x, const torch::Tensor& weight, const torch::Tensor& bias);
// The same on x [..., in] of any rank (MatMul + Add; Gemm takes only matrices).
Value linear_nd(Graph& g, const Value& x, const torch::nn::Linear& layer);

// LayerNorm without affine parameters over the last dimension (size dim).
Value layer_norm(Graph& g, const Value& x, int64_t dim, float eps = 1e-5f);
// A torch LayerNorm over the last dimension with its weight and bias.
Value layer_norm(Graph& g, const Value& x, const torch::nn::LayerNorm& norm);
// x * rsqrt(mean(x^2, -1) + eps) * weight.
Value rms_norm(Graph& g, const Value& x, const torch::Tensor& weight, float eps = 1e-5f);

// The first dimension of x as a 1-D int64 tensor of one element.
Value dim0(Graph& g, const Value& x);
// v [1, C] repeated for every row of `like` ([n, ...]): [n, C].
Value rows_like(Graph& g, const Value& v, const Value& like);
// cat([context, x], -1) with the context [1, C] broadcast over x's rows (salt puts context first).
Value attach_context(Graph& g, const Value& x, const Value& context);

// Splits x [rows, k] into k tensors [rows, 1] along the last axis.
std::vector<Value> split_columns(Graph& g, const Value& x, int64_t k);
// [1, 1] -> a scalar [] (the shape salt's exporter gives jet-level outputs).
Value to_scalar(Graph& g, const Value& x);

}  // namespace salt::ox
