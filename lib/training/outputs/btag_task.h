// The b-tagging task of a model: the global object's classification task with
// bjets, cjets and ujets among its classes, and its outputs as the probabilities
// of those three plus each jet's flavour. `salt test`'s performance table and the
// WorkingPoints callback read the same numbers through it.
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "data/batch.h"
#include "training/outputs/performance.h"

namespace salt::models {
class ClassificationTaskImpl;
class SaltWrapperImpl;
}  // namespace salt::models

namespace salt::training {

struct BtagTask {
  std::shared_ptr<models::ClassificationTaskImpl> task;  // null: the model has none
  int ib = -1, ic = -1, iu = -1;

  // [jets, 3] float32 probabilities (b, c, light), on the logits' device, and the
  // jets' flavours (int64 Flavour values) beside them.
  std::pair<torch::Tensor, torch::Tensor> probabilities(const torch::Tensor& logits, const Batch& batch) const;
};

// The task named `name`, or (empty) the first that fits; a named task that is not
// a classification task of the global object with those classes is a UsageError.
BtagTask find_btag_task(models::SaltWrapperImpl& model, const std::string& name = "");

}  // namespace salt::training
