// One batch as the loader hands it to the model: the contract between lib/data
// and lib/models. Keys are input names as in `data.variables` (e.g. "jets",
// "tracks"); the global object ("jets") has no pad mask.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>

namespace salt {

struct Batch {
  // input name -> float32 [B, F] (global object) or [B, L, F] (constituents),
  // columns in `data.variables[input]` order, padded slots zero, NOT normalised
  // (InputNorm lives in the model, like salt).
  std::map<std::string, torch::Tensor> inputs;
  // constituent input name -> bool [B, L], true = padded (salt's convention).
  std::map<std::string, torch::Tensor> pad_masks;
  // input name -> label name -> [B] or [B, L]; integer labels as int64, float
  // labels (regression targets) as float32.
  std::map<std::string, std::map<std::string, torch::Tensor>> labels;
  // first row of this batch in the file, and its number of rows
  int64_t start = 0;
  int64_t size = 0;
};

}  // namespace salt
