#include "models/maskformer/maskformer_outputs.h"

#include <limits>

#include "export/graph.h"

namespace salt::models {

namespace {
constexpr int64_t kNoObject = -2;  // salt's indices_from_mask noindex
}

MaskformerOutputs maskformer_outputs(const torch::Tensor& class_probs, const torch::Tensor& mask_logits,
                                     const torch::Tensor& regression, double max_null) {
  torch::NoGradGuard no_grad;
  const auto null = class_probs.select(-1, class_probs.size(-1) - 1) > max_null;  // [B, M]
  const auto held = (mask_logits.sigmoid() > 0.5) & null.logical_not().unsqueeze(-1);
  const auto reg = regression.to(torch::kFloat32).masked_fill(null.unsqueeze(-1), NAN);
  // Descending by the first target, null objects last. A stable sort, as ONNX's
  // TopK breaks ties by the lower index; ties only arise between null objects,
  // whose order changes no output.
  const auto key = reg.select(-1, 0).masked_fill(null, -std::numeric_limits<float>::infinity());
  const auto order = std::get<1>(key.sort(/*stable=*/c10::optional<bool>(true), /*dim=*/1, /*descending=*/true));
  MaskformerOutputs out;
  out.leading = reg.gather(1, order.unsqueeze(-1).expand_as(reg)).select(1, 0);
  const auto sorted = held.gather(1, order.unsqueeze(-1).expand_as(held));  // [B, M, L]
  // The last object holding a constituent wins, as salt's index assignment writes
  // them in object order: the largest such index.
  const auto k = torch::arange(sorted.size(1), torch::kLong).view({1, -1, 1}).expand(sorted.sizes());
  out.indices = torch::where(sorted, k, torch::full({}, kNoObject, torch::kLong)).amax(1);
  return out;
}

OnnxMaskformerOutputs maskformer_outputs_onnx(ox::Graph& g, const ox::Value& class_probs, const ox::Value& masks,
                                              const ox::Value& regression, int64_t num_objects, int64_t num_regression) {
  auto null = g.op("Greater", {g.op("Gather", {class_probs, g.scalar_int(-1)}, {{"axis", int64_t{1}}}), g.scalar(0.5f)});  // [M]
  auto null_col = g.op("Unsqueeze", {null, g.ints({1})});  // [M, 1]
  auto held = g.op("And", {g.op("Greater", {g.op("Sigmoid", {masks}), g.scalar(0.5f)}), g.op("Not", {null_col})});
  auto reg = g.op("Where", {null_col, g.scalar(std::numeric_limits<float>::quiet_NaN()), regression});
  auto first = g.op("Gather", {regression, g.scalar_int(0)}, {{"axis", int64_t{1}}});  // [M]
  auto key = g.op("Where", {null, g.scalar(-std::numeric_limits<float>::infinity()), first});
  auto order = g.op_n("TopK", {key, g.ints({num_objects})}, 2, {{"axis", int64_t{0}}, {"largest", int64_t{1}}, {"sorted", int64_t{1}}})[1];

  OnnxMaskformerOutputs out;
  auto leading = g.op("Gather", {reg, g.op("Gather", {order, g.scalar_int(0)})}, {{"axis", int64_t{0}}});  // [R]
  for (int64_t r = 0; r < num_regression; ++r) out.leading.push_back(g.op("Gather", {leading, g.scalar_int(r)}));
  auto sorted = g.op("Gather", {held, order}, {{"axis", int64_t{0}}});  // [M, L]
  auto k = g.constant(torch::arange(num_objects, torch::kLong).view({-1, 1}), "object_index");
  auto index = g.op("Where", {sorted, k, g.scalar_int(kNoObject)});
  out.indices = g.op("Cast", {g.op("ReduceMax", {index}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}})},
                     {{"to", int64_t{3}}});  // 3 = INT8
  return out;
}

}  // namespace salt::models
