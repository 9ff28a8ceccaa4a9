#include "models/layers/residual.h"

#include "core/errors.h"

namespace salt::models {

torch::Tensor drop_path(const torch::Tensor& x, double prob, bool training) {
  if (prob == 0.0 || !training) return x;
  const double keep = 1.0 - prob;
  std::vector<int64_t> shape(x.dim(), 1);
  shape[0] = x.size(0);
  auto keep_mask = (torch::rand(shape, x.options()) + keep).floor_();
  return x.div(keep) * keep_mask;
}

torch::Tensor drop_path_tokens(const torch::Tensor& x, double prob, bool training, const torch::Tensor& jet,
                               int64_t batch) {
  if (prob == 0.0 || !training) return x;
  const double keep = 1.0 - prob;
  auto keep_jet = (torch::rand({batch}, x.options()) + keep).floor_();
  std::vector<int64_t> shape(x.dim(), 1);
  shape[0] = x.size(0);
  return x.div(keep) * keep_jet.index_select(0, jet).view(shape);
}

void check_norm_type(const std::string& norm_type) {
  if (norm_type != "pre" && norm_type != "post" && norm_type != "none")
    throw UsageError("Transformer: norm_type '" + norm_type + "' is not supported (choose from pre, post, none)");
}

}  // namespace salt::models
