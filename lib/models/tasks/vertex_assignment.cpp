#include "models/tasks/vertex_assignment.h"

#include <cmath>
#include <numeric>
#include <vector>

namespace salt::models {

namespace {
int64_t find_root(std::vector<int64_t>& parent, int64_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}
}  // namespace

torch::Tensor vertex_assignment(const torch::Tensor& logits, const torch::Tensor& pad_mask) {
  auto mask = pad_mask.to(torch::kCPU).to(torch::kBool).contiguous();
  auto scores = logits.detach().to(torch::kCPU).to(torch::kFloat32).reshape({-1}).contiguous();
  const int64_t b = mask.size(0), l = mask.size(1);
  auto out = torch::full({b, l}, -1, torch::kLong);
  auto m = mask.accessor<bool, 2>();
  auto o = out.accessor<int64_t, 2>();
  const float* s = scores.data_ptr<float>();

  int64_t edge_offset = 0;
  for (int64_t jet = 0; jet < b; ++jet) {
    std::vector<int64_t> slots;
    for (int64_t i = 0; i < l; ++i)
      if (!m[jet][i]) slots.push_back(i);
    const auto n = static_cast<int64_t>(slots.size());
    // Edge (i, j), i != j, sits at i * (n - 1) + (j < i ? j : j - 1) in this jet's block.
    auto edge = [&](int64_t i, int64_t j) { return edge_offset + i * (n - 1) + (j < i ? j : j - 1); };
    std::vector<int64_t> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) {
        const float sym = 0.5f * (s[edge(i, j)] + s[edge(j, i)]);
        if (1.0f / (1.0f + std::exp(-sym)) >= 0.5f) {
          // Union by smallest index: the root of a group is its smallest member.
          auto ri = find_root(parent, i), rj = find_root(parent, j);
          if (ri != rj) parent[std::max(ri, rj)] = std::min(ri, rj);
        }
      }
    for (int64_t i = 0; i < n; ++i) o[jet][slots[i]] = find_root(parent, i);
    edge_offset += n * (n - 1);
  }
  return out.to(pad_mask.device());
}

}  // namespace salt::models
