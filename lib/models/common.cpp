#include "models/common.h"

#include "core/errors.h"

namespace salt::models {

torch::Tensor Sequence::mask() const {
  std::vector<torch::Tensor> masks;
  masks.reserve(segments.size());
  for (const auto& s : segments) masks.push_back(s.mask);
  return torch::cat(masks, 1);
}

const Segment* Sequence::find(const std::string& name) const {
  for (const auto& s : segments)
    if (s.name == name) return &s;
  return nullptr;
}

torch::Tensor Sequence::slice(const std::string& name) const {
  int64_t offset = 0;
  for (const auto& s : segments) {
    if (s.name == name) return x.narrow(1, offset, s.mask.size(1));
    offset += s.mask.size(1);
  }
  throw UsageError("model: no constituent input '" + name + "' in the encoded sequence");
}

torch::Tensor masked_softmax(const torch::Tensor& x, const torch::Tensor& mask, int64_t dim) {
  if (!mask.defined()) return torch::softmax(x, dim);
  auto filled = x.masked_fill(mask, -std::numeric_limits<float>::infinity());
  // A fully masked slice gives NaN (exp(-inf)/0); masked_fill turns those into 0
  // and its backward zeroes the gradient there, so no NaN leaks either way.
  return torch::softmax(filled, dim).masked_fill(mask, 0.0);
}

torch::Tensor attach_context(const torch::Tensor& x, const torch::Tensor& context) {
  auto ctx = context;
  while (ctx.dim() < x.dim()) ctx = ctx.unsqueeze(1);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.back() = context.size(-1);
  return torch::cat({ctx.expand(shape), x}, -1);
}

}  // namespace salt::models
