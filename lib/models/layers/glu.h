// salt.models.transformer.GLU: the dense update of an encoder layer.
// in_proj Linear(D, H (x2 if gated)) -> activation (act(a) * b if gated) -> dropout
// -> out_proj Linear(H, D). H defaults to 2D.
#pragma once
#include <torch/torch.h>

#include <optional>
#include <string>

#include "config/bind.h"

#include "export/fwd.h"

namespace salt::models {

struct TokenLayout;

struct GLUOptions {
  explicit GLUOptions(int64_t embed_dim = 0) : embed_dim_(embed_dim) {}
  TORCH_ARG(int64_t, embed_dim);
  TORCH_ARG(std::optional<int64_t>, hidden_dim) = std::nullopt;
  TORCH_ARG(std::string, activation) = "SiLU";  // salt's GLU default (GN2 sets ReLU)
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, gated) = false;
  TORCH_ARG(bool, mup) = false;  // muP init of in_proj and out_proj (see mup_init_linear)
};

// The encoder's `dense_kwargs` (embed_dim comes from the encoder).
const config::Binding<GLUOptions>& glu_binding();

class GLUImpl : public torch::nn::Module {
 public:
  explicit GLUImpl(const GLUOptions& options);
  // x: [..., embed_dim]. With `salt_padded` (TokenLayout::padded_as_salt of x's
  // packed rows) a training CPU step draws dropout as salt does on its padded tokens.
  torch::Tensor forward(const torch::Tensor& x, const TokenLayout* salt_padded = nullptr);
  ox::Value to_onnx(ox::Graph& g, const ox::Value& x);  // x [rows, embed_dim]

  torch::nn::Linear in_proj{nullptr}, out_proj{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::AnyModule activation;

 private:
  bool gated_;
};
TORCH_MODULE(GLU);

}  // namespace salt::models
