// MaskFormer's loss terms and its Hungarian matching, as salt's maskformer_loss.py
// and matcher.py define them. Shapes: B jets, N object queries (predictions), M
// true-object slots, L constituents, C object classes (+1 for "no object").
//
// The mask losses take the valid (matched, non-null) pairs flattened to [K, L]:
//   dice  = sum_k (1 - (2 sum_l s y + 1) / (sum_l s + sum_l y + 1)) / K, s = sigmoid(x)
//   ce    = sum_k mean_l BCE(x, y) / K
//   focal = sum_k mean_l BCE(x, y) (1 - p_t)^gamma [alpha_t] / K, p_t = s y + (1 - s)(1 - y)
// The pairwise costs are the same per (query, target) pair: [B, N, M].
#pragma once
#include <torch/torch.h>

namespace salt::models {

torch::Tensor mask_dice_loss(const torch::Tensor& logits, const torch::Tensor& labels);
torch::Tensor mask_ce_loss(const torch::Tensor& logits, const torch::Tensor& labels);
torch::Tensor mask_focal_loss(const torch::Tensor& logits, const torch::Tensor& labels, double alpha = -1,
                              double gamma = 2);

// Pairwise costs, predictions [B, N, L] (logits) x targets [B, M, L] (0/1) -> [B, N, M].
torch::Tensor pairwise_dice_cost(const torch::Tensor& logits, const torch::Tensor& targets);
torch::Tensor pairwise_ce_cost(const torch::Tensor& logits, const torch::Tensor& targets);
torch::Tensor pairwise_focal_cost(const torch::Tensor& logits, const torch::Tensor& targets, double alpha = -1,
                                  double gamma = 2);
// Mean absolute error over the last axis: [B, N, R] x [B, M, R] -> [B, N, M].
torch::Tensor pairwise_mae_cost(const torch::Tensor& preds, const torch::Tensor& targets);

// The matcher's weights (salt's loss_weights / matcher_weights keys); 0 leaves a term out.
struct MatchWeights {
  double object_class_ce = 1, mask_dice = 0, mask_ce = 0, mask_focal = 0, regression = 0;
};

struct MatchInputs {
  torch::Tensor class_probs;    // [B, N, C + 1]
  torch::Tensor mask_logits;    // [B, N, L]
  torch::Tensor target_class;   // [B, M] int64, C = no object
  torch::Tensor target_masks;   // [B, M, L]
  torch::Tensor regression;     // [B, N, R] or undefined
  torch::Tensor target_regression;  // [B, M, R] or undefined
};

// The cost of giving query n to target m: [B, N, M]; columns of null targets are
// meaningless (the matcher leaves them out). As in salt, only the first C target slots
// (C = num_classes) carry the class term; docs/models.md says why that rule is kept.
torch::Tensor match_cost(const MatchInputs& in, const MatchWeights& w);

// For each jet the assignment of queries to its real targets with the least total
// cost (core/linear_assignment.h), then the remaining queries to the null slots in
// ascending order, as salt fills them: [B, M] int64 query indices (M <= N), so that
// preds[b, result[b, m]] is compared with target m.
torch::Tensor hungarian_match(const MatchInputs& in, const MatchWeights& w);

}  // namespace salt::models
