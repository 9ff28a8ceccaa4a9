// MaskDecoder's ONNX export: forward() for one jet whose constituents are all real,
// so the only masking left is mask attention. salt's appended zero constituent is
// kept: it is a key every query may attend to, and it lets a jet without
// constituents run.
#include "export/graph.h"
#include "export/layers.h"
#include "models/maskformer/mask_decoder.h"

namespace salt::models {

namespace {

const std::vector<int64_t> kTranspose2d{1, 0};

// salt's get_masks for one jet: mask_net(q) [M, E] . x [L, E]^T -> [M, L].
ox::Value mask_logits_onnx(ox::Graph& g, Dense& mask_net, const ox::Value& q, const ox::Value& x) {
  return g.op("MatMul", {mask_net->to_onnx(g, q), g.op("Transpose", {x}, {{"perm", kTranspose2d}})});
}

}  // namespace

std::pair<ox::Value, ox::Value> MaskDecoderLayerImpl::to_onnx(ox::Graph& g, const ox::Value& q_in, const ox::Value& kv_in) {
  ox::Value q = q_in, kv = kv_in, allowed;
  if (options_.mask_attention()) {
    // As forward(): a query attends to the constituents its mask holds with p > 0.9,
    // or to all of them when it holds none.
    auto held = g.op("Greater", {g.op("Sigmoid", {mask_logits_onnx(g, mask_net_, q, kv)}), g.scalar(0.9f)});
    auto most = g.op("ReduceMax", {g.op("Cast", {held}, {{"to", int64_t{1}}})},  // 1 = FLOAT
                     {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}});
    allowed = g.op("Or", {held, g.op("Less", {most, g.scalar(0.5f)})});
  }
  q = g.op("Add", {q, q_ca->cross_to_onnx(g, q, kv, allowed)});
  q = g.op("Add", {q, q_sa->to_onnx(g, q)});
  q = g.op("Add", {q, q_dense->to_onnx(g, q)});
  if (options_.bidirectional_ca()) {
    kv = g.op("Add", {kv, kv_ca->cross_to_onnx(g, kv, q)});
    kv = g.op("Add", {kv, kv_dense->to_onnx(g, kv)});
  }
  return {ox::layer_norm(g, q, norm1), ox::layer_norm(g, kv, norm2)};
}

OnnxObjects MaskDecoderImpl::to_onnx(ox::Graph& g, const ox::Value& x_in) {
  auto q = ox::layer_norm(g, g.constant(inital_q.detach(), "inital_q"), norm1);
  auto x = ox::layer_norm(g, x_in, norm2);
  auto count = ox::dim0(g, x_in);
  x = g.op("Concat", {x, g.constant(torch::zeros({1, options_.embed_dim}), "dummy_constituent")}, {{"axis", int64_t{0}}});
  for (auto& layer : *layers) std::tie(q, x) = layer->as<MaskDecoderLayer>()->to_onnx(g, q, x);

  OnnxObjects out;
  out.embed = q;
  auto logits = class_net->to_onnx(g, q);
  if (class_net->output_size() == 1) {
    auto s = g.op("Sigmoid", {logits});
    out.class_probs = g.op("Concat", {g.op("Sub", {g.scalar(1.f), s}), s}, {{"axis", int64_t{-1}}});
  } else {
    out.class_probs = g.op("Softmax", {logits}, {{"axis", int64_t{-1}}});
  }
  // The masks over the real constituents: the dummy's column dropped.
  out.masks = g.op("Slice", {mask_logits_onnx(g, mask_net, q, x), g.ints({0}), count, g.ints({1})});
  return out;
}

}  // namespace salt::models
