#include "models/layers/featurewise.h"

#include "core/errors.h"
#include "export/graph.h"
#include "export/layers.h"

namespace salt::models {

const config::Binding<FeaturewiseOptions>& featurewise_binding() {
  using namespace config;
  static const Binding<FeaturewiseOptions> b = [] {
    Binding<FeaturewiseOptions> f{FeaturewiseOptions{}};
    f.required("layer", SALT_MEMBER(layer), "Which features: input (init nets' inputs), encoder (every layer's input) "
                                            "or global (the encoder output).",
               t_choice({"input", "encoder", "global"}))
        .custom(field_null("dense_config_scale", t_optional(dense_binding().type()),
                           "Dense network of the parameters whose output multiplies the features."),
                [](FeaturewiseOptions& f, const YAML::Node& n) {
                  if (n.IsDefined() && n.IsMap()) f.dense_config_scale(dense_binding().read(n));
                })
        .custom(field_null("dense_config_bias", t_optional(dense_binding().type()),
                           "Dense network of the parameters whose output is added to the features."),
                [](FeaturewiseOptions& f, const YAML::Node& n) {
                  if (n.IsDefined() && n.IsMap()) f.dense_config_bias(dense_binding().read(n));
                })
        .arg("apply_norm", SALT_MEMBER(apply_norm), "LayerNorm (with affine weights) after the transformation.");
    return f;
  }();
  return b;
}

FeaturewiseImpl::FeaturewiseImpl(FeaturewiseOptions options, int64_t num_parameters)
    : torch::nn::Module("FeaturewiseTransformation"), options_(std::move(options)) {
  if (!options_.dense_config_scale() && !options_.dense_config_bias())
    throw UsageError("featurewise_nets: give dense_config_scale, dense_config_bias or both");
  if (auto s = options_.dense_config_scale()) scale_net = register_module("scale_net", Dense(s->input_size(num_parameters)));
  if (auto b = options_.dense_config_bias()) bias_net = register_module("bias_net", Dense(b->input_size(num_parameters)));
  if (options_.apply_norm())
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({num_features()})));
}

int64_t FeaturewiseImpl::num_features() const { return bias_net ? bias_net->output_size() : scale_net->output_size(); }

torch::Tensor FeaturewiseImpl::forward(const torch::Tensor& params, const torch::Tensor& features) {
  // Per-jet nets broadcast over the constituents: [B, D] -> [B, 1, D].
  auto along = [&](torch::Tensor t) { return features.dim() == t.dim() + 1 ? t.unsqueeze(1) : t; };
  auto x = features;
  if (scale_net) x = along(scale_net->forward(params)) * x;
  if (bias_net) x = x + along(bias_net->forward(params));
  if (norm) x = norm->forward(x);
  return x;
}

ox::Value FeaturewiseImpl::to_onnx(ox::Graph& g, const ox::Value& params, const ox::Value& features) {
  auto x = features;  // [1, D] net outputs broadcast over the rows, as in forward()
  if (scale_net) x = g.op("Mul", {scale_net->to_onnx(g, params), x});
  if (bias_net) x = g.op("Add", {x, bias_net->to_onnx(g, params)});
  if (norm)
    x = g.op("LayerNormalization", {x, g.constant(norm->weight, "fw_ln_weight"), g.constant(norm->bias, "fw_ln_bias")},
             {{"axis", int64_t{-1}}, {"epsilon", static_cast<float>(norm->options.eps())}});
  return x;
}

}  // namespace salt::models
