#include "models/model_factory.h"

#include <set>

#include "core/errors.h"
#include "models/classification_task.h"
#include "config/yaml_load.h"
#include "models/class_names.h"
#include "models/regression_task.h"
#include "models/vertexing_task.h"
#include "models/yaml_args.h"

namespace salt::models {

using namespace yaml;

namespace {

std::string at(const std::string& path, const std::string& key) { return path + "." + key; }
std::string idx(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// Accept salt's public path and the module-qualified one ("salt.models.task.X").
bool class_is(const std::string& class_path, const std::string& name, std::initializer_list<const char*> modules) {
  if (class_path == "salt.models." + name) return true;
  for (const char* m : modules)
    if (class_path == std::string("salt.models.") + m + "." + name) return true;
  return false;
}

// {class_path, init_args} -> (class_path, init_args map).
std::pair<std::string, YAML::Node> class_and_args(const YAML::Node& node, const std::string& path) {
  auto map = as_map(node, path);
  check_keys(map, path, {"class_path", "init_args", "dict_kwargs"});
  require_unset(map, "dict_kwargs", path);
  return {get_string(map, "class_path", path), as_map(map["init_args"], at(path, "init_args"))};
}

const std::vector<std::string>& vars_of(const ModelContext& ctx, const std::string& input, const std::string& path) {
  auto it = ctx.variables.find(input);
  if (it == ctx.variables.end()) throw UsageError(path + ": input '" + input + "' has no entry in data.variables");
  return it->second;
}

DenseOptions read_dense(const YAML::Node& node, const std::string& path, std::optional<int64_t> derived_input_size) {
  auto m = as_map(node, path);
  check_keys(m, path, {"input_size", "output_size", "hidden_layers", "hidden_dim_scale", "activation",
                       "final_activation", "dropout", "bias", "context_size", "mup"});
  require_unset(m, "mup", path);
  std::optional<int64_t> input = get_opt_int(m, "input_size", path);
  if (!input) input = derived_input_size;
  if (!input) throw UsageError(at(path, "input_size") + ": required key missing");
  DenseOptions d(*input);
  d.output_size(get_opt_int(m, "output_size", path))
      .hidden_layers(get_opt_ints(m, "hidden_layers", path))
      .hidden_dim_scale(get_int(m, "hidden_dim_scale", path, 2))
      .activation(get_string(m, "activation", path, "ReLU"))
      .final_activation(get_opt_string(m, "final_activation", path))
      .dropout(get_double(m, "dropout", path, 0.0))
      .bias(get_bool(m, "bias", path, true))
      .context_size(get_int(m, "context_size", path, 0));
  return d;
}

InitNet read_init_net(const YAML::Node& node, const std::string& path, const ModelContext& ctx) {
  auto m = as_map(node, path);
  // variables/global_object appear in salt's resolved config.yaml; the context's win.
  check_keys(m, path, {"input_name", "dense_config", "variables", "global_object", "attach_global", "pos_enc", "mup",
                       "featurewise"});
  for (const char* k : {"pos_enc", "mup", "featurewise"}) require_unset(m, k, path);
  const auto input = get_string(m, "input_name", path);
  const bool attach_global = get_bool(m, "attach_global", path, true);
  int64_t size = static_cast<int64_t>(vars_of(ctx, input, at(path, "input_name")).size());
  if (attach_global) {
    size += static_cast<int64_t>(vars_of(ctx, ctx.global_object, at(path, "attach_global")).size());
    if (auto p = ctx.variables.find("parameters"); p != ctx.variables.end()) size += static_cast<int64_t>(p->second.size());
  }
  auto dense = read_dense(m["dense_config"], at(path, "dense_config"), size);
  return InitNet(InitNetOptions(input, ctx.global_object, dense).attach_global(attach_global));
}

Transformer read_encoder(const YAML::Node& node, const std::string& path) {
  auto [cls, a] = class_and_args(node, path);
  if (!class_is(cls, "Transformer", {"transformer"}) && !class_is(cls, "TransformerV2", {"transformer_v2"}))
    throw UsageError(at(path, "class_path") + ": unknown encoder '" + cls +
                     "' (salt-cpp has salt.models.Transformer and salt.models.TransformerV2)");
  const auto p = at(path, "init_args");
  check_keys(a, p, {"num_layers", "depth", "embed_dim", "out_dim", "norm", "attn_type", "do_final_norm", "num_registers",
                    "drop_registers", "edge_embed_dim", "update_edges", "mup", "ls_init", "drop_path", "dense_kwargs",
                    "attn_kwargs", "norm_type", "num_dense"});
  for (const char* k : {"edge_embed_dim", "update_edges", "mup"}) require_unset(a, k, p);
  require_value(a, "num_dense", p, 1);

  const auto dp = at(p, "dense_kwargs");
  auto dk = as_map(a["dense_kwargs"], dp);
  check_keys(dk, dp, {"hidden_dim", "activation", "dropout", "bias", "gated", "mup"});
  require_unset(dk, "mup", dp);
  auto glu = GLUOptions()
                 .hidden_dim(get_opt_int(dk, "hidden_dim", dp))
                 .activation(get_string(dk, "activation", dp, "SiLU"))
                 .dropout(get_double(dk, "dropout", dp, 0.0))
                 .bias(get_bool(dk, "bias", dp, true))
                 .gated(get_bool(dk, "gated", dp, false));

  const auto ap = at(p, "attn_kwargs");
  auto ak = as_map(a["attn_kwargs"], ap);
  check_keys(ak, ap, {"num_heads", "attn_type", "dropout", "bias", "do_qk_norm", "do_v_norm", "mup"});
  require_unset(ak, "mup", ap);
  auto attn = AttentionOptions(0)
                  .num_heads(get_int(ak, "num_heads", ap, 1))
                  .dropout(get_double(ak, "dropout", ap, 0.0))
                  .bias(get_bool(ak, "bias", ap, true))
                  .do_qk_norm(get_bool(ak, "do_qk_norm", ap, false))
                  .do_v_norm(get_bool(ak, "do_v_norm", ap, false));

  const auto norm_type = get_string(a, "norm_type", p, "pre");
  if (norm_type == "hybrid") throw UsageError(at(p, "norm_type") + ": 'hybrid' is not supported by salt-cpp yet");
  auto opts = TransformerOptions(get_int(a, "num_layers", p), get_int(a, "embed_dim", p))
                  .out_dim(get_opt_int(a, "out_dim", p))
                  .norm(get_string(a, "norm", p, "LayerNorm"))
                  .attn_type(get_string(a, "attn_type", p, "torch-math"))
                  .do_final_norm(get_bool(a, "do_final_norm", p, true))
                  .num_registers(get_int(a, "num_registers", p, 1))
                  .drop_registers(get_bool(a, "drop_registers", p, false))
                  .norm_type(norm_type)
                  .ls_init(get_opt_double(a, "ls_init", p))
                  .drop_path(get_double(a, "drop_path", p, 0.0))
                  .dense_kwargs(glu)
                  .attn_kwargs(attn);
  return Transformer(opts);
}

GlobalAttentionPooling read_pool(const YAML::Node& node, const std::string& path, int64_t derived) {
  auto [cls, a] = class_and_args(node, path);
  if (!class_is(cls, "GlobalAttentionPooling", {"pooling"}))
    throw UsageError(at(path, "class_path") + ": unknown pooling '" + cls +
                     "' (salt-cpp has salt.models.GlobalAttentionPooling)");
  const auto p = at(path, "init_args");
  check_keys(a, p, {"input_size"});
  const auto size = get_int(a, "input_size", p, derived);
  if (size != derived)
    throw UsageError(at(p, "input_size") + ": " + std::to_string(size) + " does not match the embedding size " +
                     std::to_string(derived) + " it pools");
  return GlobalAttentionPooling(size);
}

LossOptions read_loss(const YAML::Node& node, const std::string& path) {
  if (!node || node.IsNull()) throw UsageError(path + ": required key missing");
  std::string cls;
  YAML::Node a(YAML::NodeType::Map);
  if (node.IsScalar()) {
    cls = node.Scalar();  // the short form `loss: torch.nn.CrossEntropyLoss`
  } else {
    std::tie(cls, a) = class_and_args(node, path);
  }
  auto kind = loss_kind_from_class_path(cls);
  if (!kind)
    throw UsageError(path + ": unknown loss '" + cls +
                     "' (salt-cpp has torch.nn.CrossEntropyLoss, BCEWithLogitsLoss, MSELoss, L1Loss, GaussianNLLLoss)");
  const auto p = at(path, "init_args");
  check_keys(a, p, {"weight", "pos_weight", "reduction", "ignore_index", "label_smoothing", "full", "eps",
                    "size_average", "reduce"});
  require_unset(a, "size_average", p);
  require_unset(a, "reduce", p);
  return LossOptions(*kind)
      .weight(get_opt_floats(a, "weight", p))
      .pos_weight(get_opt_floats(a, "pos_weight", p))
      .reduction(get_string(a, "reduction", p, "mean"))
      .ignore_index(get_int(a, "ignore_index", p, -100))
      .label_smoothing(get_double(a, "label_smoothing", p, 0.0))
      .full(get_bool(a, "full", p, false))
      .eps(get_double(a, "eps", p, 1e-6));
}

// The embedding sizes tasks see, for defaults and early shape checks.
struct Dims {
  int64_t global;       // pooled vector (+ "global" inputs)
  int64_t constituent;  // one constituent embedding
};

std::shared_ptr<TaskImpl> read_task(const YAML::Node& node, const std::string& path, const ModelContext& ctx,
                                    const Dims& dims, const std::set<std::string>& constituents) {
  auto [cls, a] = class_and_args(node, path);
  const auto p = at(path, "init_args");
  const bool classification = class_is(cls, "ClassificationTask", {"task"});
  const bool vertexing = class_is(cls, "VertexingTask", {"task"});
  const bool regression = class_is(cls, "RegressionTask", {"task"});
  const bool gaussian = class_is(cls, "GaussianRegressionTask", {"task"});
  if (!classification && !vertexing && !regression && !gaussian)
    throw UsageError(at(path, "class_path") + ": unknown task '" + cls +
                     "' (salt-cpp has salt.models.ClassificationTask, VertexingTask, RegressionTask, "
                     "GaussianRegressionTask)");
  if (classification)
    check_keys(a, p, {"name", "input_name", "dense_config", "loss", "weight", "label", "class_names", "label_map",
                      "sample_weight", "use_class_dict"});
  else if (vertexing)
    check_keys(a, p, {"name", "input_name", "dense_config", "loss", "weight", "label"});
  else
    check_keys(a, p, {"name", "input_name", "dense_config", "loss", "weight", "targets", "scaler",
                      "target_denominators", "norm_params", "custom_output_names", "sample_weight"});
  for (const char* k : {"sample_weight", "scaler"}) require_unset(a, k, p);

  const auto name = get_string(a, "name", p);
  const auto input = get_string(a, "input_name", p);
  const bool jet_level = input == ctx.global_object;
  if (!jet_level && !constituents.count(input))
    throw UsageError(at(p, "input_name") + ": task '" + name + "' reads '" + input +
                     "', which is neither the global object nor an init net input");
  if (vertexing && jet_level) throw UsageError(at(p, "input_name") + ": VertexingTask needs constituents, not '" + input + "'");
  const int64_t expected_input = jet_level ? dims.global : (vertexing ? 2 : 1) * dims.constituent;
  auto dense = read_dense(a["dense_config"], at(p, "dense_config"), expected_input);
  if (dense.input_size() != expected_input)
    throw UsageError(at(p, "dense_config.input_size") + ": " + std::to_string(dense.input_size()) + " does not match the " +
                     std::to_string(expected_input) + " features task '" + name + "' receives");
  if (dense.context_size() != 0 && dense.context_size() != dims.global && !jet_level)
    throw UsageError(at(p, "dense_config.context_size") + ": " + std::to_string(dense.context_size()) +
                     " does not match the pooled vector size " + std::to_string(dims.global));

  auto loss = read_loss(a["loss"], at(p, "loss"));
  TaskOptions task(name, input, dense, loss);
  task.weight(get_double(a, "weight", p, 1.0));

  if (classification) {
    const auto label = get_string(a, "label", p);
    auto names = get_opt_strings(a, "class_names", p);
    if (!names && ctx.class_names) names = ctx.class_names(input, label);
    if (!names) names = default_class_names(label);
    if (!names)
      throw UsageError(at(p, "class_names") + ": task '" + name + "' needs class_names (none known for label '" + label + "')");
    ClassificationOptions c(label);
    c.class_names(*names);
    if (has(a, "label_map")) {
      const auto lp = at(p, "label_map");
      auto lm = as_map(a["label_map"], lp);
      std::map<int64_t, int64_t> mapping;
      for (const auto& kv : lm) {
        try {
          mapping[kv.first.as<int64_t>()] = kv.second.as<int64_t>();
        } catch (const YAML::Exception&) {
          throw UsageError(lp + ": keys and values must be integers");
        }
      }
      c.label_map(mapping);
      if (!get_opt_strings(a, "class_names", p)) throw UsageError(lp + ": specify class_names when using label_map");
    }
    if (get_bool(a, "use_class_dict", p, false) && !loss.weight()) {
      std::optional<std::vector<float>> w;
      if (ctx.class_weights) w = ctx.class_weights(input, label);
      if (!w)
        throw UsageError(at(p, "use_class_dict") + ": no class weights for '" + input + "." + label +
                         "' in data.class_dict");
      loss.weight(*w);
      task.loss(loss);
    }
    return std::make_shared<ClassificationTaskImpl>(task, c);
  }
  if (vertexing) return std::make_shared<VertexingTaskImpl>(task, get_string(a, "label", p));

  RegressionOptions r;
  r.gaussian(gaussian);
  auto targets = get_opt_strings(a, "targets", p);
  if (!targets) throw UsageError(at(p, "targets") + ": required key missing");
  r.targets(*targets);
  r.target_denominators(get_opt_strings(a, "target_denominators", p).value_or(std::vector<std::string>{}));
  r.custom_output_names(get_opt_strings(a, "custom_output_names", p).value_or(std::vector<std::string>{}));
  if (has(a, "norm_params")) {
    const auto np = at(p, "norm_params");
    auto n = as_map(a["norm_params"], np);
    check_keys(n, np, {"mean", "std"});
    r.norm_mean(get_opt_floats(n, "mean", np));
    r.norm_std(get_opt_floats(n, "std", np));
    if (!r.norm_mean() || !r.norm_std()) throw UsageError(np + ": needs both mean and std");
  }
  return std::make_shared<RegressionTaskImpl>(task, r);
}

YAML::Node task_list(const YAML::Node& node, const std::string& path) {
  if (node && node.IsSequence()) return node;
  auto [cls, a] = class_and_args(node, path);
  if (cls != "torch.nn.ModuleList" && cls != "torch.nn.modules.container.ModuleList")
    throw UsageError(at(path, "class_path") + ": expected torch.nn.ModuleList, got '" + cls + "'");
  const auto p = at(path, "init_args");
  check_keys(a, p, {"modules"});
  auto modules = a["modules"];
  if (!modules || !modules.IsSequence()) throw UsageError(at(p, "modules") + ": expected a list of tasks");
  return modules;
}

InputNorm build_norm(const ModelContext& ctx) {
  static const std::set<std::string> no_norm = {"EDGE", "parameters", "objects"};
  std::map<std::string, NormStats> stats;
  for (const auto& [input, vars] : ctx.variables) {
    if (no_norm.count(input) || input.rfind('_', 0) == 0) continue;
    auto it = ctx.norm.find(input);
    if (it == ctx.norm.end()) throw UsageError("data.norm_dict: no normalisation statistics for input '" + input + "'");
    if (it->second.means.size() != vars.size())
      throw UsageError("data.norm_dict: " + std::to_string(it->second.means.size()) + " statistics for '" + input +
                       "', which has " + std::to_string(vars.size()) + " variables");
    stats[input] = it->second;
  }
  return InputNorm(stats);
}

}  // namespace

SaltWrapper build_model(const YAML::Node& raw, const ModelContext& ctx, const std::string& path) {
  // Configs from config::resolve have no merge keys left; YAML from elsewhere (tests,
  // scripts) gets them resolved the same way (explicit keys win).
  const auto node = config::copy_tree(raw);
  auto [cls, a] = class_and_args(node, path);
  if (!class_is(cls, "SaltModel", {"saltmodel"}))
    throw UsageError(at(path, "class_path") + ": unknown model '" + cls + "' (salt-cpp has salt.models.SaltModel)");
  const auto p = at(path, "init_args");
  check_keys(a, p, {"init_nets", "tasks", "encoder", "pool_net", "edge_init_nets", "mask_decoder", "merge_dict",
                    "featurewise_nets"});
  for (const char* k : {"edge_init_nets", "mask_decoder", "merge_dict", "featurewise_nets"}) require_unset(a, k, p);

  const auto ip = at(p, "init_nets");
  const auto nets_node = a["init_nets"];
  if (!nets_node || !nets_node.IsSequence() || nets_node.size() == 0)
    throw UsageError(ip + ": expected a non-empty list of init nets");
  std::vector<InitNet> init_nets;
  std::set<std::string> constituents;
  for (size_t i = 0; i < nets_node.size(); ++i) {
    init_nets.push_back(read_init_net(nets_node[i], idx(ip, i), ctx));
    if (init_nets.back()->input_name() != ctx.global_object) constituents.insert(init_nets.back()->input_name());
  }
  const int64_t embed = init_nets.front()->output_size();

  Transformer encoder{nullptr};
  int64_t constituent_dim = embed;
  if (has(a, "encoder")) {
    encoder = read_encoder(a["encoder"], at(p, "encoder"));
    if (encoder->options().embed_dim() != embed)
      throw UsageError(at(p, "encoder.init_args.embed_dim") + ": " + std::to_string(encoder->options().embed_dim()) +
                       " does not match the init nets' output_size " + std::to_string(embed));
    constituent_dim = encoder->out_dim();
  }
  GlobalAttentionPooling pool{nullptr};
  if (has(a, "pool_net")) pool = read_pool(a["pool_net"], at(p, "pool_net"), constituent_dim);

  Dims dims{constituent_dim, constituent_dim};
  if (auto g = ctx.variables.find("global"); g != ctx.variables.end())
    dims.global += static_cast<int64_t>(g->second.size());

  const auto tp = at(p, "tasks");
  auto modules = task_list(a["tasks"], tp);
  std::vector<std::shared_ptr<TaskImpl>> tasks;
  for (size_t i = 0; i < modules.size(); ++i)
    tasks.push_back(read_task(modules[i], idx(at(tp, "init_args.modules"), i), ctx, dims, constituents));

  SaltModel model(ctx.global_object, std::move(init_nets), encoder, pool, std::move(tasks));
  return SaltWrapper(model, build_norm(ctx), ctx.loss_mode, ctx.name);
}

}  // namespace salt::models
