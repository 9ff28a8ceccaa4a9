#include "models/init_net.h"

#include "core/errors.h"
#include "models/model_factory.h"
#include "models/registry.h"

namespace salt::models {

const config::Binding<InitNetOptions>& init_net_binding() {
  using namespace config;
  const char* none = "not available in salt-cpp";
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
        .unbound(field_null("pos_enc", t_any(), "Positional encoding.")).unsupported(none)
        .unbound(field_null("featurewise", t_any(), "Featurewise transformation.")).unsupported(none)
        .unbound(field("mup", t_bool(), false, "muP scaling.")).unsupported("muP is not available in salt-cpp");
    return n;
  }();
  return b;
}

namespace {

int64_t variable_count(const ModelContext& ctx, const std::string& input, const std::string& path) {
  auto it = ctx.variables.find(input);
  if (it == ctx.variables.end()) throw UsageError(path + ": input '" + input + "' has no entry in data.variables");
  return static_cast<int64_t>(it->second.size());
}

}  // namespace

InitNet build_init_net(const YAML::Node& validated, const BuildContext& ctx) {
  auto o = init_net_binding().read(validated);
  const auto& model = *ctx.model;
  o.global_object(model.global_object);
  int64_t size = variable_count(model, o.input_name(), ctx.path + ".input_name");
  if (o.attach_global()) {
    size += variable_count(model, model.global_object, ctx.path + ".attach_global");
    if (auto p = model.variables.find("parameters"); p != model.variables.end()) size += static_cast<int64_t>(p->second.size());
  }
  if (o.dense().input_size() < 0) o.dense().input_size(size);
  return InitNet(o);
}

InitNetImpl::InitNetImpl(const InitNetOptions& options) : torch::nn::Module("InitNet"), options_(options) {
  net = register_module("net", Dense(options.dense()));
}

torch::Tensor InitNetImpl::forward(const TensorMap& inputs) {
  auto it = inputs.find(options_.input_name());
  if (it == inputs.end()) throw InputError("InitNet: input '" + options_.input_name() + "' missing from the batch");
  auto x = it->second;
  if (options_.attach_global()) {
    auto g = inputs.find(options_.global_object());
    if (g == inputs.end())
      throw InputError("InitNet '" + options_.input_name() + "': global input '" + options_.global_object() +
                       "' missing from the batch");
    x = attach_context(x, g->second);
  }
  if (x.size(-1) != net->input_size())
    throw InputError("InitNet '" + options_.input_name() + "': got " + std::to_string(x.size(-1)) +
                     " input features, the network expects " + std::to_string(net->input_size()));
  return net->forward(x);
}

torch::Tensor InitNetImpl::forward_packed(const TensorMap& inputs, const TokenIndex& idx) {
  auto it = inputs.find(options_.input_name());
  if (it == inputs.end()) throw InputError("InitNet: input '" + options_.input_name() + "' missing from the batch");
  const auto& x = it->second;
  if (x.dim() != 3)
    throw InputError("SaltModel: input '" + options_.input_name() + "' is not a constituent input (shape [B, L, F])");
  auto rows = idx.gather(x);
  if (!options_.attach_global()) {
    if (x.size(-1) != net->input_size())
      throw InputError("InitNet '" + options_.input_name() + "': got " + std::to_string(x.size(-1)) +
                       " input features, the network expects " + std::to_string(net->input_size()));
    return net->forward(rows);
  }
  auto g = inputs.find(options_.global_object());
  if (g == inputs.end())
    throw InputError("InitNet '" + options_.input_name() + "': global input '" + options_.global_object() +
                     "' missing from the batch");
  const int64_t features = x.size(-1) + g->second.size(-1);
  if (features != net->input_size())
    throw InputError("InitNet '" + options_.input_name() + "': got " + std::to_string(features) +
                     " input features, the network expects " + std::to_string(net->input_size()));
  // Global variables first, as in forward().
  return net->forward(torch::cat({g->second.index_select(0, idx.jet), rows}, -1));
}

}  // namespace salt::models
