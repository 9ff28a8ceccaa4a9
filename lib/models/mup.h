// muP as salt uses Microsoft's mup package (salt.utils.muP_utils): base shapes
// from a base and a delta proxy model (make_base_shapes), applied to the full model
// (set_base_shapes with rescale_params), the readout (the encoder's out_proj, a
// MuReadout) and MuAdamW's per-parameter learning rates.
//
// A dimension is a "width" when it differs between the base and delta proxies; the
// shapes file stores its base size (null for fixed dimensions). In the full model a
// parameter's width multiplier is (size / base size) of its last width dimension.
#pragma once
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace salt::models {

class SaltWrapperImpl;

// Parameter name (as in SaltModel, e.g. encoder.layers.0.attn.fn.in_proj_weight) ->
// per dimension: the base size of a width dimension, nullopt for a fixed one.
using BaseShapes = std::vector<std::pair<std::string, std::vector<std::optional<int64_t>>>>;

// mup's make_base_shapes(base, delta). UsageError when the proxies' parameter names
// or ranks differ (the widths must change sizes only).
BaseShapes make_base_shapes(const torch::OrderedDict<std::string, torch::Tensor>& base,
                            const torch::OrderedDict<std::string, torch::Tensor>& delta);

// mup's YAML file (its header comment, `name: [null, 256]` per parameter), written
// to a temp name and renamed.
void write_base_shapes(const std::filesystem::path& file, const BaseShapes& shapes);
// UsageError naming the file when it is missing or not a base shapes file.
BaseShapes read_base_shapes(const std::filesystem::path& file);

// Width multipliers of one parameter against its base shapes.
struct InfShape {
  std::vector<int64_t> dims;
  std::vector<std::optional<int64_t>> base;  // width dims only (a base equal to the size counts as fixed, as in mup)
  int ninf() const;
  double width_mult() const;          // of the last width dimension; 1 without one
  double dim_mult(size_t i) const;    // dims[i] / base[i] for a width dimension, else 1
};

// mup's set_base_shapes(model, file, rescale_params=True) on wrapper.model:
// checks the file names exactly the model's parameters with the same ranks
// (UsageError naming `file` and the first difference), checks that only the
// encoder's out_proj (the MuReadout) goes from a width to a fixed size, scales
// every other Linear's bias by sqrt(fan-in multiplier) and the readout's weight
// and bias by sqrt(its multiplier), and sets the readout to divide its input by
// the multiplier. Stores MuAdamW's groups in wrapper.mup_width_mults: every
// parameter with two width dimensions (wrapper names, model.…) -> its multiplier.
void apply_base_shapes(SaltWrapperImpl& wrapper, const BaseShapes& shapes, const std::string& file);

}  // namespace salt::models
