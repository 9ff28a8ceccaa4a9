// salt.models.Transformer (TransformerV2 is the same class in salt): an encoder
// stack of `layers` (each attn + dense NormResidual), learnable `registers`
// appended after the constituents (always valid, buffer `register_mask`), then an
// optional `out_proj` (when out_dim is set) and `out_norm` (do_final_norm).
#pragma once
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>

#include "models/layers/attention.h"
#include "models/layers/edge_attention.h"
#include "models/layers/featurewise.h"
#include "models/layers/glu.h"
#include "models/layers/norm.h"
#include "models/layers/residual.h"
#include "models/packing/common.h"

#include "export/fwd.h"

namespace salt::models {

// salt's EncoderLayer: attn then `num_dense` GLUs, each in a NormResidual.
// norm_type "hybrid" (salt's GN3): attention with RMS-normed q, k and v; layer 0 is
// pre-norm, deeper layers keep the residual stream un-normed through attention and
// normalise it once (`norm`) before the dense blocks.
struct EncoderLayerOptions {
  EncoderLayerOptions(int64_t embed_dim) : embed_dim_(embed_dim) {}
  TORCH_ARG(int64_t, embed_dim);
  TORCH_ARG(int64_t, depth) = 1;  // index in the stack (hybrid treats layer 0 apart)
  TORCH_ARG(int64_t, num_dense) = 1;
  TORCH_ARG(std::string, norm_type) = "pre";  // pre | post | hybrid
  TORCH_ARG(ResidualOptions, residual) = ResidualOptions();
  TORCH_ARG(AttentionOptions, attn) = AttentionOptions(0);
  TORCH_ARG(GLUOptions, dense) = GLUOptions();
  // > 0: EdgeAttention with edge features of this size (salt's GN2XE), plus
  // salt's edge_prenorm (created, unused, as in salt) and, with update_edges,
  // edge_postnorm: edges <- edges_out + edge_postnorm(edges_out).
  TORCH_ARG(int64_t, edge_embed_dim) = 0;
  TORCH_ARG(bool, update_edges) = false;
};

class EncoderLayerImpl : public torch::nn::Module {
 public:
  explicit EncoderLayerImpl(const EncoderLayerOptions& options);
  // x: [B, L, D]; pad_mask: bool [B, L] true = padded.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& pad_mask);
  // Packed tokens x [N, D] laid out by `layout` (see TokenLayout).
  torch::Tensor forward_packed(const torch::Tensor& x, const TokenLayout& layout);

  // With edges: x [B, L, D] (padded layout), edges [B, L, L, E], pad_mask [B, L].
  std::pair<torch::Tensor, torch::Tensor> forward_edges(const torch::Tensor& x, const torch::Tensor& edges,
                                                        const torch::Tensor& pad_mask);

  ox::Value to_onnx(ox::Graph& g, const ox::Value& x);  // one jet's tokens [L, D]
  // With edges [L, L, E]: -> (tokens, edges after this layer).
  std::pair<ox::Value, ox::Value> to_onnx_edges(ox::Graph& g, const ox::Value& x, const ox::Value& edges);

  std::shared_ptr<NormResidualImpl<Attention>> attn;            // without edges
  std::shared_ptr<NormResidualImpl<EdgeAttention>> edge_attn;   // with edges (salt's name: attn)
  Norm edge_prenorm{nullptr}, edge_postnorm{nullptr};
  // salt names one block `dense`, several `dense.0`, `dense.1`, ... (nn.Sequential).
  std::vector<std::shared_ptr<NormResidualImpl<GLU>>> dense_blocks;
  Norm norm{nullptr};  // hybrid, depth > 0 only

 private:
  torch::Tensor dense_forward(torch::Tensor x, const TokenLayout* layout);
  ox::Value dense_to_onnx(ox::Graph& g, ox::Value x);
  bool update_edges_ = false;
};
TORCH_MODULE(EncoderLayer);

struct TransformerOptions {
  TransformerOptions(int64_t num_layers, int64_t embed_dim) : num_layers_(num_layers), embed_dim_(embed_dim) {}
  TORCH_ARG(int64_t, num_layers);
  TORCH_ARG(int64_t, embed_dim);
  TORCH_ARG(std::optional<int64_t>, out_dim) = std::nullopt;  // set: out_proj D -> out_dim
  TORCH_ARG(std::string, norm) = "LayerNorm";
  TORCH_ARG(std::string, attn_type) = "torch-math";
  TORCH_ARG(bool, do_final_norm) = true;
  TORCH_ARG(int64_t, num_registers) = 1;  // salt requires >= 1 (no NaN for empty jets)
  TORCH_ARG(bool, drop_registers) = false;
  TORCH_ARG(std::string, norm_type) = "pre";  // pre | post | hybrid
  TORCH_ARG(int64_t, num_dense) = 1;
  TORCH_ARG(std::optional<double>, ls_init) = std::nullopt;
  TORCH_ARG(double, drop_path) = 0.0;
  // embed_dim and attn_type inside these are overwritten by the Transformer's own.
  TORCH_ARG(GLUOptions, dense_kwargs) = GLUOptions();
  TORCH_ARG(AttentionOptions, attn_kwargs) = AttentionOptions(0);
  TORCH_ARG(int64_t, edge_embed_dim) = 0;  // > 0: EdgeAttention layers (forward_packed's edges)
  TORCH_ARG(bool, update_edges) = false;
  // muP: attention and GLUs in muP, out_proj a MuReadout (zero init, input divided
  // by its width multiplier once the base shapes are set; needs out_dim).
  TORCH_ARG(bool, mup) = false;
};

class TransformerImpl : public torch::nn::Module {
 public:
  explicit TransformerImpl(const TransformerOptions& options);
  // Appends the registers (segment "REGISTERS") unless drop_registers, encodes,
  // projects; the returned sequence has out_dim features.
  Sequence forward(const Sequence& in);
  // The same on packed tokens (what SaltModel uses): appends the registers as the
  // last segment; every per-token layer runs on the valid tokens only.
  // params: the `parameters` inputs [B, P], needed with featurewise nets.
  // edges: [B, L_s, L_s, edge_embed_dim] over the segment named edge_segment (the
  // edge init net's output); the layers then run on the padded layout with the
  // edges zero-padded to every token (registers included), as salt's.
  PackedSequence forward_packed(const PackedSequence& in, const torch::Tensor& params = {},
                                const torch::Tensor& edges = {}, const std::string& edge_segment = "");
  void set_backend(const std::string& attn_type);
  // forward() for one jet in an ONNX graph: tokens [L, D] (all segments, no
  // padding) -> [L + registers (unless dropped), out_dim]; params: the `parameters`
  // [1, P], needed with featurewise nets. edges: [L, L, edge_embed_dim] over the
  // tokens (zeros for pairs without edge features), needed with edge_embed_dim.
  ox::Value to_onnx(ox::Graph& g, const ox::Value& tokens, const ox::Value& params = {}, const ox::Value& edges = {});
  // featurewise_nets' `layer: encoder`: one net per layer on that layer's input
  // (every token, registers included), as salt's Transformer.featurewise.
  void add_featurewise(const FeaturewiseOptions& options, int64_t num_parameters);

  int64_t out_dim() const { return options_.out_dim().value_or(options_.embed_dim()); }
  const TransformerOptions& options() const { return options_; }

  torch::nn::ModuleList layers{nullptr};
  torch::nn::Linear out_proj{nullptr};
  double out_proj_input_scale = 1.0;  // muP's MuReadout: 1 / width multiplier (set with the base shapes)
  Norm out_norm{nullptr};
  torch::Tensor registers, register_mask;
  torch::nn::ModuleList featurewise{nullptr};

 private:
  TransformerOptions options_;
  std::vector<EncoderLayer> typed_layers_;
  std::vector<Featurewise> featurewise_;
  PackedSequence forward_edges(PackedSequence out, const torch::Tensor& edges, const std::string& edge_segment);
};
TORCH_MODULE(Transformer);

}  // namespace salt::models
