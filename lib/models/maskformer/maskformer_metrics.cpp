#include "models/maskformer/maskformer_metrics.h"

#include <algorithm>
#include <cmath>

namespace salt::models {

MaskformerMetrics::MaskformerMetrics(std::vector<std::string> class_names, std::vector<std::string> regression_targets,
                                     std::vector<MaskCriterion> criteria)
    : classes_(std::move(class_names)), targets_(std::move(regression_targets)), criteria_(std::move(criteria)) {
  keys_ = {"jets", "jets_exact", "slots", "slots_correct", "notnull_tp", "notnull_true", "notnull_pred"};
  for (size_t k = 0; k + 1 < classes_.size(); ++k)
    for (const char* s : {"_tp", "_true", "_pred"}) keys_.push_back(classes_[k] + s);
  keys_.push_back("mask_true_objects");
  keys_.push_back("mask_pred_objects");
  for (const auto& c : criteria_) {
    keys_.push_back(c.name + "_found");
    keys_.push_back(c.name + "_fake");
  }
  for (const auto& t : targets_) {
    keys_.push_back(t + "_abs");
    keys_.push_back(t + "_n");
  }
  counts_.assign(keys_.size(), 0.0);
}

size_t MaskformerMetrics::slot(const std::string& key) const {
  return static_cast<size_t>(std::find(keys_.begin(), keys_.end(), key) - keys_.begin());
}

void MaskformerMetrics::add(const torch::Tensor& class_logits, const torch::Tensor& mask_logits,
                            const torch::Tensor& target_class, const torch::Tensor& target_masks,
                            const torch::Tensor& pad_mask, const torch::Tensor& regression,
                            const torch::Tensor& target_regression) {
  torch::NoGradGuard no_grad;
  auto n = [](const torch::Tensor& t) { return t.sum().item<double>(); };
  auto& c = counts_;
  const auto pred = class_logits.detach().argmax(-1).to(torch::kCPU);
  const auto tgt = target_class.to(torch::kCPU);
  const int64_t null = static_cast<int64_t>(classes_.size()) - 1;
  c[slot("jets")] += static_cast<double>(pred.size(0));
  c[slot("jets_exact")] += n((pred == tgt).all(1));
  c[slot("slots")] += static_cast<double>(pred.numel());
  c[slot("slots_correct")] += n(pred == tgt);
  c[slot("notnull_tp")] += n((pred != null) & (tgt != null));
  c[slot("notnull_true")] += n(tgt != null);
  c[slot("notnull_pred")] += n(pred != null);
  for (int64_t k = 0; k < null; ++k) {
    const auto& name = classes_[static_cast<size_t>(k)];
    c[slot(name + "_tp")] += n((pred == k) & (tgt == k));
    c[slot(name + "_true")] += n(tgt == k);
    c[slot(name + "_pred")] += n(pred == k);
  }

  auto held = mask_logits.detach().to(torch::kCPU).sigmoid() > 0.5;
  if (pad_mask.defined()) held = held & pad_mask.to(torch::kCPU).logical_not().unsqueeze(1);
  held = held & (pred != null).unsqueeze(-1);
  const auto truth = target_masks.to(torch::kCPU).to(torch::kBool);
  const auto both = (held & truth).sum(-1).to(torch::kDouble);
  const auto n_pred = held.sum(-1).to(torch::kDouble), n_true = truth.sum(-1).to(torch::kDouble);
  const auto eff = both / n_true, pur = both / n_pred;  // NaN for empty masks: never passes
  const auto pred_valid = n_pred > 0, true_valid = n_true > 0;
  c[slot("mask_true_objects")] += n(true_valid);
  c[slot("mask_pred_objects")] += n(pred_valid);
  for (const auto& cr : criteria_) {
    const auto pass = (eff >= cr.recall) & (pur >= cr.purity);
    c[slot(cr.name + "_found")] += n(pred_valid & pass & true_valid);
    c[slot(cr.name + "_fake")] += n(pred_valid & pass.logical_not());
  }

  if (regression.defined() && target_regression.defined()) {
    const auto real = tgt != null;
    for (size_t i = 0; i < targets_.size(); ++i) {
      const auto p = regression.detach().to(torch::kCPU, torch::kDouble).select(-1, static_cast<int64_t>(i));
      const auto t = target_regression.to(torch::kCPU, torch::kDouble).select(-1, static_cast<int64_t>(i));
      const auto ok = real & torch::isfinite(t) & torch::isfinite(p);
      c[slot(targets_[i] + "_abs")] += n((p - t).abs().masked_fill(ok.logical_not(), 0.0));
      c[slot(targets_[i] + "_n")] += n(ok);
    }
  }
}

std::map<std::string, double> MaskformerMetrics::compute() const {
  auto at = [&](const std::string& k) { return counts_[slot(k)]; };
  auto ratio = [](double a, double b) { return b > 0 ? a / b : std::nan(""); };
  std::map<std::string, double> m;
  m["class_exact_match"] = ratio(at("jets_exact"), at("jets"));
  m["class_accuracy_micro"] = ratio(at("slots_correct"), at("slots"));
  m["notnull_eff"] = ratio(at("notnull_tp"), at("notnull_true"));
  m["notnull_pur"] = ratio(at("notnull_tp"), at("notnull_pred"));
  for (size_t k = 0; k + 1 < classes_.size(); ++k) {
    const auto& name = classes_[k];
    m[name + "_eff"] = ratio(at(name + "_tp"), at(name + "_true"));
    m[name + "_pur"] = ratio(at(name + "_tp"), at(name + "_pred"));
  }
  for (const auto& cr : criteria_) {
    m["query_" + cr.name + "_match_eff"] = ratio(at(cr.name + "_found"), at("mask_true_objects"));
    m["query_" + cr.name + "_match_fake"] = ratio(at(cr.name + "_fake"), at("mask_pred_objects"));
  }
  for (const auto& t : targets_) m["query_" + t + "_mae"] = ratio(at(t + "_abs"), at(t + "_n"));
  return m;
}

}  // namespace salt::models
