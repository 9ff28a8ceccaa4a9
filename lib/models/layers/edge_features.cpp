#include "models/layers/edge_features.h"

#include <cmath>

#include "core/errors.h"
#include "export/graph.h"
#include "export/layers.h"

namespace salt::models {
namespace {

// [B, L] -> the pair tensors a_ij = v_j ([B, 1, L] broadcast) and b_ij = v_i ([B, L, 1]).
torch::Tensor of_j(const torch::Tensor& v) { return v.unsqueeze(1); }
torch::Tensor of_i(const torch::Tensor& v) { return v.unsqueeze(2); }

}  // namespace

torch::Tensor edge_features(const torch::Tensor& x, const std::map<std::string, int64_t>& columns,
                            const std::vector<std::string>& features) {
  const int64_t b = x.size(0), l = x.size(1);
  auto col = [&](const char* name) { return x.select(2, columns.at(name)); };
  auto dr = [&] {
    auto dphi = of_j(col("phi")) - of_i(col("phi"));
    dphi = dphi - (dphi > M_PI).to(dphi.scalar_type()) * (2 * M_PI);
    auto deta = of_j(col("eta")) - of_i(col("eta"));
    return torch::sqrt(deta.square() + dphi.square());
  };
  auto pt_min = [&] { return torch::minimum(of_j(col("pt")), of_i(col("pt"))); };
  std::vector<torch::Tensor> out;
  for (const auto& f : features) {
    torch::Tensor e;
    if (f == "dR") {
      e = torch::log(dr());
    } else if (f == "kt") {
      e = torch::log(pt_min() * dr());
    } else if (f == "z") {
      e = torch::log(pt_min() / (of_j(col("pt")) + of_i(col("pt"))));
    } else if (f == "isSelfLoop") {
      e = torch::eye(l, x.options()).unsqueeze(0);
    } else if (f == "subjetIndex") {
      auto sj = of_j(col("subjetIndex")), si = of_i(col("subjetIndex"));
      e = torch::logical_and(sj == si, sj >= 0).to(x.scalar_type());
    } else if (f == "mass") {
      auto pt = col("pt"), eta = col("eta"), phi = col("phi"), energy = col("energy");
      auto px = pt * torch::cos(phi), py = pt * torch::sin(phi), pz = pt * (torch::exp(eta) - torch::exp(-eta)) / 2;
      auto sum = [](const torch::Tensor& v) { return of_j(v) + of_i(v); };
      auto m2 = sum(energy).square() - sum(px).square() - sum(py).square() - sum(pz).square();
      e = 0.5 * torch::log(torch::clamp_min(m2, 1e-8));
    } else {
      throw UsageError("edge_features: unknown edge feature '" + f + "'");
    }
    out.push_back(e.expand({b, l, l}));
  }
  return torch::nan_to_num(torch::stack(out, -1), 0.0, 0.0, 0.0);
}

ox::Value edge_features_onnx(ox::Graph& g, const ox::Value& x, const std::map<std::string, int64_t>& columns,
                             const std::vector<std::string>& features) {
  // The same operations in the same order as edge_features(), so that float32
  // rounding agrees: v_j is [1, L], v_i is [L, 1].
  auto col = [&](const char* name) { return g.op("Gather", {x, g.scalar_int(columns.at(name))}, {{"axis", int64_t{1}}}); };
  auto of_j = [&](const ox::Value& v) { return g.op("Unsqueeze", {v, g.ints({0})}); };
  auto of_i = [&](const ox::Value& v) { return g.op("Unsqueeze", {v, g.ints({1})}); };
  auto sub = [&](const ox::Value& a, const ox::Value& b) { return g.op("Sub", {a, b}); };
  auto square = [&](const ox::Value& a) { return g.op("Mul", {a, a}); };
  auto dr = [&] {
    auto dphi = sub(of_j(col("phi")), of_i(col("phi")));
    auto wrap = g.op("Cast", {g.op("Greater", {dphi, g.scalar(float(M_PI))})}, {{"to", int64_t{1}}});  // 1 = FLOAT
    dphi = sub(dphi, g.op("Mul", {wrap, g.scalar(float(2 * M_PI))}));
    auto deta = sub(of_j(col("eta")), of_i(col("eta")));
    return g.op("Sqrt", {g.op("Add", {square(deta), square(dphi)})});
  };
  auto pt_min = [&] { return g.op("Min", {of_j(col("pt")), of_i(col("pt"))}); };
  auto count = ox::dim0(g, x);
  auto pairs = g.op("ConstantOfShape", {g.op("Concat", {count, count}, {{"axis", int64_t{0}}})});  // zeros [L, L]
  std::vector<ox::Value> out;
  for (const auto& f : features) {
    ox::Value e;
    if (f == "dR") {
      e = g.op("Log", {dr()});
    } else if (f == "kt") {
      e = g.op("Log", {g.op("Mul", {pt_min(), dr()})});
    } else if (f == "z") {
      e = g.op("Log", {g.op("Div", {pt_min(), g.op("Add", {of_j(col("pt")), of_i(col("pt"))})})});
    } else if (f == "isSelfLoop") {
      e = g.op("EyeLike", {pairs});
    } else if (f == "subjetIndex") {
      auto sj = of_j(col("subjetIndex")), si = of_i(col("subjetIndex"));
      e = g.op("Cast", {g.op("And", {g.op("Equal", {sj, si}), g.op("GreaterOrEqual", {sj, g.scalar(0.f)})})}, {{"to", int64_t{1}}});
    } else if (f == "mass") {
      auto pt = col("pt"), eta = col("eta"), phi = col("phi"), energy = col("energy");
      auto px = g.op("Mul", {pt, g.op("Cos", {phi})}), py = g.op("Mul", {pt, g.op("Sin", {phi})});
      auto pz = g.op("Div", {g.op("Mul", {pt, sub(g.op("Exp", {eta}), g.op("Exp", {g.op("Neg", {eta})}))}), g.scalar(2.f)});
      auto sum = [&](const ox::Value& v) { return g.op("Add", {of_j(v), of_i(v)}); };
      auto m2 = sub(sub(sub(square(sum(energy)), square(sum(px))), square(sum(py))), square(sum(pz)));
      e = g.op("Mul", {g.scalar(0.5f), g.op("Log", {g.op("Max", {m2, g.scalar(1e-8f)})})});
    } else {
      throw UsageError("edge_features: unknown edge feature '" + f + "'");
    }
    // Every feature [L, L] (adding the zero pairs broadcasts the row/column ones).
    out.push_back(g.op("Unsqueeze", {g.op("Add", {e, pairs}), g.ints({-1})}));
  }
  auto stacked = out.size() == 1 ? out.front() : g.op("Concat", out, {{"axis", int64_t{-1}}});
  // nan_to_num(0, 0, 0)
  auto zero = g.scalar(0.f);
  stacked = g.op("Where", {g.op("IsNaN", {stacked}), zero, stacked});
  return g.op("Where", {g.op("IsInf", {stacked}), zero, stacked});
}

EdgeConstructor::EdgeConstructor(config::EdgeConstructorConfig config, const std::vector<std::string>& variables)
    : config_(std::move(config)) {
  for (size_t i = 0; i < variables.size(); ++i) columns_[variables[i]] = static_cast<int64_t>(i);
  config::check_edge_constructors({config_}, {{config_.input_name, variables}});
}

ox::Value EdgeConstructor::to_onnx(ox::Graph& g, const ox::Value& raw) const {
  return edge_features_onnx(g, raw, columns_, config_.edge_features);
}

void EdgeConstructor::add_to(TensorMap& inputs) const {
  auto it = inputs.find(config_.input_name);
  if (it == inputs.end())
    throw InputError("data.edge_constructors: input '" + config_.input_name + "' missing from the batch");
  inputs[config::edge_input_name(config_.input_name)] = edge_features(it->second, columns_, config_.edge_features);
}

}  // namespace salt::models
