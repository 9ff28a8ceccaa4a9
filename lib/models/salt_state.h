// Entries of salt's state_dict that the LibTorch module tree does not have:
// a module shared by several parents appears in torch's state_dict under every
// path (salt's MaskDecoder layers each hold the decoder's mask_net), and buffers
// salt keeps that salt-cpp recomputes from the config (MaskFormerLoss's
// empty_weight). Checkpoints write them so that salt's strict load_state_dict
// accepts salt-cpp's weights, and reading accepts them from salt's checkpoints.
#pragma once
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace salt::models {

class SaltStateExtras {
 public:
  virtual ~SaltStateExtras() = default;
  // (alias, canonical) state keys relative to this module: the same tensor twice.
  virtual std::vector<std::pair<std::string, std::string>> state_aliases() const { return {}; }
  // (key, value) relative to this module: written for salt, not read back.
  virtual std::vector<std::pair<std::string, torch::Tensor>> salt_only_state() const { return {}; }
};

}  // namespace salt::models
