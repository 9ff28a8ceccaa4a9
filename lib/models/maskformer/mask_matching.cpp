#include "models/maskformer/mask_matching.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "core/linear_assignment.h"

namespace salt::models {
namespace F = torch::nn::functional;

namespace {

torch::Tensor bce(const torch::Tensor& logits, const torch::Tensor& labels) {
  return F::binary_cross_entropy_with_logits(logits, labels,
                                             F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
}

// Sum over the masks of a per-mask loss, over the number of masks (salt's "/ len(inputs)").
torch::Tensor per_mask_mean(const torch::Tensor& per_mask) {
  return per_mask.sum() / std::max<int64_t>(1, per_mask.size(0));
}

}  // namespace

torch::Tensor mask_dice_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  const auto s = logits.sigmoid();
  const auto numerator = 2 * (s * labels).sum(-1);
  const auto denominator = s.sum(-1) + labels.sum(-1);
  return per_mask_mean(1 - (numerator + 1) / (denominator + 1));
}

torch::Tensor mask_ce_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  return per_mask_mean(bce(logits, labels).mean(1));
}

torch::Tensor mask_focal_loss(const torch::Tensor& logits, const torch::Tensor& labels, double alpha, double gamma) {
  const auto s = logits.sigmoid();
  const auto p_t = s * labels + (1 - s) * (1 - labels);
  auto loss = bce(logits, labels) * (1 - p_t).pow(gamma);
  if (alpha >= 0) loss = (alpha * labels + (1 - alpha) * (1 - labels)) * loss;
  return per_mask_mean(loss.mean(1));
}

torch::Tensor pairwise_dice_cost(const torch::Tensor& logits, const torch::Tensor& targets) {
  const auto s = logits.sigmoid();
  const auto numerator = 2 * torch::einsum("bnc,bmc->bnm", {s, targets});
  const auto denominator = s.sum(-1).unsqueeze(2) + targets.sum(-1).unsqueeze(1);
  return 1 - (numerator + 1) / (denominator + 1);
}

torch::Tensor pairwise_ce_cost(const torch::Tensor& logits, const torch::Tensor& targets) {
  // BCE(x, 1) for the target's constituents, BCE(x, 0) for the others, averaged over L.
  const auto pos = bce(logits, torch::ones_like(logits));
  const auto neg = bce(logits, torch::zeros_like(logits));
  const auto cost = torch::einsum("bnc,bmc->bnm", {pos, targets}) + torch::einsum("bnc,bmc->bnm", {neg, 1 - targets});
  return cost / logits.size(2);
}

torch::Tensor pairwise_focal_cost(const torch::Tensor& logits, const torch::Tensor& targets, double alpha,
                                  double gamma) {
  const auto s = logits.sigmoid();
  auto pos = (1 - s).pow(gamma) * bce(logits, torch::ones_like(logits));
  auto neg = s.pow(gamma) * bce(logits, torch::zeros_like(logits));
  if (alpha >= 0) {
    pos = pos * alpha;
    neg = neg * (1 - alpha);
  }
  const auto cost = torch::einsum("bnc,bmc->bnm", {pos, targets}) + torch::einsum("bnc,bmc->bnm", {neg, 1 - targets});
  return cost / logits.size(2);
}

torch::Tensor pairwise_mae_cost(const torch::Tensor& preds, const torch::Tensor& targets) {
  return (preds.unsqueeze(2) - targets.unsqueeze(1)).abs().mean(-1);
}

torch::Tensor match_cost(const MatchInputs& in, const MatchWeights& w) {
  torch::NoGradGuard no_grad;
  const int64_t null_class = in.class_probs.size(2) - 1;
  const auto valid = in.target_class != null_class;  // [B, M]
  const auto masks = in.mask_logits.detach().clamp(-1e4, 1e4);
  const auto targets = in.target_masks.to(masks.scalar_type());
  // Class term: minus the probability the query gives the target's class, on the first
  // num_classes target slots only, as salt's matcher builds it (obj_class_tgt[:, :num_classes]):
  // the slots after them are matched on the mask and regression terms alone.
  const auto first_slots = torch::arange(in.target_class.size(1), in.target_class.options()) < null_class;
  const auto classed = valid & first_slots.unsqueeze(0);
  const auto index = (in.target_class * classed).unsqueeze(1).expand({-1, in.class_probs.size(1), -1});
  const auto prob = in.class_probs.detach().gather(2, index) * classed.unsqueeze(1);
  auto cost = -w.object_class_ce * prob;
  if (w.mask_dice != 0) cost = cost + w.mask_dice * pairwise_dice_cost(masks, targets);
  if (w.mask_ce != 0) cost = cost + w.mask_ce * pairwise_ce_cost(masks, targets);
  if (w.mask_focal != 0) cost = cost + w.mask_focal * pairwise_focal_cost(masks, targets);
  if (w.regression != 0 && in.regression.defined()) {
    auto target = torch::nan_to_num(in.target_regression * valid.unsqueeze(-1), 0.0, 0.0, 0.0);
    cost = cost + w.regression * pairwise_mae_cost(in.regression.detach(), target);
  }
  return cost;
}

torch::Tensor hungarian_match(const MatchInputs& in, const MatchWeights& w) {
  const auto cost = match_cost(in, w).to(torch::kCPU, torch::kDouble).contiguous();
  const auto valid = (in.target_class != in.class_probs.size(2) - 1).to(torch::kCPU);
  const int64_t B = cost.size(0), N = cost.size(1), M = cost.size(2);
  if (M > N)
    throw std::invalid_argument("hungarian_match: " + std::to_string(M) + " target slots for " + std::to_string(N) +
                                " object queries");
  auto result = torch::empty({B, M}, torch::kInt64);
  auto out = result.accessor<int64_t, 2>();
  const auto ok = valid.accessor<bool, 2>();
  const auto c = cost.accessor<double, 3>();
  std::vector<double> matrix;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int64_t> real;  // target slots with an object
    for (int64_t m = 0; m < M; ++m)
      if (ok[b][m]) real.push_back(m);
    matrix.assign(real.size() * static_cast<size_t>(N), 0);
    for (size_t r = 0; r < real.size(); ++r)
      for (int64_t n = 0; n < N; ++n) matrix[r * static_cast<size_t>(N) + static_cast<size_t>(n)] = c[b][n][real[r]];
    const auto a = linear_sum_assignment(matrix, static_cast<int64_t>(real.size()), N);
    std::vector<char> used(static_cast<size_t>(N), 0);
    std::vector<int64_t> query(static_cast<size_t>(M), -1);
    for (size_t k = 0; k < a.rows.size(); ++k) {
      query[static_cast<size_t>(real[static_cast<size_t>(a.rows[k])])] = a.cols[k];
      used[static_cast<size_t>(a.cols[k])] = 1;
    }
    // Null slots take the unused queries in ascending order (their class loss
    // teaches those queries "no object").
    int64_t next = 0;
    for (int64_t m = 0; m < M; ++m) {
      if (query[static_cast<size_t>(m)] < 0) {
        while (used[static_cast<size_t>(next)]) ++next;
        query[static_cast<size_t>(m)] = next;
        used[static_cast<size_t>(next)] = 1;
      }
      out[b][m] = query[static_cast<size_t>(m)];
    }
  }
  return result.to(in.class_probs.device());
}

}  // namespace salt::models
