#include "models/layers/glu.h"

#include "models/layers/activation.h"
#include "models/layers/dense.h"
#include "models/layers/padded_dropout.h"
#include "models/packing/common.h"

#include "export/layers.h"

namespace salt::models {

const config::Binding<GLUOptions>& glu_binding() {
  using namespace config;
  static const Binding<GLUOptions> b = [] {
    Binding<GLUOptions> g(GLUOptions(0));
    g.arg("hidden_dim", SALT_MEMBER(hidden_dim), "GLU hidden size (null: 2 * embed_dim).", t_optional(t_size()))
        .arg("activation", SALT_MEMBER(activation), "GLU activation.", activation_type())
        .arg("dropout", SALT_MEMBER(dropout), "Dropout inside the GLU.", t_probability())
        .arg("bias", SALT_MEMBER(bias), "GLU linear layers have a bias.")
        .arg("gated", SALT_MEMBER(gated), "Gated GLU: act(a) * b from a doubled in_proj.")
        .arg("mup", SALT_MEMBER(mup), "muP initialisation (set by the encoder's mup).");
    return g;
  }();
  return b;
}

GLUImpl::GLUImpl(const GLUOptions& o) : torch::nn::Module("GLU"), gated_(o.gated()) {
  const int64_t hidden = o.hidden_dim().value_or(2 * o.embed_dim());
  in_proj = register_module(
      "in_proj", torch::nn::Linear(torch::nn::LinearOptions(o.embed_dim(), hidden * (o.gated() ? 2 : 1)).bias(o.bias())));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(hidden, o.embed_dim()).bias(o.bias())));
  drop = register_module("drop", torch::nn::Dropout(o.dropout()));
  activation = make_activation(o.activation(), "dense_kwargs.activation");
  register_module("activation", activation.ptr());
  if (o.mup()) {
    mup_init_linear(in_proj);
    mup_init_linear(out_proj);
  }
}

torch::Tensor GLUImpl::forward(const torch::Tensor& x, const TokenLayout* salt_padded) {
  auto h = in_proj->forward(x);
  if (gated_) {
    auto parts = h.chunk(2, -1);
    h = activation.forward(parts[0]) * parts[1];
  } else {
    h = activation.forward(h);
  }
  const double p = drop->options.p();
  if (salt_padded && is_training() && p > 0 && h.device().is_cpu()) return out_proj->forward(padded_dropout(h, p, *salt_padded));
  return out_proj->forward(drop->forward(h));
}


ox::Value GLUImpl::to_onnx(ox::Graph& g, const ox::Value& x) {
  auto h = ox::linear(g, x, in_proj);
  if (gated_) {
    auto parts = g.op_n("Split", {h}, 2, {{"axis", int64_t{-1}}});
    h = g.op("Mul", {activation_to_onnx(g, *activation.ptr(), parts[0]), parts[1]});
  } else {
    h = activation_to_onnx(g, *activation.ptr(), h);
  }
  return ox::linear(g, h, out_proj);
}

}  // namespace salt::models
