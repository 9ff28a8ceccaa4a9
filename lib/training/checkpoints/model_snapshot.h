// A model's weights and buffers, copied now and put back when the snapshot goes
// (every way out, exceptions included): what a tuner's trial changes, undone, as
// Lightning's tuners restore the checkpoint they saved first. The generators are
// not part of it: Lightning's LearningRateFinder isolates them, its BatchSizeFinder
// does not (training/tuners/tuner_trials.h).
#pragma once
#include <torch/torch.h>

#include <vector>

namespace salt::training {

class ModelSnapshot {
 public:
  explicit ModelSnapshot(torch::nn::Module& model);
  ~ModelSnapshot();
  ModelSnapshot(const ModelSnapshot&) = delete;
  ModelSnapshot& operator=(const ModelSnapshot&) = delete;

 private:
  torch::nn::Module& model_;
  std::vector<torch::Tensor> parameters_, buffers_;
  bool training_;
};

}  // namespace salt::training
