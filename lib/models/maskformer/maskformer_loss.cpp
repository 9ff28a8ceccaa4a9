#include "models/maskformer/maskformer_loss.h"

#include <stdexcept>

#include "models/maskformer/mask_matching.h"

namespace salt::models {
namespace F = torch::nn::functional;

torch::Tensor class_weight_vector(const MaskFormerLossOptions& o) {
  if (o.num_classes <= 0) throw std::invalid_argument("MaskFormerLoss: num_classes must be positive");
  if (o.num_classes == 1) return torch::tensor({o.null_class_weight}, torch::kFloat);
  if (o.class_weights) {
    std::vector<double> w = *o.class_weights;
    const auto n = static_cast<int64_t>(w.size());
    if (n == o.num_classes) w.push_back(o.null_class_weight);
    else if (n != o.num_classes + 1)
      throw std::invalid_argument("MaskFormerLoss: class_weights has " + std::to_string(n) + " entries, expected " +
                                  std::to_string(o.num_classes) + " or " + std::to_string(o.num_classes + 1));
    return torch::tensor(w, torch::kDouble).to(torch::kFloat);
  }
  auto w = torch::ones({o.num_classes + 1}, torch::kFloat);
  w[o.num_classes] = o.null_class_weight;
  return w;
}

torch::Tensor in_target_order(const torch::Tensor& t, const torch::Tensor& assignment) {
  auto index = assignment;
  for (int64_t d = 2; d < t.dim(); ++d) index = index.unsqueeze(-1);
  auto shape = t.sizes().vec();
  shape[1] = assignment.size(1);
  return t.gather(1, index.expand(shape));
}

std::map<std::string, torch::Tensor> maskformer_losses(const torch::Tensor& class_logits,
                                                       const torch::Tensor& mask_logits,
                                                       const torch::Tensor& target_class,
                                                       const torch::Tensor& target_masks,
                                                       const MaskFormerLossOptions& o, const std::string& suffix) {
  const auto weight_of = [&](const std::string& name) {
    auto it = o.loss_weights.find(name);
    return it == o.loss_weights.end() ? 0.0 : it->second;
  };
  std::map<std::string, torch::Tensor> losses;
  const auto weights = class_weight_vector(o).to(class_logits.device(), class_logits.scalar_type());
  const auto logits = class_logits.flatten(0, 1);
  const auto labels = target_class.flatten(0, 1);
  torch::Tensor ce;
  if (logits.size(1) == 1)
    ce = F::binary_cross_entropy_with_logits(logits.squeeze(1), labels.to(logits.scalar_type()),
                                             F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(weights));
  else
    ce = F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().weight(weights));
  losses["object_class_ce" + suffix] = ce * weight_of("object_class_ce");

  const auto valid = target_class != o.num_classes;
  const auto pred = mask_logits.index({valid});
  const auto truth = target_masks.index({valid}).to(pred.scalar_type());
  if (pred.size(0) == 0) {  // no object in the whole batch: zero (salt would divide by zero)
    // The sum of no logits: 0 and still in the graph. (mask_logits.sum() * 0 is NaN:
    // padded mask logits hold the dtype's lowest value, and they sum to -inf.)
    for (const char* name : {"mask_dice", "mask_focal", "mask_ce"})
      if (weight_of(name) != 0) losses[name + suffix] = pred.sum();
    return losses;
  }
  if (weight_of("mask_dice") != 0) losses["mask_dice" + suffix] = mask_dice_loss(pred, truth) * weight_of("mask_dice");
  if (weight_of("mask_focal") != 0)
    losses["mask_focal" + suffix] = mask_focal_loss(pred, truth) * weight_of("mask_focal");
  if (weight_of("mask_ce") != 0) losses["mask_ce" + suffix] = mask_ce_loss(pred, truth) * weight_of("mask_ce");
  return losses;
}

}  // namespace salt::models
