#include "training/outputs/btag_task.h"

#include <algorithm>

#include "core/errors.h"
#include "models/salt_wrapper.h"
#include "models/tasks/classification_task.h"

namespace salt::training {

std::pair<torch::Tensor, torch::Tensor> BtagTask::probabilities(const torch::Tensor& logits,
                                                                const Batch& batch) const {
  const auto columns = torch::tensor({int64_t{ib}, int64_t{ic}, int64_t{iu}}, torch::kLong).to(logits.device());
  auto probs = torch::softmax(logits.detach().to(torch::kFloat32), -1).index_select(-1, columns);
  const auto& raw = batch.labels.at(task->input_name()).at(task->label_names()[0]);
  // On the host, where the task's label maps live; a batch's labels are small.
  const auto labels = task->prepare_labels(raw.to(torch::kCPU), torch::Tensor()).to(torch::kInt64);
  auto flavour = torch::full_like(labels, static_cast<int64_t>(Flavour::kOther));
  flavour.masked_fill_(labels == ib, static_cast<int64_t>(Flavour::kB));
  flavour.masked_fill_(labels == ic, static_cast<int64_t>(Flavour::kC));
  flavour.masked_fill_(labels == iu, static_cast<int64_t>(Flavour::kLight));
  return {probs, flavour.to(logits.device())};
}

BtagTask find_btag_task(models::SaltWrapperImpl& model, const std::string& name) {
  std::string tasks;
  for (const auto& t : model.model->task_list()) {
    tasks += (tasks.empty() ? "" : ", ") + t->name();
    if (!name.empty() && t->name() != name) continue;
    auto cls = std::dynamic_pointer_cast<models::ClassificationTaskImpl>(t);
    const auto& names = cls ? cls->class_names() : std::vector<std::string>{};
    const auto index = [&](const char* n) {
      const auto it = std::find(names.begin(), names.end(), n);
      return it == names.end() ? -1 : static_cast<int>(it - names.begin());
    };
    if (cls && cls->input_name() == model.model->global_object() && index("bjets") >= 0 && index("cjets") >= 0 &&
        index("ujets") >= 0)
      return BtagTask{cls, index("bjets"), index("cjets"), index("ujets")};
    if (!name.empty())
      throw UsageError("task '" + name + "' is not a classification of " + model.model->global_object() +
                       " with classes bjets, cjets and ujets");
  }
  if (!name.empty()) throw UsageError("the model has no task '" + name + "' (its tasks: " + tasks + ")");
  return {};
}

}  // namespace salt::training
