#include "models/edge_features.h"

#include <cmath>

#include "core/errors.h"

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

EdgeConstructor::EdgeConstructor(config::EdgeConstructorConfig config, const std::vector<std::string>& variables)
    : config_(std::move(config)) {
  for (size_t i = 0; i < variables.size(); ++i) columns_[variables[i]] = static_cast<int64_t>(i);
  config::check_edge_constructors({config_}, {{config_.input_name, variables}});
}

void EdgeConstructor::add_to(TensorMap& inputs) const {
  auto it = inputs.find(config_.input_name);
  if (it == inputs.end())
    throw InputError("data.edge_constructors: input '" + config_.input_name + "' missing from the batch");
  inputs[config::edge_input_name(config_.input_name)] = edge_features(it->second, columns_, config_.edge_features);
}

}  // namespace salt::models
