// The top level of a salt config and its `model` section (the `trainer` and
// `data` sections are in trainer_config.cpp and data_config.cpp), bound to
// RunConfig. Key names, types and defaults follow salt (LightningCLI +
// jsonargparse), so salt's own config files and the config.yaml salt writes into
// its run directories are accepted as they are.
#include <cmath>
#include <regex>

#include "config/run_config.h"
#include "config/schema.h"
#include "config/yaml_util.h"
#include "core/errors.h"

namespace salt::config {
namespace {

void read_whole_number(LrsConfig& lrs, const YAML::Node& node) {
  const auto value = node.as<double>();
  if (value != std::floor(value) || std::abs(value) > 1e15)
    throw UsageError("'model.lrs_config.last_epoch': expected a whole number, got '" + node.Scalar() + "'");
  lrs.last_epoch = static_cast<int64_t>(value);
}

const Binding<LrsConfig>& lrs_binding() {
  static const auto b =
      Binding<LrsConfig>({})
          .required("initial", SALT_FIELD(initial), "Learning rate at the start of the one-cycle schedule.",
                    at_least(t_float(), 0))
          .required("max", SALT_FIELD(max), "Peak learning rate.", at_least(t_float(), 0))
          .required("end", SALT_FIELD(end), "Learning rate at the end.", at_least(t_float(), 0))
          .required("pct_start", SALT_FIELD(pct_start), "Fraction of the steps spent increasing the learning rate.",
                    at_least(t_float(), 0))
          .arg("weight_decay", SALT_FIELD(weight_decay), "AdamW weight decay (applied to all parameters).",
               at_least(t_float(), 0))
          // salt types lrs_config as a mapping of floats, so the config.yaml salt saves
          // holds `last_epoch: -1.0`; salt itself passes int(last_epoch) to OneCycleLR.
          .arg("last_epoch", SALT_FIELD(last_epoch), "OneCycleLR's last_epoch, for resuming past the planned total.",
               t_union({t_int(), t_float()}), read_whole_number);
  return b;
}

const Binding<ModelSection>& model_section_binding() {
  static const auto b =
      Binding<ModelSection>({})
          .required("model", SALT_FIELD(model), "The network: salt.models.SaltModel with its init_args.",
                    t_component("model"))
          .required_struct("lrs_config", SALT_FIELD(lrs), lrs_binding(), "AdamW + OneCycleLR settings.")
          .arg("global_object", SALT_FIELD(global_object), "Linked from data.global_object.")
          .unbound(field_null("norm_config", t_any(), "Filled in from data.norm_dict at fit time."))
          .read_elsewhere("written into config.yaml from the data section")
          .arg("name", SALT_FIELD(name), "Linked from the top-level name.")
          .custom(field_null("mup_config", t_optional(t_dict(t_any())),
                             "muP: {shape_path: DIR, <width>: {apply_to: [init_nets, encoder], parameter_name: "
                             "[output_size, embed_dim], parameter_base: N, parameter_delta: M}}; `salt mup` writes "
                             "DIR/storeshapes from the base and delta proxies, fit reads it."),
                  [](ModelSection& m, const YAML::Node& n) {
                    if (n.IsDefined() && n.IsMap() && n.size() > 0) m.mup_config = read_mup_config(n);
                  })
          .arg("loss_mode", SALT_FIELD(loss_mode),
               "Combine task losses as a weighted sum, or GLS (geometric mean; all task weights must be 1).",
               t_choice({"wsum", "GLS"}))
          .arg("optimizer", SALT_FIELD(optimizer),
               "Optimizer: AdamW, lion (lion_pytorch's Lion) or HybridMuonAdamW (Muon for 2-D weight matrices, "
               "AdamW for biases, norms, embeddings and heads); lr and weight_decay from lrs_config, beta1 cycled "
               "by the one-cycle schedule except for HybridMuonAdamW.",
               t_choice({"AdamW", "lion", "HybridMuonAdamW"}))
          .unbound(field_null("edge_constructors", t_any(), "Linked from data.edge_constructors."))
          .read_elsewhere("salt copies data.edge_constructors here; salt-cpp reads the data section");
  return b;
}

// A pattern list of init_from: each one must be a regular expression (ECMAScript,
// as std::regex reads it), refused here rather than at the first match.
std::vector<std::string> read_patterns(const YAML::Node& n, const std::string& key) {
  auto patterns = Codec<std::vector<std::string>>::decode(n);
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    try {
      std::regex check(patterns[i]);
    } catch (const std::regex_error& e) {
      throw UsageError("'init_from." + key + "." + std::to_string(i) + "': '" + patterns[i] +
                       "' is not a regular expression (" + e.what() + ")");
    }
  }
  return patterns;
}

const Binding<InitFrom>& init_from_binding() {
  const auto patterns = [](const char* key) {
    return [key](InitFrom& f, const YAML::Node& n) {
      const std::string k = key;
      auto& field = k == "include" ? f.include : k == "exclude" ? f.exclude : f.freeze;
      field = read_patterns(n, k);
    };
  };
  static const auto b =
      Binding<InitFrom>({})
          .required("ckpt_path", SALT_FIELD(ckpt_path),
                    "Checkpoint (salt's or salt-cpp's) whose weights the new training starts from.", t_path())
          .arg("include", SALT_FIELD(include),
               "Regular expressions searched in the model's state keys: the tensors taken (empty: all).",
               t_list(t_str()), patterns("include"))
          .arg("exclude", SALT_FIELD(exclude),
               "Regular expressions: of the included tensors, those left at their initial values.", t_list(t_str()),
               patterns("exclude"))
          .arg("freeze", SALT_FIELD(freeze),
               "Regular expressions: the parameters not trained (no gradient, no optimizer state).",
               t_list(t_str()), patterns("freeze"));
  return b;
}

// init_from: a checkpoint path alone, or the mapping; null: no fine-tuning.
void read_init_from(RunConfig& c, const YAML::Node& n) {
  c.init_from.reset();
  if (!n.IsDefined() || n.IsNull()) return;
  if (n.IsScalar()) c.init_from = InitFrom{n.Scalar(), {}, {}, {}};
  else c.init_from = init_from_binding().read(n);
}

// seed_everything: an int, true (seed 0, as Lightning), or false (none: a drawn one).
void read_seed(RunConfig& c, const YAML::Node& n) {
  const auto& text = n.Scalar();
  c.seed.reset();
  c.record_drawn_seed = text != "false";
  if (text != "true" && text != "false") c.seed = n.as<int64_t>();
}

const Binding<RunConfig>& root_binding() {
  static const auto b =
      Binding<RunConfig>({})
          .custom(field("seed_everything", t_union({t_int(), t_bool()}), true,
                        "Seed for every random generator (0 to 4294967295); true is seed 0, as in Lightning; false seeds nothing (a seed of the generator's own)."),
                  read_seed)
          .arg("name", SALT_FIELD(name), "Run name: prefixes output columns (<name>_pb) and names the run directory.")
          .arg("ckpt_path", SALT_FIELD(ckpt_path), "Checkpoint to resume training from, or to test.", t_optional(t_path()))
          .arg("force", SALT_FIELD(force), "Run with uncommitted changes (and do not tag).")
          .arg("tag", SALT_FIELD(tag), "Create an annotated git tag named after the run directory and push it.")
          .unbound(field("compile", t_bool(), false, "torch.compile the model."))
          .ignored("LibTorch C++ has no torch.compile; the model runs eagerly")
          // LightningCLI writes these into every run's config.yaml, null unless given.
          .unbound(field_null("optimizer", t_null(),
                              "LightningCLI's optimizer; salt sets it with model.optimizer and model.lrs_config."))
          .read_elsewhere("null in salt's run directories; the optimizer is model.optimizer")
          .unbound(field_null("lr_scheduler", t_null(),
                              "LightningCLI's lr_scheduler; salt's is the one-cycle schedule of model.lrs_config."))
          .read_elsewhere("null in salt's run directories; the schedule is model.lrs_config")
          .unbound(field_null("weights_only", t_optional(t_bool()), "torch.load's weights_only for ckpt_path."))
          .ignored("salt-cpp's checkpoint reader never runs code from a file, whatever this says")
          .arg("overwrite_config", SALT_FIELD(overwrite_config),
               "Allow overwriting an existing config.yaml in the run directory.")
          .arg("log_suffix", SALT_FIELD(log_suffix), "Run directory <name>_<log_suffix> instead of a timestamp.")
          .custom(field_null("init_from", t_optional(t_union({t_path(), init_from_binding().type()})),
                             "Fine-tuning (salt-cpp's own): start from another run's weights, a checkpoint path or "
                             "{ckpt_path, include, exclude, freeze}; a new optimizer and schedule. Left out of "
                             "config.yaml, which salt reads; the checkpoints keep it."),
                  read_init_from)
          .custom(field_node("trainer", trainer_binding().type(), YAML::Node(YAML::NodeType::Map),
                             "Training loop settings (Lightning's Trainer)."),
                  [](RunConfig& c, const YAML::Node& n) { c.trainer = trainer_binding().read(n); })
          .required_struct("data", SALT_FIELD(data), data_binding(), "Input files, variables and loading.")
          .required_struct("model", SALT_FIELD(model), model_section_binding(), "Network, losses and optimiser.");
  return b;
}

}  // namespace

TypeP root_type() {
  static const TypeP root = root_binding().type();
  return root;
}

RunConfig read_run_config(const YAML::Node& validated) { return root_binding().read(validated); }

std::optional<InitFrom> init_from_of(const YAML::Node& resolved) {
  RunConfig c;
  if (resolved.IsMap()) read_init_from(c, resolved["init_from"]);
  return c.init_from;
}

}  // namespace salt::config
