// salt.models.Dense: an MLP, optionally fed a context vector concatenated FIRST.
// Layout of `net` (a Sequential, so state-dict indices match salt's nn.Sequential):
// per layer [Dropout if dropout>0] Linear [activation, except after the last;
// final_activation after the last if set]. No normalisation layers.
#pragma once
#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "config/bind.h"

#include "export/fwd.h"

namespace salt::models {

struct TokenIndex;

struct DenseOptions {
  explicit DenseOptions(int64_t input_size) : input_size_(input_size) {}
  TORCH_ARG(int64_t, input_size);
  // Absent: equal to input_size (salt's default).
  TORCH_ARG(std::optional<int64_t>, output_size) = std::nullopt;
  // Absent: one hidden layer of input_size * hidden_dim_scale nodes.
  TORCH_ARG(std::optional<std::vector<int64_t>>, hidden_layers) = std::nullopt;
  TORCH_ARG(int64_t, hidden_dim_scale) = 2;
  TORCH_ARG(std::string, activation) = "ReLU";
  TORCH_ARG(std::optional<std::string>, final_activation) = std::nullopt;
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(int64_t, context_size) = 0;
  // muP (salt's): every Linear re-drawn N(0, 1 / out_features), biases zero.
  TORCH_ARG(bool, mup) = false;
};

// salt's muP init of Dense and GLU layers: weight N(0, 1 / out_features), bias 0.
void mup_init_linear(torch::nn::Linear& linear);

// salt.models.Dense's arguments (the `dense_config` of init nets and tasks).
// input_size defaults to null: the builder derives it (from data.variables, or
// from what the task receives) and reads the rest on top.
const config::Binding<DenseOptions>& dense_binding();

class DenseImpl : public torch::nn::Module {
 public:
  explicit DenseImpl(const DenseOptions& options);
  // x: [..., input_size]; context: [B, context_size] (broadcast over x's middle
  // dims) or [..., context_size]; required iff context_size > 0.
  // rows_of: x holds the valid slots of this padded [B, L] layout (packed rows);
  // in training on the CPU, dropout then draws its mask for the padded tensor and
  // keeps the valid rows' part: salt's masks, and salt's use of the generator.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context = {}, const TokenIndex* rows_of = nullptr);
  // Per-token rows x [N, input_size] with a per-jet context [B, context_size] and
  // jet [N] (the row of context each token belongs to). Same result as
  // forward(x, context.index_select(0, jet)), but the first Linear is split into
  // W_x x + (W_c context + b)[jet]: the context product is computed once per jet
  // and the [N, C + input] concatenation is never built (unless dropout comes first).
  torch::Tensor forward_gathered(const torch::Tensor& x, const torch::Tensor& context, const torch::Tensor& jet,
                                 const TokenIndex* rows_of = nullptr);

  // The same in an ONNX graph (export/graph.h): x [rows, input_size] and, when
  // context_size > 0, context [1, context_size] -> [rows, output_size] (eval: no dropout).
  ox::Value to_onnx(ox::Graph& g, const ox::Value& x, const ox::Value& context = {});

  // For callers that split the first layer themselves (vertexing): whether net
  // starts with its Linear (no dropout before it), that Linear, and the rest of net;
  // whether a plain ReLU follows that Linear, and the rest of net after it (for a
  // caller that applied the ReLU itself: models/kernels/pair_relu.h).
  bool first_layer_is_linear() const { return options_.dropout() <= 0; }
  torch::nn::Linear first_linear() const;
  torch::Tensor forward_after_first(torch::Tensor h);
  bool relu_follows_first() const;
  torch::Tensor forward_after_first_relu(torch::Tensor h);

  int64_t input_size() const { return options_.input_size(); }
  int64_t output_size() const { return output_size_; }
  int64_t context_size() const { return options_.context_size(); }

  torch::nn::Sequential net{nullptr};

 private:
  // net's layers on h; rows_of as in forward().
  torch::Tensor run(torch::Tensor h, const TokenIndex* rows_of);
  DenseOptions options_;
  int64_t output_size_;
};
TORCH_MODULE(Dense);

}  // namespace salt::models
