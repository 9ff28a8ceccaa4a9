#include "models/transformer.h"

#include "core/errors.h"

namespace salt::models {

EncoderLayerImpl::EncoderLayerImpl(int64_t embed_dim, const AttentionOptions& attn_opts, const GLUOptions& dense_opts,
                                   const ResidualOptions& res)
    : torch::nn::Module("EncoderLayer") {
  attn = register_module("attn", std::make_shared<NormResidualImpl<Attention>>(Attention(attn_opts), embed_dim, res));
  dense = register_module("dense", std::make_shared<NormResidualImpl<GLU>>(GLU(dense_opts), embed_dim, res));
}

torch::Tensor EncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& pad_mask) {
  return dense->forward(attn->forward(x, pad_mask));
}

TransformerImpl::TransformerImpl(const TransformerOptions& options) : torch::nn::Module("Transformer"), options_(options) {
  const int64_t d = options.embed_dim();
  if (options.num_registers() < 1)
    throw UsageError(
        "Transformer: num_registers must be at least 1 (jets without constituents would give NaN attention)");
  if (options.num_layers() < 0) throw UsageError("Transformer: num_layers must not be negative");
  if (!is_valid_attn_type(options.attn_type()))
    throw UsageError("Transformer: unknown attn_type '" + options.attn_type() +
                     "' (choose from torch-math, torch-flash, torch-meff, flash-varlen)");

  auto attn_opts = options.attn_kwargs();
  attn_opts.embed_dim(d).attn_type(options.attn_type());
  auto dense_opts = options.dense_kwargs();
  dense_opts.embed_dim(d);
  auto res = ResidualOptions().norm(options.norm()).norm_type(options.norm_type()).ls_init(options.ls_init()).drop_path(
      options.drop_path());

  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.num_layers(); ++i) {
    typed_layers_.emplace_back(d, attn_opts, dense_opts, res);
    layers->push_back(typed_layers_.back());
  }
  if (options.out_dim())
    out_proj = register_module("out_proj", torch::nn::Linear(d, *options.out_dim()));
  if (options.do_final_norm()) out_norm = register_module("out_norm", Norm(options.norm(), out_dim()));
  registers = register_parameter("registers", torch::randn({options.num_registers(), d}) * 1e-4);
  register_mask = register_buffer("register_mask", torch::zeros({options.num_registers()}, torch::kBool));
}

void TransformerImpl::set_backend(const std::string& attn_type) {
  for (auto& layer : typed_layers_) layer->attn->fn->set_backend(attn_type);
  options_.attn_type(attn_type);
}

Sequence TransformerImpl::forward(const Sequence& in) {
  const int64_t b = in.x.size(0), r = options_.num_registers();
  Sequence out;
  out.segments = in.segments;
  out.x = torch::cat({in.x, registers.unsqueeze(0).expand({b, r, registers.size(1)})}, 1);
  out.segments.push_back({kRegisters, register_mask.unsqueeze(0).expand({b, r})});
  const auto mask = out.mask();

  for (auto& layer : typed_layers_) out.x = layer->forward(out.x, mask);
  if (out_proj) out.x = out_proj->forward(out.x);
  if (out_norm) out.x = out_norm->forward(out.x);

  if (options_.drop_registers()) {
    out.x = out.x.narrow(1, 0, out.x.size(1) - r);
    out.segments.pop_back();
  }
  return out;
}

}  // namespace salt::models
