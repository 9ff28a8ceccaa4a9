#include "models/residual.h"

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

void check_norm_type(const std::string& norm_type) {
  if (norm_type != "pre" && norm_type != "post" && norm_type != "none")
    throw UsageError("Transformer: norm_type '" + norm_type + "' is not supported (choose from pre, post, none)");
}

}  // namespace salt::models
