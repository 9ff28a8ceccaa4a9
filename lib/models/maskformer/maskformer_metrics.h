// salt's MaskformerMetrics (callbacks/maskformer_metrics.py, utils/mask_utils.py),
// counted over a whole validation epoch. Objects are in target order (after the
// matching); the predicted class is the argmax of the class logits (the last class
// is null). Per object m of a jet:
//   predicted mask  = sigmoid(mask logits) > 0.5 on valid constituents, empty when
//                     the object is predicted null;
//   efficiency/purity = |pred & true| / |true|, |pred & true| / |pred|;
//   a criterion (R, P) passes when efficiency >= R and purity >= P.
// query_<c>_match_eff = passing predictions among true objects with constituents;
// query_<c>_match_fake = failing ones among predictions with constituents.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace salt::models {

struct MaskCriterion {
  std::string name;
  double recall = 1, purity = 1;
};

class MaskformerMetrics {
 public:
  // class_names: the object classes, null last; targets: the regression targets'
  // names (for query_<t>_mae). Criteria default to salt's perfect (1, 1) and loose (0.5, 0.5).
  MaskformerMetrics(std::vector<std::string> class_names, std::vector<std::string> regression_targets = {},
                    std::vector<MaskCriterion> criteria = {{"perfect", 1, 1}, {"loose", 0.5, 0.5}});

  // class_logits [B, M, C], mask_logits [B, M, L], target_class [B, M], target_masks
  // [B, M, L], pad_mask [B, L] (true = padded; may be undefined); regression [B, M, R]
  // predictions and targets in physical units (undefined: none).
  void add(const torch::Tensor& class_logits, const torch::Tensor& mask_logits, const torch::Tensor& target_class,
           const torch::Tensor& target_masks, const torch::Tensor& pad_mask, const torch::Tensor& regression = {},
           const torch::Tensor& target_regression = {});

  // The sums, in a fixed order, to add over processes, and back.
  std::vector<double> counts() const { return counts_; }
  void set_counts(std::vector<double> c) { counts_ = std::move(c); }

  // salt's names: class_exact_match, class_accuracy_micro, <class>_eff/_pur,
  // notnull_eff/_pur, query_<criterion>_match_eff/_fake, query_<target>_mae.
  std::map<std::string, double> compute() const;
  void reset() { counts_.assign(counts_.size(), 0.0); }

 private:
  size_t slot(const std::string& key) const;
  std::vector<std::string> classes_, targets_;
  std::vector<MaskCriterion> criteria_;
  std::vector<std::string> keys_;
  std::vector<double> counts_;
};

}  // namespace salt::models
