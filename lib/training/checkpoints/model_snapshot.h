// A model's weights, buffers and the random generators, copied now and put back
// when the snapshot goes (every way out, exceptions included): what a tuner's
// trial changes, undone, so the run then trains exactly as it would have
// without it (Lightning restores a checkpoint and isolates the RNG).
#pragma once
#include <torch/torch.h>

#include <vector>

#include "training/checkpoints/rng_state.h"

namespace salt::training {

class ModelSnapshot {
 public:
  ModelSnapshot(torch::nn::Module& model, const torch::Device& device);
  ~ModelSnapshot();
  ModelSnapshot(const ModelSnapshot&) = delete;
  ModelSnapshot& operator=(const ModelSnapshot&) = delete;

 private:
  torch::nn::Module& model_;
  std::vector<torch::Tensor> parameters_, buffers_;
  RngSnapshot rng_;
  bool training_;
};

}  // namespace salt::training
