// salt's get_maskformer_outputs (salt/models/maskformer.py), what its ONNX export
// gives Athena for a MaskFormer: objects whose null probability exceeds 0.5 are
// dropped (no mask, NaN regression), the rest ordered by their first regression
// target (pt for vertexing) in descending order; the leading object's regression
// values, and for each constituent the index (in that order) of the object whose
// mask holds it (p > 0.5; the last such object when several do, -2 when none),
// as salt's indices_from_mask writes it.
//
// salt's eager code has a special case for a jet where no object is null (dummy
// outputs); it is a Python branch that its traced ONNX graph does not contain, so
// neither does salt-cpp: every jet follows the general rule.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "export/fwd.h"

namespace salt::models {

struct MaskformerOutputs {
  torch::Tensor leading;  // [B, R] float: the leading object's regression (NaN when every object is null)
  torch::Tensor indices;  // [B, L] int64: each constituent's object, -2 for none
};

// class_probs [B, M, C] (the null class last), mask_logits [B, M, L], regression
// [B, M, R] in physical units. Padded constituents should carry very negative
// logits (they then belong to no object).
MaskformerOutputs maskformer_outputs(const torch::Tensor& class_probs, const torch::Tensor& mask_logits,
                                     const torch::Tensor& regression, double max_null = 0.5);

// The same for one jet in an ONNX graph: class_probs [M, C], masks [M, L],
// regression [M, R] -> R scalar leading values and the indices [L] as int8.
struct OnnxMaskformerOutputs {
  std::vector<ox::Value> leading;
  ox::Value indices;
};
OnnxMaskformerOutputs maskformer_outputs_onnx(ox::Graph& g, const ox::Value& class_probs, const ox::Value& masks,
                                              const ox::Value& regression, int64_t num_objects, int64_t num_regression);

}  // namespace salt::models
