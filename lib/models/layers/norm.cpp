#include "models/layers/norm.h"

#include "core/errors.h"
#include "models/kernels/norm_cast.h"

#include "export/layers.h"

namespace salt::models {

NormImpl::NormImpl(const std::string& kind, int64_t dim) : torch::nn::Module(kind), rms_(kind == "RMSNorm"), dim_(dim) {
  if (kind != "LayerNorm" && kind != "RMSNorm")
    throw UsageError("norm: unknown normalisation '" + kind + "' (choose from LayerNorm, RMSNorm)");
  if (rms_) weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (!rms_) return torch::layer_norm(x, {dim_}, {}, {}, 1e-5);
  auto xf = x.to(torch::kFloat32);
  auto normed = xf * torch::rsqrt(xf.pow(2).mean(-1, true) + 1e-5);
  return normed.to(x.scalar_type()) * weight;
}

torch::Tensor NormImpl::forward_for_product(const torch::Tensor& x, bool norm_cast_kernel) {
  if (!rms_ && x.size(-1) == dim_) {
    if (auto y = layer_norm_for_product(x, norm_cast_kernel); y.defined()) return y;
  }
  return forward(x);
}

ox::Value NormImpl::to_onnx(ox::Graph& g, const ox::Value& x) {
  return rms_ ? ox::rms_norm(g, x, weight) : ox::layer_norm(g, x, dim_);
}

}  // namespace salt::models
