#include "models/transformer.h"

#include "models/registry.h"

#include "core/errors.h"

namespace salt::models {
namespace {

const config::Binding<TransformerOptions>& transformer_binding() {
  using namespace config;
  const char* edges = "edge features are not available in salt-cpp";
  static const Binding<TransformerOptions> b = [&] {
    Binding<TransformerOptions> t(TransformerOptions(0, 0));
    t.required("num_layers", SALT_MEMBER(num_layers), "Number of encoder layers.")
        .required("embed_dim", SALT_MEMBER(embed_dim), "Token embedding size.")
        .arg("out_dim", SALT_MEMBER(out_dim), "Output projection size (null: embed_dim).")
        .arg("norm", SALT_MEMBER(norm), "Normalisation layer (no affine parameters, as in salt).", t_choice({"LayerNorm"}))
        .arg("attn_type", SALT_MEMBER(attn_type), "Attention kernel; changes speed, never the result.",
             t_choice({"torch-math", "torch-flash", "torch-meff", "flash-varlen"}))
        .arg("do_final_norm", SALT_MEMBER(do_final_norm), "LayerNorm after the output projection.")
        .arg("num_registers", SALT_MEMBER(num_registers), "Learnable register tokens appended to every sequence (at least 1).")
        .arg("drop_registers", SALT_MEMBER(drop_registers), "Drop the registers from the encoder output.")
        .unbound(field_null("ls_init", t_optional(t_float()), "LayerScale init value."))
        .unsupported("LayerScale is not available in salt-cpp yet")
        .unbound(field("drop_path", t_float(), 0.0, "Stochastic depth rate."))
        .unsupported("stochastic depth is not available in salt-cpp yet")
        .unbound(field("depth", t_int(), 1, "Layer depth (LayerScale/drop-path scaling)."))
        .ignored("salt-cpp's layers do not use it")
        .optional_struct("dense_kwargs", SALT_MEMBER(dense_kwargs), glu_binding(), "Arguments of each layer's GLU.")
        .optional_struct("attn_kwargs", SALT_MEMBER(attn_kwargs), attention_binding(), "Arguments of each layer's attention.")
        .arg("norm_type", SALT_MEMBER(norm_type), "Pre-norm (x + f(norm(x))) or post-norm residuals.",
             t_choice({"pre", "post"}))
        .unbound(field("num_dense", t_int(), 1, "Dense blocks per layer.")).unsupported("salt-cpp has one GLU per layer")
        .unbound(field("edge_embed_dim", t_int(), 0, "Edge features.")).unsupported(edges)
        .unbound(field("update_edges", t_bool(), false, "Update edge features.")).unsupported(edges)
        .unbound(field("mup", t_bool(), false, "muP scaling.")).unsupported("muP is not available in salt-cpp");
    return t;
  }();
  return b;
}

Transformer build_transformer(const YAML::Node& init_args, const BuildContext&) {
  return Transformer(transformer_binding().read(init_args));
}

const bool kRegistered =
    register_model_component<Transformer>({"salt.models.Transformer", "encoder", transformer_binding().type(),
                                           "Pre-norm transformer encoder with registers.", config::Support::kFull, "",
                                           {"salt.models.transformer.Transformer"}},
                                          build_transformer) &&
    register_model_component<Transformer>({"salt.models.TransformerV2", "encoder", transformer_binding().type(),
                                           "Same as salt.models.Transformer (salt's alias).", config::Support::kFull, "",
                                           {"salt.models.transformer_v2.TransformerV2"}},
                                          build_transformer);

}  // namespace

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
