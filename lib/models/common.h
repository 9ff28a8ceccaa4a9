// Types shared by the model zoo: the label map (as in salt::Batch), the ordered
// constituent segments that make up one concatenated sequence, and small masked
// tensor helpers.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace salt::models {

// input name -> label name -> tensor ([B] or [B, L]); same layout as salt::Batch::labels.
using Labels = std::map<std::string, std::map<std::string, torch::Tensor>>;
// input name -> tensor; same layout as salt::Batch::inputs / pad_masks.
using TensorMap = std::map<std::string, torch::Tensor>;

// One constituent type inside a concatenated sequence: its name and its pad mask
// (bool [B, L_i], true = padded). "REGISTERS" names the encoder's register tokens.
struct Segment {
  std::string name;
  torch::Tensor mask;
};

// Several constituent types concatenated along the sequence dimension, in a fixed
// order (the order of the init nets, then the registers).
struct Sequence {
  torch::Tensor x;                // [B, L, D]
  std::vector<Segment> segments;  // masks in the order of x's slices

  // All segment masks concatenated: [B, L].
  torch::Tensor mask() const;
  // The slice of x belonging to `name` ([B, L_name, D]); throws UsageError if absent.
  torch::Tensor slice(const std::string& name) const;
  const Segment* find(const std::string& name) const;
};

inline const char* kRegisters = "REGISTERS";

// Softmax along `dim` that ignores masked (true) entries and returns 0 for them;
// a slice with every entry masked gives all zeros, never NaN. `mask` must be
// broadcastable to x.
torch::Tensor masked_softmax(const torch::Tensor& x, const torch::Tensor& mask, int64_t dim);

// cat([context broadcast over x's middle dims, x], -1): salt puts context first.
torch::Tensor attach_context(const torch::Tensor& x, const torch::Tensor& context);

}  // namespace salt::models
