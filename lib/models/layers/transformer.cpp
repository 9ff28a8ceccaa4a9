#include "models/layers/transformer.h"

#include "models/registry.h"

#include "core/errors.h"

#include "export/layers.h"

namespace salt::models {
namespace {

const config::Binding<TransformerOptions>& transformer_binding() {
  using namespace config;
  static const Binding<TransformerOptions> b = [&] {
    Binding<TransformerOptions> t(TransformerOptions(0, 0));
    t.required("num_layers", SALT_MEMBER(num_layers), "Number of encoder layers.", at_least(t_int(), 0))
        .required("embed_dim", SALT_MEMBER(embed_dim), "Token embedding size.", t_size())
        .arg("out_dim", SALT_MEMBER(out_dim), "Output projection size (null: embed_dim).",
             t_optional(t_size()))
        .arg("norm", SALT_MEMBER(norm), "Normalisation layer: LayerNorm (no affine parameters, as in salt) or RMSNorm.",
             t_choice({"LayerNorm", "RMSNorm"}))
        .arg("attn_type", SALT_MEMBER(attn_type), "Attention kernel; changes speed, never the result.",
             t_choice({"torch-math", "torch-flash", "torch-meff", "flash-varlen"}))
        .arg("do_final_norm", SALT_MEMBER(do_final_norm), "LayerNorm after the output projection.")
        .arg("num_registers", SALT_MEMBER(num_registers), "Learnable register tokens appended to every sequence (at least 1).",
             t_size())
        .arg("drop_registers", SALT_MEMBER(drop_registers), "Drop the registers from the encoder output.")
        .arg("ls_init", SALT_MEMBER(ls_init), "LayerScale init value (null: no LayerScale).")
        .arg("drop_path", SALT_MEMBER(drop_path), "Stochastic depth rate (a residual branch dropped per jet).",
             t_probability())
        .unbound(field("depth", t_int(), 1, "Layer depth (LayerScale/drop-path scaling)."))
        .ignored("salt-cpp's layers do not use it")
        .optional_struct("dense_kwargs", SALT_MEMBER(dense_kwargs), glu_binding(), "Arguments of each layer's GLU.")
        .optional_struct("attn_kwargs", SALT_MEMBER(attn_kwargs), attention_binding(), "Arguments of each layer's attention.")
        .arg("norm_type", SALT_MEMBER(norm_type),
             "Residual norms: pre (x + f(norm(x))), post (norm(x + f(x))) or hybrid (GN3: q/k/v RMS norms, "
             "one norm before the dense blocks).",
             t_choice({"pre", "post", "hybrid"}))
        .arg("num_dense", SALT_MEMBER(num_dense), "Dense (GLU) blocks per layer.", t_size())
        .arg("edge_embed_dim", SALT_MEMBER(edge_embed_dim),
             "Edge feature size (GN2XE; 0: none): EdgeAttention layers reading the edge_init_nets' output.",
             at_least(t_int(), 0))
        .arg("update_edges", SALT_MEMBER(update_edges), "Update the edge features in every layer (needs edge_embed_dim).")
        .arg("mup", SALT_MEMBER(mup),
             "muP parametrisation (model.mup_config): muP attention and dense layers, out_proj a MuReadout.");
    return t;
  }();
  return b;
}

Transformer build_transformer(const YAML::Node& init_args, const BuildContext&) {
  return Transformer(transformer_binding().read(init_args));
}

const bool kTransformerRegistered =
    register_model_component<Transformer>({"salt.models.Transformer", "encoder", transformer_binding().type(),
                                           "Pre-norm transformer encoder with registers.", config::Support::kFull, "",
                                           {"salt.models.transformer.Transformer"}},
                                          build_transformer) &&
    register_model_component<Transformer>({"salt.models.TransformerV2", "encoder", transformer_binding().type(),
                                           "Same as salt.models.Transformer (salt's alias).", config::Support::kFull, "",
                                           {"salt.models.transformer_v2.TransformerV2"}},
                                          build_transformer);

}  // namespace

EncoderLayerImpl::EncoderLayerImpl(const EncoderLayerOptions& o) : torch::nn::Module("EncoderLayer") {
  const int64_t d = o.embed_dim();
  if (o.num_dense() < 1) throw UsageError("Transformer: num_dense must be at least 1");
  auto res = o.residual();
  auto attn_opts = o.attn();
  res.norm_type(o.norm_type());
  if (o.norm_type() == "hybrid") {
    attn_opts.do_qk_norm(true).do_v_norm(true);
    res.norm_type(o.depth() == 0 ? "pre" : "none");
    if (o.depth() != 0) norm = register_module("norm", Norm(res.norm(), d));
  }
  if (o.edge_embed_dim() > 0) {
    edge_prenorm = register_module("edge_prenorm", Norm(res.norm(), o.edge_embed_dim()));
    if (o.update_edges()) edge_postnorm = register_module("edge_postnorm", Norm(res.norm(), o.edge_embed_dim()));
    update_edges_ = o.update_edges();
    auto edge_opts = EdgeAttentionOptions(attn_opts, o.edge_embed_dim()).update_edges(o.update_edges());
    edge_attn = register_module("attn", std::make_shared<NormResidualImpl<EdgeAttention>>(EdgeAttention(edge_opts), d, res));
  } else {
    attn = register_module("attn", std::make_shared<NormResidualImpl<Attention>>(Attention(attn_opts), d, res));
  }
  auto block = [&] { return std::make_shared<NormResidualImpl<GLU>>(GLU(o.dense()), d, res); };
  if (o.num_dense() == 1) {
    dense_blocks.push_back(register_module("dense", block()));
  } else {
    auto list = register_module("dense", torch::nn::ModuleList());
    for (int64_t i = 0; i < o.num_dense(); ++i) {
      dense_blocks.push_back(block());
      list->push_back(dense_blocks.back());
    }
  }
}

torch::Tensor EncoderLayerImpl::dense_forward(torch::Tensor x, const TokenLayout* layout) {
  if (norm) x = norm->forward(x);
  for (auto& block : dense_blocks) {
    if (!layout) {
      x = block->forward(x);
      continue;
    }
    x = block->forward_tokens(x, layout->jet, layout->batch, layout->kernels.norm_cast_kernel,
                              [&](const torch::Tensor& t) { return block->fn->forward(t, layout); });
  }
  return x;
}

torch::Tensor EncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& pad_mask) {
  if (!attn) throw UsageError("Transformer: a layer with edge features needs the edges");
  return dense_forward(attn->forward(x, pad_mask), nullptr);
}

std::pair<torch::Tensor, torch::Tensor> EncoderLayerImpl::forward_edges(const torch::Tensor& x, const torch::Tensor& edges,
                                                                        const torch::Tensor& pad_mask) {
  if (!edge_attn) throw UsageError("Transformer: edge features given to a layer without edge_embed_dim");
  torch::Tensor edges_out;
  auto y = edge_attn->forward_call(x, [&](const torch::Tensor& t) {
    auto [out, e] = edge_attn->fn->forward(t, edges, pad_mask);
    edges_out = e;
    return out;
  });
  if (update_edges_) edges_out = edges_out + edge_postnorm->forward(edges_out);
  return {dense_forward(y, nullptr), edges_out};
}

torch::Tensor EncoderLayerImpl::forward_packed(const torch::Tensor& x, const TokenLayout& layout) {
  if (!attn) throw UsageError("Transformer: a layer with edge features needs the edges");
  auto y = attn->forward_tokens(x, layout.jet, layout.batch, layout.kernels.norm_cast_kernel,
                                [&](const torch::Tensor& t) { return attn->fn->forward_packed(t, layout); });
  return dense_forward(y, &layout);
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

  if (options.update_edges() && options.edge_embed_dim() <= 0)
    throw UsageError("Transformer: update_edges needs edge_embed_dim > 0");
  if (options.mup() && !options.out_dim())
    throw UsageError("Transformer: mup needs out_dim (out_proj is the last layer of the muP part of the model)");
  auto attn_opts = options.attn_kwargs();
  attn_opts.embed_dim(d).attn_type(options.attn_type());
  auto dense_opts = options.dense_kwargs();
  dense_opts.embed_dim(d);
  if (options.mup()) {
    attn_opts.mup(true);
    dense_opts.mup(true);
  }
  auto res = ResidualOptions().norm(options.norm()).ls_init(options.ls_init()).drop_path(options.drop_path());
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.num_layers(); ++i) {
    auto layer_opts = EncoderLayerOptions(d).depth(i).num_dense(options.num_dense()).norm_type(options.norm_type());
    layer_opts.edge_embed_dim(options.edge_embed_dim()).update_edges(options.update_edges());
    typed_layers_.emplace_back(layer_opts.residual(res).attn(attn_opts).dense(dense_opts));
    layers->push_back(typed_layers_.back());
    if (i == 0) check_layers_fit(*typed_layers_.front(), options.num_layers(), "Transformer: num_layers");
    poll_stop();
  }
  if (options.out_dim()) {
    out_proj = register_module("out_proj", torch::nn::Linear(d, *options.out_dim()));
    if (options.mup()) {  // salt's MuReadout, zeroed
      torch::NoGradGuard no_grad;
      out_proj->weight.zero_();
      out_proj->bias.zero_();
    }
  }
  if (options.do_final_norm()) out_norm = register_module("out_norm", Norm(options.norm(), out_dim()));
  // salt's torch.normal(zeros, std=1e-4): the same bits as randn * 1e-4 only for 16
  // or more values (torch's vectorised normal); below, the per-value path rounds
  // each draw once, in double.
  registers = register_parameter("registers", at::normal(torch::zeros({options.num_registers(), d}), 1e-4));
  register_mask = register_buffer("register_mask", torch::zeros({options.num_registers()}, torch::kBool));
}

void TransformerImpl::set_backend(const std::string& attn_type) {
  for (auto& layer : typed_layers_)
    if (layer->attn) layer->attn->fn->set_backend(attn_type);  // EdgeAttention has one kernel
  options_.attn_type(attn_type);
}

Sequence TransformerImpl::forward(const Sequence& in) { return forward_packed(PackedSequence::pack(in)).unpack(); }

void TransformerImpl::add_featurewise(const FeaturewiseOptions& options, int64_t num_parameters) {
  if (!featurewise) featurewise = register_module("featurewise", torch::nn::ModuleList());
  for (size_t i = 0; i < typed_layers_.size(); ++i) {
    featurewise_.emplace_back(options, num_parameters);
    featurewise->push_back(featurewise_.back());
  }
}

PackedSequence TransformerImpl::forward_packed(const PackedSequence& in, const torch::Tensor& params,
                                               const torch::Tensor& edges, const std::string& edge_segment) {
  const int64_t b = in.batch, r = options_.num_registers();
  PackedSequence out = in;
  // Registers: jet-major rows, always valid.
  auto reg_mask = register_mask.unsqueeze(0).expand({b, r});
  auto reg_index = TokenIndex::all_valid(b, r, reg_mask.device());
  out.append(kRegisters, reg_mask, reg_index, registers.unsqueeze(0).expand({b, r, registers.size(1)}).reshape({b * r, -1}));
  if (options_.edge_embed_dim() > 0) return forward_edges(std::move(out), edges, edge_segment);
  // The layers run on rows sorted jet by jet (one permutation for the whole
  // encoder, not one per attention call): every per-token layer is indifferent to
  // the row order, and attention kernels want each jet's tokens contiguous.
  // With dropout, a CPU step lays the tokens out as salt pads them, so that its
  // dropout draws (attention weights, GLU) are salt's.
  const bool salt_draws = is_training() && out.x.device().is_cpu() && !out.row_valid().defined() &&
                          (options_.attn_kwargs().dropout() > 0 || options_.dense_kwargs().dropout() > 0);
  const auto packed_layout = salt_draws ? TokenLayout::padded_as_salt(out) : TokenLayout::of(out);
  const auto layout = packed_layout.sorted_view();

  auto x = packed_layout.sort_rows(out.x);
  const auto rows_params = featurewise_.empty() ? torch::Tensor() : params.index_select(0, layout.jet);
  for (size_t i = 0; i < typed_layers_.size(); ++i) {
    if (!featurewise_.empty()) x = featurewise_[i]->forward(rows_params, x);
    x = typed_layers_[i]->forward_packed(x, layout);
  }
  if (out_proj) x = out_proj->forward(out_proj_input_scale == 1.0 ? x : x * out_proj_input_scale);
  if (out_norm) x = out_norm->forward(x);
  out.x = packed_layout.unsort_rows(x);

  if (options_.drop_registers()) out.pop_back();
  return out;
}

PackedSequence TransformerImpl::forward_edges(PackedSequence out, const torch::Tensor& edges,
                                              const std::string& edge_segment) {
  if (!edges.defined()) throw UsageError("Transformer: edge_embed_dim is set but the model has no edge_init_nets");
  if (!featurewise_.empty()) throw UsageError("Transformer: featurewise nets with edge features are not supported");
  // Padded layout (segment after segment, registers last); the edges of
  // edge_segment at its place, zeros for every other pair.
  auto seq = out.unpack();
  const auto mask = seq.mask();
  int64_t offset = 0;
  const Segment* seg = nullptr;
  for (const auto& s : seq.segments) {
    if (s.name == edge_segment) {
      seg = &s;
      break;
    }
    offset += s.mask.size(1);
  }
  if (!seg) throw UsageError("Transformer: the edge features' input '" + edge_segment + "' is not in the sequence");
  const int64_t total = mask.size(1), after = total - offset - seg->mask.size(1);
  auto e = torch::constant_pad_nd(edges, {0, 0, offset, after, offset, after}, 0);
  auto x = seq.x;
  for (auto& layer : typed_layers_) std::tie(x, e) = layer->forward_edges(x, e, mask);
  seq.x = x;
  // Packed again as the step asked (its kernels; bucketed rows for CPU bf16 steps).
  ForwardContext repack;
  repack.kernels = out.kernels;
  auto packed = PackedSequence::pack(seq, repack);
  x = packed.x;
  if (out_proj) x = out_proj->forward(out_proj_input_scale == 1.0 ? x : x * out_proj_input_scale);
  if (out_norm) x = out_norm->forward(x);
  packed.x = x;
  if (options_.drop_registers()) packed.pop_back();
  return packed;
}


ox::Value EncoderLayerImpl::to_onnx(ox::Graph& g, const ox::Value& x) {
  if (!attn) throw UsageError("to_onnx: an encoder layer with edge features needs the edges");
  return dense_to_onnx(g, attn->to_onnx(g, x, [&](const ox::Value& t) { return attn->fn->to_onnx(g, t); }));
}

ox::Value EncoderLayerImpl::dense_to_onnx(ox::Graph& g, ox::Value x) {
  if (norm) x = norm->to_onnx(g, x);
  for (auto& block : dense_blocks) x = block->to_onnx(g, x, [&](const ox::Value& t) { return block->fn->to_onnx(g, t); });
  return x;
}

std::pair<ox::Value, ox::Value> EncoderLayerImpl::to_onnx_edges(ox::Graph& g, const ox::Value& x, const ox::Value& edges) {
  if (!edge_attn) throw UsageError("to_onnx: edge features given to an encoder layer without edge_embed_dim");
  ox::Value edges_out;
  auto y = edge_attn->to_onnx(g, x, [&](const ox::Value& t) {
    auto [out, e] = edge_attn->fn->to_onnx(g, t, edges);
    edges_out = e;
    return out;
  });
  if (update_edges_) edges_out = g.op("Add", {edges_out, edge_postnorm->to_onnx(g, edges_out)});
  return {dense_to_onnx(g, y), edges_out};
}

ox::Value TransformerImpl::to_onnx(ox::Graph& g, const ox::Value& tokens, const ox::Value& params, const ox::Value& edges) {
  if (!featurewise_.empty() && params.empty())
    throw UsageError("to_onnx: the encoder's featurewise nets need the `parameters` inputs");
  const bool with_edges = options_.edge_embed_dim() > 0;
  if (with_edges && edges.empty()) throw UsageError("to_onnx: the encoder's edge_embed_dim is set but no edges are given");
  auto x = g.op("Concat", {tokens, g.constant(registers, "registers")}, {{"axis", int64_t{0}}});
  // The registers' edges are zeros, as forward's padding gives them.
  const int64_t r = options_.num_registers();
  auto e = with_edges ? g.op("Pad", {edges, g.ints({0, 0, 0, r, r, 0})}) : ox::Value{};
  for (size_t i = 0; i < typed_layers_.size(); ++i) {
    if (!featurewise_.empty()) x = featurewise_[i]->to_onnx(g, params, x);
    if (with_edges) std::tie(x, e) = typed_layers_[i]->to_onnx_edges(g, x, e);
    else x = typed_layers_[i]->to_onnx(g, x);
  }
  if (out_proj && out_proj_input_scale != 1.0) x = g.op("Mul", {x, g.scalar(float(out_proj_input_scale))});
  if (out_proj) x = ox::linear(g, x, out_proj);
  if (out_norm) x = out_norm->to_onnx(g, x);
  if (options_.drop_registers())
    x = g.op("Slice", {x, g.ints({0}), g.ints({-options_.num_registers()}), g.ints({0})});
  return x;
}

}  // namespace salt::models
