#include "models/layers/pos_enc.h"

#include "core/errors.h"
#include "export/graph.h"
#include "export/layers.h"
#include "models/registry.h"

namespace salt::models {

namespace {

const config::Binding<PositionalEncoderOptions>& pos_enc_binding() {
  using namespace config;
  static const Binding<PositionalEncoderOptions> b = [] {
    Binding<PositionalEncoderOptions> p{PositionalEncoderOptions{}};
    p.required("variables", SALT_MEMBER(variables), "Variables of the init net's input to encode.")
        .required("dim", SALT_MEMBER(dim), "Size of the encoding: the init net's output_size.", at_least(t_int(), 1))
        .arg("alpha", SALT_MEMBER(alpha), "Frequency scale.");
    return p;
  }();
  return b;
}

const bool kPosEncRegistered = config::register_component(
    {"salt.models.PositionalEncoder", "pos_enc", pos_enc_binding().type(),
     "Sine/cosine encodings of input variables added to an init net's output.", config::Support::kFull, "",
     {"salt.models.posenc.PositionalEncoder"}});

}  // namespace

PositionalEncoder::PositionalEncoder(PositionalEncoderOptions options) : options_(std::move(options)) {
  if (options_.variables().empty()) throw UsageError("PositionalEncoder: no variables");
}

namespace {

// The d frequencies of each variable (none when dim < 2 * variables).
torch::Tensor frequencies(const PositionalEncoderOptions& o, const torch::TensorOptions& opts) {
  const auto n = static_cast<int64_t>(o.variables().size());
  const int64_t d = o.dim() / (2 * n);
  if (d <= 0) return torch::empty({0}, opts);
  const double end = 2.0 / static_cast<double>(d) - 1.0;
  return o.alpha() * torch::logspace(0, end, d, 10000, opts);
}

}  // namespace

torch::Tensor PositionalEncoder::operator()(const torch::Tensor& x) const {
  torch::NoGradGuard no_grad;  // salt's forward is @torch.no_grad
  const auto n = static_cast<int64_t>(options_.variables().size());
  const int64_t d = options_.dim() / (2 * n), rest = options_.dim() % (2 * n);
  const auto opts = x.options();
  std::vector<torch::Tensor> parts;
  if (d > 0) {
    const auto omegas = frequencies(options_, opts);
    for (int64_t i = 0; i < n; ++i) {
      const auto xs = x.select(-1, i).unsqueeze(-1);
      if (options_.variables()[static_cast<size_t>(i)] == "phi") {
        parts.push_back((xs.sin() * omegas).sin());
        parts.push_back((xs.cos() * omegas).sin());
      } else {
        parts.push_back((xs * omegas).sin());
        parts.push_back((xs * omegas).cos());
      }
    }
  }
  if (rest > 0) {
    auto shape = x.sizes().vec();
    shape.back() = rest;
    parts.push_back(torch::zeros(shape, opts));
  }
  return torch::cat(parts, -1);
}

ox::Value PositionalEncoder::to_onnx(ox::Graph& g, const ox::Value& x) const {
  const auto n = static_cast<int64_t>(options_.variables().size());
  const int64_t d = options_.dim() / (2 * n), rest = options_.dim() % (2 * n);
  std::vector<ox::Value> parts;
  if (d > 0) {
    const auto omegas = g.constant(frequencies(options_, torch::dtype(torch::kFloat32)), "pos_enc_omegas");
    for (int64_t i = 0; i < n; ++i) {
      const auto xs = g.op("Gather", {x, g.ints({i})}, {{"axis", int64_t{1}}});  // [L, 1]
      if (options_.variables()[static_cast<size_t>(i)] == "phi") {
        parts.push_back(g.op("Sin", {g.op("Mul", {g.op("Sin", {xs}), omegas})}));
        parts.push_back(g.op("Sin", {g.op("Mul", {g.op("Cos", {xs}), omegas})}));
      } else {
        const auto phase = g.op("Mul", {xs, omegas});
        parts.push_back(g.op("Sin", {phase}));
        parts.push_back(g.op("Cos", {phase}));
      }
    }
  }
  if (rest > 0) {
    parts.push_back(g.op("ConstantOfShape", {g.op("Concat", {ox::dim0(g, x), g.ints({rest})}, {{"axis", int64_t{0}}})}));
  }
  return parts.size() == 1 ? parts.front() : g.op("Concat", parts, {{"axis", int64_t{-1}}});
}

PositionalEncoderOptions read_pos_enc(const config::ComponentNode& node, const std::string& key) {
  const auto* spec = config::components().find(node.class_path);
  if (!spec || spec->category != "pos_enc")
    throw UsageError(key + ".class_path: '" + node.class_path + "' is not a positional encoder");
  return pos_enc_binding().read(node.init_args);
}

}  // namespace salt::models
