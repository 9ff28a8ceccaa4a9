#include "training/checkpoints/model_snapshot.h"

namespace salt::training {

ModelSnapshot::ModelSnapshot(torch::nn::Module& model) : model_(model), training_(model.is_training()) {
  torch::NoGradGuard no_grad;
  for (const auto& p : model.parameters()) parameters_.push_back(p.detach().clone());
  for (const auto& b : model.buffers()) buffers_.push_back(b.detach().clone());
}

ModelSnapshot::~ModelSnapshot() {
  torch::NoGradGuard no_grad;
  std::size_t i = 0;
  for (auto& p : model_.parameters()) {
    p.copy_(parameters_.at(i++));
    p.mutable_grad() = torch::Tensor();  // a trial's (or a failed step's) gradients go too
  }
  i = 0;
  for (auto& b : model_.buffers()) b.copy_(buffers_.at(i++));
  model_.train(training_);
}

}  // namespace salt::training
