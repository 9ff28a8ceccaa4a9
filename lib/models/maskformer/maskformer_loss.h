// MaskFormerLoss after the matching (salt's maskformer_loss.py): the queries put in
// the order of their targets (hungarian_match), then the object-class cross
// entropy over every slot (the null class weighted by null_class_weight, or
// class_weights) and the mask losses over the slots with a real object, each
// multiplied by its loss_weights entry. Auxiliary decoder layers get the same
// losses with "_layer<i>" appended (the caller matches each layer on its own).
#pragma once
#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace salt::models {

struct MaskFormerLossOptions {
  int64_t num_classes = 0;                      // without the null class
  std::map<std::string, double> loss_weights;   // object_class_ce, mask_dice, mask_focal, mask_ce, regression
  double null_class_weight = 0.5;
  std::optional<std::vector<double>> class_weights;  // num_classes or num_classes + 1 entries
};

// salt's empty_weight: per-class weights of the cross entropy (the null class
// last), or for one class the BCE's pos_weight. Throws std::invalid_argument
// naming the lengths it accepts.
torch::Tensor class_weight_vector(const MaskFormerLossOptions& o);

// Rows of `t` ([B, N, ...]) in the order `assignment` ([B, M] query indices) gives.
torch::Tensor in_target_order(const torch::Tensor& t, const torch::Tensor& assignment);

// Losses of queries already in target order: class_logits [B, M, C + 1] (or
// [B, M, 1] for one class), mask_logits [B, M, L]; weighted, named as salt logs
// them (object_class_ce, mask_dice, mask_focal, mask_ce) plus `suffix`.
std::map<std::string, torch::Tensor> maskformer_losses(const torch::Tensor& class_logits,
                                                       const torch::Tensor& mask_logits,
                                                       const torch::Tensor& target_class,
                                                       const torch::Tensor& target_masks,
                                                       const MaskFormerLossOptions& o, const std::string& suffix = "");

}  // namespace salt::models
