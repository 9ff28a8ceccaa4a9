#include "models/model_factory.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <functional>
#include <set>

#include "core/errors.h"
#include "config/validate.h"
#include "config/yaml_load.h"
#include "models/layers/edge_features.h"
#include "models/registry.h"

namespace salt::models {
namespace {

// salt.models.SaltModel's arguments: components, built by category below.
struct SaltModelConfig {
  std::vector<YAML::Node> init_nets;  // read by init_net_binding()
  std::optional<std::vector<YAML::Node>> edge_init_nets;
  config::ComponentNode tasks;
  std::optional<config::ComponentNode> encoder, pool_net, mask_decoder;
  std::optional<std::vector<YAML::Node>> featurewise_nets;  // read by featurewise_binding()
  YAML::Node merge_dict;                                    // {merged: [inputs]}, in the file's order
};

const config::Binding<SaltModelConfig>& salt_model_binding() {
  using namespace config;
  using C = SaltModelConfig;
  static const Binding<C> b = [&] {
    Binding<C> m{C{}};
    m.required("init_nets", SALT_FIELD(init_nets), "One init net per input type, in concatenation order.",
               t_list(init_net_binding().type()))
        .required("tasks", SALT_FIELD(tasks), "torch.nn.ModuleList of tasks.", t_component("task_list"))
        .arg("encoder", SALT_FIELD(encoder), "Encoder over constituents (null: deep sets).",
             t_optional(t_component("encoder")))
        .arg("pool_net", SALT_FIELD(pool_net), "Pooling to the global object (null: no pooling).",
             t_optional(t_component("pooling")))
        .arg("edge_init_nets", SALT_FIELD(edge_init_nets),
             "GN2XE: one init net embedding data.edge_constructors' features of its input_name (no global "
             "variables attached) to the encoder's edge_embed_dim.",
             t_optional(t_list(init_net_binding().type())))
        .arg("mask_decoder", SALT_FIELD(mask_decoder),
             "MaskFormer decoder: object queries with classes and masks over the constituents (needs data.mf_config).",
             t_optional(t_component("mask_decoder")))
        .custom(field_null("merge_dict", t_optional(t_dict(t_list(t_str()))),
                           "{merged: [input, ...]}: concatenate constituent types into one input that tasks name."),
                [](C& c, const YAML::Node& n) { c.merge_dict = n; })
        .arg("featurewise_nets", SALT_FIELD(featurewise_nets),
             "FiLM networks of data.variables.parameters scaling/shifting a layer's features: [{layer: "
             "input|encoder|global, dense_config_scale, dense_config_bias, apply_norm}].",
             t_optional(t_list(featurewise_binding().type())));
    return m;
  }();
  return b;
}

struct ModuleListConfig {
  std::vector<config::ComponentNode> modules;
};

const config::Binding<ModuleListConfig>& task_list_binding() {
  static const auto b = config::Binding<ModuleListConfig>({}).required(
      "modules", SALT_FIELD(modules), "The tasks.", config::t_list(config::t_component("task")));
  return b;
}

// Both are built by build_model itself (they need the whole model's context).
const bool kModelFactoryRegistered =
    config::register_component({"salt.models.SaltModel", "model", salt_model_binding().type(),
                                "Init nets -> encoder -> pooling -> tasks.", config::Support::kFull, "",
                                {"salt.models.saltmodel.SaltModel"}}) &&
    config::register_component({"torch.nn.ModuleList", "task_list", task_list_binding().type(), "The list of tasks.",
                                config::Support::kFull, "", {"torch.nn.modules.container.ModuleList"}});

std::string item(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// featurewise_nets, every entry in list order as salt builds them. As in salt, a
// later `input` or `global` entry replaces an earlier one (which still drew its
// initial weights), while every `encoder` entry appends a net per layer and the
// layers apply the first entry's.
struct FeaturewiseSet {
  std::vector<FeaturewiseOptions> entries;
  std::optional<FeaturewiseOptions> input, encoder, global;  // the ones applied
  size_t input_index = 0, encoder_index = 0, global_index = 0;
  int64_t num_parameters = 0;
};

FeaturewiseSet read_featurewise(const SaltModelConfig& m, const ModelContext& ctx, const std::string& key) {
  FeaturewiseSet set;
  if (!m.featurewise_nets || m.featurewise_nets->empty()) return set;
  auto p = ctx.variables.find("parameters");
  if (p == ctx.variables.end() || p->second.empty())
    throw UsageError(key + ": featurewise nets need parameters (data.variables.parameters)");
  set.num_parameters = static_cast<int64_t>(p->second.size());
  for (size_t i = 0; i < m.featurewise_nets->size(); ++i) {
    auto o = featurewise_binding().read((*m.featurewise_nets)[i]);
    if (!o.dense_config_scale() && !o.dense_config_bias())
      throw UsageError(item(key, i) + ": give dense_config_scale, dense_config_bias or both");
    if (o.layer() == "input") set.input = o, set.input_index = i;
    else if (o.layer() == "encoder") { if (!set.encoder) set.encoder = o, set.encoder_index = i; }
    else set.global = o, set.global_index = i;
    const auto& scale = o.dense_config_scale();
    const auto& bias = o.dense_config_bias();
    if (scale && bias && scale->output_size() != bias->output_size())
      throw UsageError(item(key, i) + ": dense_config_scale and dense_config_bias need the same output_size");
    set.entries.push_back(o);
  }
  return set;
}

// The features a featurewise net transforms (its nets' output_size).
int64_t input_features(const FeaturewiseOptions& o, int64_t num_parameters) {
  const auto& d = o.dense_config_scale() ? *o.dense_config_scale() : *o.dense_config_bias();
  return d.output_size().value_or(num_parameters);
}

// The input name of the edge init net, if any (without the `_edge_features_` prefix).
std::optional<std::string> edge_input(const SaltModelConfig& m) {
  if (!m.edge_init_nets || m.edge_init_nets->empty()) return std::nullopt;
  std::string input = init_net_binding().read(config::copy_tree(m.edge_init_nets->front())).input_name();
  const std::string prefix = config::edge_input_name("");
  if (input.rfind(prefix, 0) == 0) input = input.substr(prefix.size());
  return input;
}

// The config indices of init_nets in the order salt's SaltModel holds them: with an
// edge init net, salt sorts the nets reading its input first (a stable sort), which
// sets their module names (init_nets.<i>) and the encoder's token order.
std::vector<size_t> init_net_order(const SaltModelConfig& m) {
  std::vector<size_t> order(m.init_nets.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (const auto edge = edge_input(m)) {
    auto reads_edge_input = [&](size_t i) { return init_net_binding().read(config::copy_tree(m.init_nets[i])).input_name() == *edge; };
    std::stable_partition(order.begin(), order.end(), reads_edge_input);
  }
  return order;
}

// merge_dict: members must be constituent types with init nets, each merged once;
// afterwards tasks see the merged names instead of the members (bc.constituents).
std::vector<std::pair<std::string, std::vector<std::string>>> read_merge_dict(const YAML::Node& node, BuildContext& bc,
                                                                              const ModelContext& ctx,
                                                                              const std::string& key) {
  std::vector<std::pair<std::string, std::vector<std::string>>> merges;
  if (!node || !node.IsMap()) return merges;
  std::set<std::string> used;
  for (const auto& kv : node) {
    const std::string name = kv.first.Scalar();
    std::vector<std::string> members;
    for (const auto& m : kv.second) members.push_back(m.Scalar());
    if (members.empty()) throw UsageError(key + "." + name + ": list the inputs to merge");
    if (ctx.variables.count(name) || bc.constituents.count(name))
      throw UsageError(key + "." + name + ": the merged name must not be an input of data.variables");
    for (const auto& m : members) {
      if (!bc.constituents.count(m))
        throw UsageError(key + "." + name + ": '" + m + "' is not a constituent type with an init net");
      if (!used.insert(m).second) throw UsageError(key + "." + name + ": '" + m + "' is merged twice");
    }
    merges.emplace_back(name, members);
  }
  for (const auto& m : used) bc.constituents.erase(m);
  for (const auto& [name, _] : merges) bc.constituents.insert(name);
  return merges;
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

// salt's edge_init_nets and data.edge_constructors: the net reads
// `_edge_features_<input>` (salt's cli prefixes the name and sets attach_global
// false), which the wrapper computes from the raw inputs.
struct EdgeParts {
  InitNet net{nullptr};
  std::optional<EdgeConstructor> constructor;
};

EdgeParts build_edges(const SaltModelConfig& m, const Transformer& encoder, const ModelContext& ctx, const std::string& p) {
  const int64_t edge_dim = encoder ? encoder->options().edge_embed_dim() : 0;
  const auto key = p + ".edge_init_nets";
  if (!m.edge_init_nets || m.edge_init_nets->empty()) {
    if (edge_dim > 0)
      throw UsageError(p + ".encoder.init_args.edge_embed_dim: " + std::to_string(edge_dim) +
                       " needs edge_init_nets (and data.edge_constructors)");
    return {};
  }
  if (m.edge_init_nets->size() > 1) throw UsageError(key + ": at most one edge init net is supported (as in salt)");
  auto node = config::copy_tree(m.edge_init_nets->front());
  const std::string input = *edge_input(m);
  const config::EdgeConstructorConfig* constructor = nullptr;
  for (const auto& c : ctx.edge_constructors)
    if (c.input_name == input) constructor = &c;
  if (!constructor)
    throw UsageError(key + "[0].input_name: no data.edge_constructors entry computes edge features of '" + input + "'");
  if (edge_dim <= 0) throw UsageError(key + ": the encoder needs edge_embed_dim > 0 to use edge features");
  node["input_name"] = config::edge_input_name(input);
  node["attach_global"] = false;
  ModelContext edge_ctx = ctx;
  edge_ctx.variables[config::edge_input_name(input)] = constructor->edge_features;
  BuildContext bc;
  bc.model = &edge_ctx;
  EdgeParts parts{build_init_net(node, bc.at(key + "[0]")), EdgeConstructor(*constructor, ctx.variables.at(input))};
  if (parts.net->output_size() != edge_dim)
    throw UsageError(key + "[0].dense_config.output_size: " + std::to_string(parts.net->output_size()) +
                     " must equal the encoder's edge_embed_dim " + std::to_string(edge_dim));
  return parts;
}

// salt's modules draw their initial weights from torch's CPU generator in the order
// jsonargparse builds them: the tasks (list order), the encoder, the mask decoder and
// the pooling, then SaltModel.__init__'s featurewise nets (list order), the init nets
// (edge input first, init_net_order) and the edge init net (build_edges). salt-cpp
// needs the encoder's and the pooling's sizes to build the tasks, so build_model
// builds in that order first, then puts the generator back where it found it and
// builds each block again in salt's order, with the sizes the first pass found: the
// same seed then gives salt's initial weights, and leaves the generator where salt's
// leaves it for the batch order (docs/migrating.md, "Trained by salt, trained by
// salt-cpp"). Each block draws what salt's draws: layer by layer, in salt's order.
class SaltOrder {
 public:
  enum Rank { kTasks, kEncoder, kMaskDecoder, kPool, kFeaturewise, kInitNets };

  SaltOrder() : start_(state()) {}
  // Builds a block now (the sizes of the later ones may depend on it) and keeps the
  // build for salt's order.
  void build(Rank rank, std::function<void()> block) {
    block();
    blocks_.push_back({rank, std::move(block)});
  }
  // The generator back to where build_model found it, and every block built again,
  // salt's order (blocks of one rank keep theirs).
  void rebuild_in_salts_order() {
    set_state(start_);
    std::stable_sort(blocks_.begin(), blocks_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& block : blocks_) block.second();
  }

 private:
  static at::Tensor state() {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    return gen.get_state();
  }
  static void set_state(const at::Tensor& s) {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(s);
  }
  at::Tensor start_;
  std::vector<std::pair<Rank, std::function<void()>>> blocks_;
};

}  // namespace

SaltWrapper build_model(const YAML::Node& raw, const ModelContext& ctx, const std::string& path) {
  // Configs from config::resolve are valid already; YAML from elsewhere (tests,
  // benchmarks, scripts) gets the same checks, defaults and merge keys here.
  const auto node = config::Codec<config::ComponentNode>::decode(
      config::validate_component(config::copy_tree(raw), "model", path));
  const auto m = salt_model_binding().read(node.init_args);
  const auto p = path + ".init_args";
  BuildContext bc;
  bc.model = &ctx;

  if (m.init_nets.empty()) throw UsageError(p + ".init_nets: expected a non-empty list of init nets");
  SaltOrder order;
  const auto fw = read_featurewise(m, ctx, p + ".featurewise_nets");
  const auto net_order = init_net_order(m);
  std::vector<InitNet> init_nets(m.init_nets.size(), InitNet{nullptr});
  for (size_t k = 0; k < net_order.size(); ++k) {
    const size_t i = net_order[k];
    order.build(SaltOrder::kInitNets, [&, k, i, here = bc.at(item(p + ".init_nets", i))] {
      init_nets[k] = build_init_net(m.init_nets[i], here, fw.input.has_value());
    });
    const auto& net = init_nets[k];
    if (fw.input && input_features(*fw.input, fw.num_parameters) != net->net->input_size())
      throw UsageError(p + ".featurewise_nets[" + std::to_string(fw.input_index) + "]: output_size " +
                       std::to_string(input_features(*fw.input, fw.num_parameters)) + " must equal the " +
                       std::to_string(net->net->input_size()) + " input features of init net '" + net->input_name() + "'");
    if (net->input_name() != ctx.global_object) bc.constituents.insert(net->input_name());
  }
  const auto merges = read_merge_dict(m.merge_dict, bc, ctx, p + ".merge_dict");
  const int64_t embed = init_nets.front()->output_size();

  Transformer encoder{nullptr};
  bc.constituent_dim = embed;
  if (m.encoder) {
    order.build(SaltOrder::kEncoder, [&, here = bc.at(p + ".encoder")] { encoder = build_component<Transformer>(*m.encoder, here); });
    if (encoder->options().embed_dim() != embed)
      throw UsageError(p + ".encoder.init_args.embed_dim: " + std::to_string(encoder->options().embed_dim()) +
                       " does not match the init nets' output_size " + std::to_string(embed));
    bc.constituent_dim = encoder->out_dim();
  }
  auto fw_key = [&](size_t i) { return p + ".featurewise_nets[" + std::to_string(i) + "]"; };
  auto check_size = [&](const FeaturewiseOptions& o, size_t i, int64_t features, const char* what) {
    if (input_features(o, fw.num_parameters) != features)
      throw UsageError(fw_key(i) + ": output_size " + std::to_string(input_features(o, fw.num_parameters)) +
                       " must equal the " + std::to_string(features) + " features of " + what);
  };
  if (fw.encoder) {
    if (!encoder) throw UsageError(fw_key(fw.encoder_index) + ": layer 'encoder' needs an encoder");
    check_size(*fw.encoder, fw.encoder_index, encoder->options().embed_dim(), "the encoder layers");
  }
  if (fw.global) check_size(*fw.global, fw.global_index, bc.constituent_dim, "the encoder output");
  // salt's SaltModel.init_featurewise: every entry in list order; an input entry
  // builds one net per init net (in the config's order), attached below.
  std::vector<Featurewise> input_fw(m.init_nets.size(), Featurewise{nullptr});
  Featurewise global_fw{nullptr};
  if (!fw.entries.empty())
    order.build(SaltOrder::kFeaturewise, [&] {
      for (const auto& o : fw.entries) {
        if (o.layer() == "input")
          for (auto& f : input_fw) f = Featurewise(o, fw.num_parameters);
        else if (o.layer() == "encoder")
          encoder->add_featurewise(o, fw.num_parameters);
        else
          global_fw = Featurewise(o, fw.num_parameters);
      }
    });
  MaskDecoder decoder{nullptr};
  if (m.mask_decoder) {
    order.build(SaltOrder::kMaskDecoder, [&, here = bc.at(p + ".mask_decoder")] {
      decoder = build_component<MaskDecoder>(*m.mask_decoder, here);
    });
    bc.objects_dim = decoder->options().embed_dim;
  }
  PoolNet pool{nullptr};
  if (m.pool_net)
    order.build(SaltOrder::kPool,
                [&, here = bc.at(p + ".pool_net")] { pool = build_component<PoolNet>(*m.pool_net, here); });

  // salt appends un-pooled "global" inputs to the pooled vector.
  bc.global_dim = pool ? pool->output_dim(bc.constituent_dim) : bc.constituent_dim;
  if (auto g = ctx.variables.find("global"); g != ctx.variables.end())
    bc.global_dim += static_cast<int64_t>(g->second.size());

  const auto tp = p + ".tasks.init_args.modules";
  const auto modules = task_list_binding().read(m.tasks.init_args).modules;
  std::vector<std::shared_ptr<TaskImpl>> tasks(modules.size());
  for (size_t i = 0; i < modules.size(); ++i)
    order.build(SaltOrder::kTasks, [&, i, here = bc.at(item(tp, i))] {
      tasks[i] = build_component<std::shared_ptr<TaskImpl>>(modules[i], here);
    });
  order.rebuild_in_salts_order();
  for (size_t k = 0; k < net_order.size(); ++k)
    if (input_fw[net_order[k]]) init_nets[k]->attach_featurewise(input_fw[net_order[k]]);
  auto edges = build_edges(m, encoder, ctx, p);  // draws right after the init nets, as salt's

  SaltModel model(ctx.global_object, std::move(init_nets), encoder, pool, std::move(tasks), global_fw, decoder,
                  edges.net);
  model->set_merge_dict(merges);
  SaltWrapper wrapper(model, build_norm(ctx), ctx.loss_mode, ctx.name);
  if (edges.constructor) wrapper->set_edge_constructor(std::move(*edges.constructor));
  return wrapper;
}

}  // namespace salt::models
