// torch's CPU dropout as salt draws it on a padded tensor, applied to its valid rows.
//
// at::native's _dropout_impl on the CPU: bernoulli_(1 - p) noise of the input's
// shape, divided by 1 - p, times the input. salt runs its per-token layers on the
// padded [B, L, F] tensor, salt-cpp on the valid rows [N, F]; drawing the noise in
// salt's shape and taking the valid rows' entries gives salt's masks and leaves the
// generator where salt's is (docs/migrating.md, "Trained by salt").
#pragma once
#include <torch/torch.h>

namespace salt::models {

// Layout: TokenIndex or TokenLayout (batch, length, gather of [B, L, F] -> [N, F]).
template <class Layout>
torch::Tensor padded_dropout(const torch::Tensor& rows, double p, const Layout& layout) {
  if (p >= 1.0) return rows * torch::zeros({}, rows.options());
  auto noise = torch::empty({layout.batch, layout.length, rows.size(-1)}, rows.options()).bernoulli_(1.0 - p);
  noise.div_(1.0 - p);
  return rows * layout.gather(noise);
}

}  // namespace salt::models
