#include "models/maskformer/mask_decoder.h"

#include <limits>

#include "core/errors.h"
#include "models/maskformer/object_targets.h"
#include "models/packing/host_read.h"
#include "models/tasks/regression_task.h"
#include "models/model_context.h"
#include "models/registry.h"

namespace salt::models {

torch::Tensor mask_logits(const torch::Tensor& x, const torch::Tensor& q, Dense& mask_net, const torch::Tensor& pad_mask) {
  auto masks = torch::matmul(mask_net->forward(q), x.transpose(1, 2));  // einsum bqe,ble->bql
  if (pad_mask.defined()) {  // salt's torch.finfo(dtype).min, also under mixed precision
    double lowest = std::numeric_limits<float>::lowest();
    switch (masks.scalar_type()) {
      case torch::kDouble: lowest = std::numeric_limits<double>::lowest(); break;
      case torch::kHalf: lowest = -65504.0; break;
      case torch::kBFloat16: lowest = -3.3895313892515355e38; break;
      default: break;
    }
    masks = masks.masked_fill(pad_mask.unsqueeze(1), lowest);
  }
  return masks;
}

namespace {

// torch.nn.LayerNorm with its affine parameters, in their dtype: under CPU
// autocast (bf16) LibTorch 1.13 does not cast layer_norm's input itself.
torch::Tensor layer_norm(torch::nn::LayerNorm& norm, const torch::Tensor& x) {
  return norm->forward(x.to(norm->weight.scalar_type()));
}

}  // namespace

MaskDecoderLayerImpl::MaskDecoderLayerImpl(const MaskDecoderLayerOptions& o, Dense mask_net)
    : torch::nn::Module("MaskDecoderLayer"), options_(o), mask_net_(std::move(mask_net)) {
  const auto attention = [&] { return Attention(AttentionOptions(o.embed_dim()).num_heads(o.n_heads())); };
  if (o.embed_dim() % o.n_heads() != 0)
    throw UsageError("MaskDecoder: embed_dim " + std::to_string(o.embed_dim()) + " is not divisible by n_heads " +
                     std::to_string(o.n_heads()));
  q_ca = register_module("q_ca", attention());
  q_sa = register_module("q_sa", attention());
  q_dense = register_module("q_dense", GLU(GLUOptions(o.embed_dim())));
  if (o.bidirectional_ca()) {
    kv_ca = register_module("kv_ca", attention());
    kv_dense = register_module("kv_dense", GLU(GLUOptions(o.embed_dim())));
  }
  const auto ln = torch::nn::LayerNormOptions({o.embed_dim()});
  norm1 = register_module("norm1", torch::nn::LayerNorm(ln));
  norm2 = register_module("norm2", torch::nn::LayerNorm(ln));
}

std::pair<torch::Tensor, torch::Tensor> MaskDecoderLayerImpl::forward(torch::Tensor q, torch::Tensor kv,
                                                                      const torch::Tensor& kv_mask) {
  torch::Tensor attn_mask;
  if (options_.mask_attention()) {
    // Each query attends only to the constituents its current mask holds (p > 0.9);
    // a query holding none attends to all. No gradient flows through the mask.
    torch::NoGradGuard no_grad;
    auto held = mask_logits(kv, q, mask_net_, kv_mask).sigmoid() > 0.9;
    attn_mask = held | held.logical_not().all(-1, /*keepdim=*/true).expand_as(held);
  }
  q = q + q_ca->forward_cross(q, kv, kv_mask, attn_mask);
  q = q + q_sa->forward(q);
  q = q + q_dense->forward(q);
  if (options_.bidirectional_ca()) {
    // salt passes the transposed mask here after `mask | ~all(mask)`, which is all
    // true whatever the mask: the constituents attend to every query.
    kv = kv + kv_ca->forward_cross(kv, q);
    kv = kv + kv_dense->forward(kv);
  }
  return {layer_norm(norm1, q), layer_norm(norm2, kv)};
}

std::vector<std::pair<std::string, std::string>> MaskDecoderImpl::state_aliases() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < layers->size(); ++i) {
    for (const auto& p : mask_net->named_parameters(true))
      out.emplace_back("layers." + std::to_string(i) + ".mask_net." + p.key(), "mask_net." + p.key());
    for (const auto& b : mask_net->named_buffers(true))
      out.emplace_back("layers." + std::to_string(i) + ".mask_net." + b.key(), "mask_net." + b.key());
  }
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> MaskDecoderImpl::salt_only_state() const {
  if (options_.loss.num_classes <= 0) return {};  // a decoder built without its loss (tests)
  return {{"mask_loss.empty_weight", class_weight_vector(options_.loss)}};
}

MaskDecoderImpl::MaskDecoderImpl(MaskDecoderOptions o, Dense class_net_in, Dense mask_net_in)
    : torch::nn::Module("MaskDecoder"), options_(std::move(o)) {
  const int64_t e = options_.embed_dim;
  inital_q = register_parameter("inital_q", torch::empty({options_.num_objects, e}));
  {
    torch::NoGradGuard no_grad;
    inital_q.normal_();
  }
  class_net = register_module("class_net", class_net_in);
  mask_net = register_module("mask_net", mask_net_in);
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < options_.num_layers; ++i) {
    layers->push_back(MaskDecoderLayer(options_.layer, mask_net));
    if (i == 0) check_layers_fit(*layers[0], options_.num_layers, "MaskDecoder: num_layers");
    poll_stop();
  }
  norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({e})));
  norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({e})));
}

ObjectPreds MaskDecoderImpl::predict(const torch::Tensor& q, const torch::Tensor& x, const torch::Tensor& pad_mask) {
  ObjectPreds p;
  p.embed = q;
  p.class_logits = class_net->forward(q);
  if (p.class_logits.size(-1) == 1) {
    auto s = p.class_logits.sigmoid();
    p.class_probs = torch::cat({1 - s, s}, -1);
  } else {
    p.class_probs = p.class_logits.softmax(-1);
  }
  p.masks = mask_logits(x, q, mask_net, pad_mask);
  return p;
}

namespace {

double weight_or(const std::map<std::string, double>& w, const std::string& key, double fallback) {
  auto it = w.find(key);
  return it == w.end() ? fallback : it->second;
}

MatchWeights match_weights(const std::map<std::string, double>& w) {
  MatchWeights m;
  m.object_class_ce = weight_or(w, "object_class_ce", 0);
  m.mask_dice = weight_or(w, "mask_dice", 0);
  m.mask_ce = weight_or(w, "mask_ce", 0);
  m.mask_focal = weight_or(w, "mask_focal", 0);
  m.regression = weight_or(w, "regression", 0);
  return m;
}

// Each object task's scaled targets [B, M, R] in slot order (NaN on empty slots).
std::map<std::string, torch::Tensor> task_targets(const std::vector<std::shared_ptr<TaskImpl>>& tasks,
                                                  const ObjectTargets& t) {
  std::map<std::string, torch::Tensor> out;
  const Labels labels{{"objects", t.labels}};
  for (const auto& task : tasks)
    out[task->name()] = std::dynamic_pointer_cast<RegressionTaskImpl>(task)->scaled_targets(labels);
  return out;
}

// salt's matcher reads the object task named "regression" (if any) for its cost.
torch::Tensor maybe(const std::map<std::string, torch::Tensor>& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? torch::Tensor() : it->second.detach().nan_to_num(0.0);
}

torch::Tensor match(const ObjectPreds& p, const ObjectTargets& t, const std::map<std::string, torch::Tensor>& targets,
                    const MatchWeights& w) {
  torch::NoGradGuard no_grad;
  MatchInputs in;
  in.class_probs = p.class_probs.detach();
  in.mask_logits = p.masks.detach();
  in.target_class = t.object_class;
  in.target_masks = t.masks;
  in.regression = maybe(p.tasks, "regression");
  in.target_regression = maybe(targets, "regression");
  if (!in.regression.defined() || !in.target_regression.defined()) in.regression = in.target_regression = torch::Tensor();
  return hungarian_match(in, w).to(p.class_probs.device());
}

// The object predictions (but the embeddings, as salt) in target order.
void permute(ObjectPreds& p, const torch::Tensor& assignment) {
  p.class_logits = in_target_order(p.class_logits, assignment);
  p.class_probs = in_target_order(p.class_probs, assignment);
  p.masks = in_target_order(p.masks, assignment);
  for (auto& [_, v] : p.tasks) v = in_target_order(v, assignment);
}

bool wants(const std::vector<std::string>& losses, const std::string& name) {
  return std::find(losses.begin(), losses.end(), name) != losses.end();
}

}  // namespace

torch::Tensor MaskDecoderImpl::match_to_targets(ObjectPreds& preds, const Labels& labels, const TensorMap& pad_masks,
                                               const std::vector<std::shared_ptr<TaskImpl>>& object_tasks) const {
  const auto targets = object_targets(labels, pad_masks, options_.mf, options_.num_objects);
  const auto w = match_weights(options_.matcher_weights.empty() ? options_.loss.loss_weights : options_.matcher_weights);
  auto assignment = match(preds, targets, task_targets(object_tasks, targets), w);
  permute(preds, assignment);
  return assignment;
}

MaskDecoderOutput MaskDecoderImpl::forward(const torch::Tensor& x_in, const torch::Tensor& pad_mask_in,
                                           const std::vector<std::shared_ptr<TaskImpl>>& object_tasks,
                                           const Labels* labels, const TensorMap& pad_masks,
                                           std::map<std::string, torch::Tensor>* losses) {
  const int64_t b = x_in.size(0), l = x_in.size(1);
  auto q = layer_norm(norm1, inital_q.unsqueeze(0).expand({b, -1, -1}));
  // salt appends one zero, never padded, constituent (for its ONNX export); it is a
  // key every query may attend to, so it is part of the model.
  auto x = layer_norm(norm2, x_in);
  x = torch::cat({x, torch::zeros({b, 1, x.size(2)}, x.options())}, 1);
  auto pad = pad_mask_in.defined() ? pad_mask_in.to(torch::kBool)
                                   : torch::zeros({b, l}, torch::dtype(torch::kBool).device(x_in.device()));
  pad = torch::cat({pad, torch::zeros({b, 1}, pad.options())}, 1);

  MaskDecoderOutput out;
  auto run_tasks = [&](ObjectPreds& p) {
    for (const auto& task : object_tasks) p.tasks[task->name()] = task->net->forward(p.embed);
  };
  for (auto& layer : *layers) {
    if (options_.aux_loss) out.intermediate.push_back(predict(q, x, pad));
    std::tie(q, x) = layer->as<MaskDecoderLayer>()->forward(q, x, pad);
  }
  out.objects = predict(q, x, pad);
  out.x = x.narrow(1, 0, l);
  out.objects.masks = out.objects.masks.narrow(2, 0, l);
  run_tasks(out.objects);
  for (auto& p : out.intermediate) {
    p.masks = p.masks.narrow(2, 0, l);
    run_tasks(p);
  }
  if (!labels || !losses) return out;

  const auto targets = object_targets(*labels, pad_masks, options_.mf, options_.num_objects);
  const auto scaled = task_targets(object_tasks, targets);
  const auto w = match_weights(options_.matcher_weights.empty() ? options_.loss.loss_weights : options_.matcher_weights);
  const auto& which = options_.losses;
  auto add = [&](const std::map<std::string, torch::Tensor>& terms) {
    for (const auto& [name, value] : terms) {
      const bool is_class = name.rfind("object_class", 0) == 0;
      if (wants(which, is_class ? "labels" : "masks")) (*losses)[name] = value;
    }
  };
  for (size_t i = 0; i < out.intermediate.size(); ++i) {
    auto& p = out.intermediate[i];
    permute(p, match(p, targets, scaled, w));
    add(maskformer_losses(p.class_logits, p.masks, targets.object_class, targets.masks, options_.loss,
                          "_layer" + std::to_string(i)));
  }
  out.assignment = match(out.objects, targets, scaled, w);
  permute(out.objects, out.assignment);
  add(maskformer_losses(out.objects.class_logits, out.objects.masks, targets.object_class, targets.masks, options_.loss));

  // Regression on the matched real objects (salt: class != null), mean over the
  // finite targets, times the task weight and loss_weights.regression (default 1).
  const auto real = targets.object_class != options_.loss.num_classes;
  for (const auto& task : object_tasks) {
    const auto& pred = out.objects.tasks.at(task->name());
    const auto target = scaled.at(task->name()).to(pred.scalar_type());
    const auto valid = real.unsqueeze(-1).expand_as(pred) & torch::isfinite(target);
    torch::Tensor loss;
    if (host_read<int64_t>(valid.sum()) == 0) {
      loss = pred.index({valid}).sum();  // 0 over no values, in the graph (never 0 * a non-finite output)
    } else {
      loss = task->loss->elementwise(pred.index({valid}), target.index({valid})).mean() * task->weight();
    }
    (*losses)[task->name()] = loss * weight_or(options_.loss.loss_weights, "regression", 1.0);
  }
  return out;
}

}  // namespace salt::models

// ---- config: salt.models.maskformer.MaskDecoder ----

namespace salt::models {
namespace {

constexpr int64_t kMaxObjects = 256;

struct LossConfig {
  int64_t num_classes = 0;
  std::map<std::string, double> loss_weights;
  std::optional<std::map<std::string, double>> matcher_weights;
  double null_class_weight = 0.5;
  std::optional<std::vector<double>> class_weights;
  std::optional<std::vector<std::string>> losses;
};

struct MaskDecoderConfig {
  int64_t embed_dim = 0, num_layers = 0, num_objects = 0;
  MaskDecoderLayerOptions md{0};
  config::ComponentNode class_net, mask_net;
  LossConfig loss_config;
  bool aux_loss = false;
  std::optional<std::string> constituent_name;
  std::optional<std::vector<double>> class_weights;
};

const config::Binding<MaskDecoderLayerOptions>& md_binding() {
  using namespace config;
  static const Binding<MaskDecoderLayerOptions> b = [] {
    Binding<MaskDecoderLayerOptions> m{MaskDecoderLayerOptions()};
    m.required("n_heads", SALT_MEMBER(n_heads), "Attention heads of each decoder layer.", at_least(t_int(), 1))
        .required("mask_attention", SALT_MEMBER(mask_attention),
                  "Queries attend only to the constituents their current mask holds (p > 0.9).")
        .required("bidirectional_ca", SALT_MEMBER(bidirectional_ca), "Constituents also attend to the queries.");
    return m;
  }();
  return b;
}

const config::Binding<LossConfig>& loss_config_binding() {
  using namespace config;
  static const Binding<LossConfig> b = [] {
    Binding<LossConfig> l{LossConfig{}};
    l.required("num_classes", SALT_FIELD(num_classes), "Object classes without the null class.", at_least(t_int(), 1))
        .required("loss_weights", SALT_FIELD(loss_weights),
                  "{object_class_ce, mask_ce, mask_dice, mask_focal, regression}: weight of each term (0 or absent: off).")
        .arg("matcher_weights", SALT_FIELD(matcher_weights), "Weights of the matching cost (null: loss_weights).")
        .arg("null_class_weight", SALT_FIELD(null_class_weight), "Weight of the null class in the class loss.")
        .arg("class_weights", SALT_FIELD(class_weights), "Class-loss weights (num_classes or num_classes + 1).")
        .arg("losses", SALT_FIELD(losses), "Which losses: [labels, masks] (null: both).");
    return l;
  }();
  return b;
}

const config::Binding<MaskDecoderConfig>& mask_decoder_binding() {
  using namespace config;
  using C = MaskDecoderConfig;
  static const Binding<C> b = [] {
    Binding<C> m{C{}};
    m.required("embed_dim", SALT_FIELD(embed_dim), "Query and constituent embedding size (the encoder's out_dim).",
               at_least(t_int(), 1))
        .required("num_layers", SALT_FIELD(num_layers), "Decoder layers.", at_least(t_int(), 1))
        .required_struct("md_config", SALT_FIELD(md), md_binding(), "{n_heads, mask_attention, bidirectional_ca}.")
        .required("class_net", SALT_FIELD(class_net), "salt.models.Dense: query -> class logits (num_classes + 1).",
                  t_component("dense"))
        .required("mask_net", SALT_FIELD(mask_net), "salt.models.Dense: query -> mask token (embed_dim).",
                  t_component("dense"))
        .required("num_objects", SALT_FIELD(num_objects), "Object queries per jet.", at_least(t_int(), 1))
        .required_struct("loss_config", SALT_FIELD(loss_config), loss_config_binding(), "MaskFormerLoss arguments.")
        .arg("aux_loss", SALT_FIELD(aux_loss), "Also match and supervise the queries before each layer.")
        .arg("constituent_name", SALT_FIELD(constituent_name), "The input the masks cover (null: the only one).")
        .arg("class_weights", SALT_FIELD(class_weights),
             "Class-loss weights (null: object_classes' weights, as salt's CLI fills them).");
    return m;
  }();
  return b;
}

Dense read_dense(const config::ComponentNode& node, int64_t embed, const std::string& key) {
  auto o = dense_binding().read(node.init_args);
  if (o.input_size() <= 0) o.input_size(embed);
  if (o.input_size() != embed)
    throw UsageError(key + ".init_args.input_size: " + std::to_string(o.input_size()) + " must be the embed_dim " +
                     std::to_string(embed));
  return Dense(o);
}

std::string pick_constituent(const MaskDecoderConfig& c, const BuildContext& ctx, const config::MaskformerConfig& mf) {
  std::string name = c.constituent_name.value_or("");
  if (name.empty()) {
    if (ctx.constituents.size() != 1)
      throw UsageError(ctx.arg("constituent_name") + ": several constituent inputs; name the one the masks cover");
    name = *ctx.constituents.begin();
  }
  if (!ctx.constituents.count(name))
    throw UsageError(ctx.arg("constituent_name") + ": '" + name + "' is not a constituent input with an init net");
  if (name != mf.constituent.name)
    throw UsageError(ctx.arg("constituent_name") + ": the masks cover '" + name + "' but data.mf_config.constituent.name is '" +
                     mf.constituent.name + "'");
  return name;
}

MaskDecoder build_mask_decoder(const YAML::Node& init_args, const BuildContext& ctx) {
  const auto c = mask_decoder_binding().read(init_args);
  if (!ctx.model->mf_config)
    throw UsageError(ctx.path + ": the mask decoder needs data.mf_config (the objects and how constituents link to them)");
  const auto& mf = *ctx.model->mf_config;
  if (c.embed_dim != ctx.constituent_dim)
    throw UsageError(ctx.arg("embed_dim") + ": " + std::to_string(c.embed_dim) + " does not match the " +
                     std::to_string(ctx.constituent_dim) + " features of the encoded constituents");
  if (c.num_objects > kMaxObjects)
    throw UsageError(ctx.arg("num_objects") + ": " + std::to_string(c.num_objects) + " queries exceed salt-cpp's bound of " +
                     std::to_string(kMaxObjects) + " (each jet solves a num_objects x num_objects assignment)");
  if (c.loss_config.num_classes != mf.object.null_index())
    throw UsageError(ctx.arg("loss_config.num_classes") + ": " + std::to_string(c.loss_config.num_classes) +
                     " but data.mf_config.object.object_classes has " + std::to_string(mf.object.null_index()) +
                     " classes besides null");
  for (const auto* weights : {&c.loss_config.loss_weights, c.loss_config.matcher_weights ? &*c.loss_config.matcher_weights : nullptr})
    if (weights)
      for (const auto& [k, _] : *weights)
        if (k != "object_class_ce" && k != "mask_ce" && k != "mask_dice" && k != "mask_focal" && k != "regression")
          throw UsageError(ctx.arg("loss_config") + ": unknown loss '" + k +
                           "' (object_class_ce, mask_ce, mask_dice, mask_focal, regression)");

  MaskDecoderOptions o;
  o.embed_dim = c.embed_dim;
  o.num_layers = c.num_layers;
  o.num_objects = c.num_objects;
  o.layer = c.md;
  o.layer.embed_dim(c.embed_dim);
  o.loss.num_classes = c.loss_config.num_classes;
  o.loss.loss_weights = c.loss_config.loss_weights;
  o.loss.null_class_weight = c.loss_config.null_class_weight;
  o.loss.class_weights = c.class_weights ? c.class_weights : c.loss_config.class_weights;
  if (!o.loss.class_weights) o.loss.class_weights = mf.object.object_weights();
  try {
    class_weight_vector(o.loss);
  } catch (const std::invalid_argument& e) {
    throw UsageError(ctx.arg("class_weights") + ": " + e.what());
  }
  o.matcher_weights = c.loss_config.matcher_weights.value_or(std::map<std::string, double>{});
  if (c.loss_config.losses) o.losses = *c.loss_config.losses;
  o.aux_loss = c.aux_loss;
  o.constituent_name = pick_constituent(c, ctx, mf);
  o.mf = mf;

  auto class_net = read_dense(c.class_net, c.embed_dim, ctx.arg("class_net"));
  const int64_t n = o.loss.num_classes;
  if (class_net->output_size() != n + 1 && !(n == 1 && class_net->output_size() == 1))
    throw UsageError(ctx.arg("class_net.init_args.output_size") + ": " + std::to_string(class_net->output_size()) +
                     " must be num_classes + 1 = " + std::to_string(n + 1) + " (the null class last)");
  auto mask_net = read_dense(c.mask_net, c.embed_dim, ctx.arg("mask_net"));
  if (mask_net->output_size() != c.embed_dim)
    throw UsageError(ctx.arg("mask_net.init_args.output_size") + ": " + std::to_string(mask_net->output_size()) +
                     " must be the embed_dim " + std::to_string(c.embed_dim) + " (mask tokens meet the constituents)");
  return MaskDecoder(std::move(o), class_net, mask_net);
}

const bool kMaskDecoderRegistered = register_model_component<MaskDecoder>(
    {"salt.models.maskformer.MaskDecoder", "mask_decoder", mask_decoder_binding().type(),
     "MaskFormer: object queries, their classes and masks over the constituents.", config::Support::kFull, "",
     {"salt.models.MaskDecoder"}},
    build_mask_decoder);

}  // namespace
}  // namespace salt::models
