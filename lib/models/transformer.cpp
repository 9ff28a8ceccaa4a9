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

torch::Tensor EncoderLayerImpl::forward_packed(const torch::Tensor& x, const TokenLayout& layout) {
  auto y = attn->forward_tokens(x, layout.jet, layout.batch,
                                [&](const torch::Tensor& t) { return attn->fn->forward_packed(t, layout); });
  return dense->forward_tokens(y, layout.jet, layout.batch, [&](const torch::Tensor& t) { return dense->fn->forward(t); });
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

Sequence TransformerImpl::forward(const Sequence& in) { return forward_packed(PackedSequence::pack(in)).unpack(); }

PackedSequence TransformerImpl::forward_packed(const PackedSequence& in) {
  const int64_t b = in.batch, r = options_.num_registers();
  PackedSequence out = in;
  // Registers: jet-major rows, always valid.
  auto reg_mask = register_mask.unsqueeze(0).expand({b, r});
  auto reg_index = TokenIndex::from_mask(reg_mask);
  out.append(kRegisters, reg_mask, reg_index, registers.unsqueeze(0).expand({b, r, registers.size(1)}).reshape({b * r, -1}));
  const auto layout = TokenLayout::of(out);

  auto x = out.x;
  for (auto& layer : typed_layers_) x = layer->forward_packed(x, layout);
  if (out_proj) x = out_proj->forward(x);
  if (out_norm) x = out_norm->forward(x);
  out.x = x;

  if (options_.drop_registers()) out.pop_back();
  return out;
}

}  // namespace salt::models
