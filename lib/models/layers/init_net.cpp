#include "models/layers/init_net.h"

#include <algorithm>

#include "core/errors.h"
#include "models/model_context.h"
#include "models/registry.h"

#include "export/layers.h"

namespace salt::models {

const config::Binding<InitNetOptions>& init_net_binding() {
  using namespace config;
  static const Binding<InitNetOptions> b = [&] {
    Binding<InitNetOptions> n(InitNetOptions("", "", DenseOptions(-1)));
    n.required("input_name", SALT_MEMBER(input_name), "Input type this net embeds (a key of data.variables).")
        .required_struct("dense_config", SALT_MEMBER(dense), dense_binding(),
                         "The Dense network (salt.models.Dense arguments).")
        .arg("attach_global", SALT_MEMBER(attach_global),
             "Concatenate the global object's variables to each constituent first.")
        // salt writes these two into saved configs; the data section's values are the ones used.
        .unbound(field_null("variables", t_any(), "Filled in from data.variables (salt writes it into saved configs)."))
        .read_elsewhere("the builder takes data.variables")
        .unbound(field_null("global_object", t_optional(t_str()), "Filled in from data.global_object."))
        .read_elsewhere("the builder takes data.global_object")
        .custom(field_null("pos_enc", t_optional(t_component("pos_enc")),
                           "salt.models.PositionalEncoder {variables, dim, alpha}: encodings added to the output."),
                [](InitNetOptions& o, const YAML::Node& n) {
                  if (n.IsDefined() && !n.IsNull())
                    o.pos_enc(read_pos_enc(Codec<ComponentNode>::decode(n), "pos_enc"));
                })
        .unbound(field_null("featurewise", t_any(), "Featurewise transformation."))
        .read_elsewhere("set from the model's featurewise_nets (layer: input), as salt does")
        .custom(field("mup", t_bool(), false, "muP initialisation of the net (as dense_config.mup)."),
                [](InitNetOptions& o, const YAML::Node& n) {
                  if (n.IsDefined() && !n.IsNull() && n.as<bool>()) o.dense().mup(true);
                });
    return n;
  }();
  return b;
}

namespace {

int64_t variable_count(const ModelContext& ctx, const std::string& input, const std::string& path) {
  auto it = ctx.variables.find(input);
  if (it == ctx.variables.end()) throw UsageError(path + ": input '" + input + "' has no entry in data.variables");
  // Before: 'InitNet: input 'tracks' missing from the batch' at the first step.
  if (it->second.empty())
    throw UsageError(path + ": input '" + input + "' has no variables (data.variables." + input + " is empty)");
  return static_cast<int64_t>(it->second.size());
}

}  // namespace

InitNet build_init_net(const YAML::Node& validated, const BuildContext& ctx, bool input_featurewise) {
  auto o = init_net_binding().read(validated);
  const auto& model = *ctx.model;
  o.global_object(model.global_object);
  int64_t size = variable_count(model, o.input_name(), ctx.path + ".input_name");
  const auto p = model.variables.find("parameters");
  const int64_t num_parameters = p == model.variables.end() ? 0 : static_cast<int64_t>(p->second.size());
  if (o.attach_global()) {
    size += variable_count(model, model.global_object, ctx.path + ".attach_global");
    o.attach_parameters = num_parameters > 0 && !input_featurewise;
    if (o.attach_parameters) size += num_parameters;
  }
  if (o.dense().input_size() < 0) o.dense().input_size(size);
  if (const auto& pe = o.pos_enc()) {
    const auto key = ctx.path + ".pos_enc.init_args";
    const auto& vars = model.variables.at(o.input_name());
    for (const auto& v : pe->variables()) {
      auto it = std::find(vars.begin(), vars.end(), v);
      if (it == vars.end()) throw UsageError(key + ".variables: '" + v + "' is not a variable of '" + o.input_name() + "'");
      o.pos_enc_columns.push_back(it - vars.begin());
    }
    const int64_t out = o.dense().output_size().value_or(o.dense().input_size());
    if (pe->dim() != out)
      throw UsageError(key + ".dim: " + std::to_string(pe->dim()) + " must equal the init net's output_size " + std::to_string(out));
  }
  return InitNet(o);
}

InitNetImpl::InitNetImpl(const InitNetOptions& options) : torch::nn::Module("InitNet"), options_(options) {
  net = register_module("net", Dense(options.dense()));
  if (options.pos_enc()) pos_enc.emplace(*options.pos_enc());
}

void InitNetImpl::attach_featurewise(Featurewise f) { featurewise = register_module("featurewise", std::move(f)); }

namespace {

const torch::Tensor& input_of(const TensorMap& inputs, const std::string& name, const std::string& who) {
  auto it = inputs.find(name);
  if (it == inputs.end()) throw InputError("InitNet '" + who + "': input '" + name + "' missing from the batch");
  return it->second;
}

torch::Tensor per_row(const torch::Tensor& per_jet, const torch::Tensor& jet) {
  return jet.defined() ? gather_rows(per_jet, jet) : per_jet;
}

}  // namespace

torch::Tensor InitNetImpl::embed(const TensorMap& inputs, torch::Tensor x, const TokenIndex* rows_of) {
  const torch::Tensor jet = rows_of ? rows_of->jet : torch::Tensor();
  const auto& name = options_.input_name();
  const auto own = x;  // this input's (normalised) variables, for pos_enc
  if (options_.attach_global()) x = attach_context(x, per_row(input_of(inputs, options_.global_object(), name), jet));
  torch::Tensor params;
  if (options_.attach_parameters || featurewise) params = per_row(input_of(inputs, "parameters", name), jet);
  if (options_.attach_parameters) x = attach_context(x, params);
  if (x.size(-1) != net->input_size())
    throw InputError("InitNet '" + name + "': got " + std::to_string(x.size(-1)) +
                     " input features, the network expects " + std::to_string(net->input_size()));
  if (featurewise) x = featurewise->forward(params, x);
  auto out = net->forward(x, {}, rows_of);
  if (pos_enc) {
    const auto cols = torch::tensor(options_.pos_enc_columns, torch::dtype(torch::kLong).device(own.device()));
    out = out + (*pos_enc)(own.index_select(-1, cols)).to(out.scalar_type());
  }
  return out;
}

torch::Tensor InitNetImpl::forward(const TensorMap& inputs) {
  return embed(inputs, input_of(inputs, options_.input_name(), options_.input_name()), {});
}

torch::Tensor InitNetImpl::forward_packed(const TensorMap& inputs, const TokenIndex& idx) {
  const auto& x = input_of(inputs, options_.input_name(), options_.input_name());
  if (x.dim() != 3)
    throw InputError("SaltModel: input '" + options_.input_name() + "' is not a constituent input (shape [B, L, F])");
  return embed(inputs, idx.gather(x), &idx);
}

ox::Value InitNetImpl::to_onnx(ox::Graph& g, const std::map<std::string, ox::Value>& inputs) {
  const auto& name = options_.input_name();
  auto value_of = [&](const std::string& input) {
    auto it = inputs.find(input);
    if (it == inputs.end()) throw UsageError("to_onnx: input '" + input + "' is not an input of the exported graph");
    return it->second;
  };
  ox::Value x = value_of(name);
  const auto own = x;  // this input's (normalised) variables, for pos_enc
  if (options_.attach_global()) x = ox::attach_context(g, x, value_of(options_.global_object()));
  if (options_.attach_parameters) x = ox::attach_context(g, x, value_of("parameters"));
  if (featurewise) x = featurewise->to_onnx(g, value_of("parameters"), x);
  auto out = net->to_onnx(g, x);
  if (pos_enc) out = g.op("Add", {out, pos_enc->to_onnx(g, g.op("Gather", {own, g.ints(options_.pos_enc_columns)}, {{"axis", int64_t{1}}}))});
  return out;
}

}  // namespace salt::models
