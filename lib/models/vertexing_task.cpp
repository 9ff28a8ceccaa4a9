#include "models/vertexing_task.h"

#include "core/errors.h"
#include "models/vertex_assignment.h"

namespace salt::models {

torch::Tensor edge_adjacency(const torch::Tensor& pad_mask, int64_t batch, int64_t length) {
  auto valid = pad_mask.defined() ? pad_mask.logical_not()
                                  : torch::ones({batch, length}, torch::dtype(torch::kBool));
  auto eye = torch::eye(length, torch::dtype(torch::kBool).device(valid.device()));
  return valid.unsqueeze(-1) & valid.unsqueeze(-2) & eye.logical_not().unsqueeze(0);
}

VertexingTaskImpl::VertexingTaskImpl(const TaskOptions& task, std::string label)
    : TaskImpl("VertexingTask", task), label_(std::move(label)) {
  if (loss->kind() != LossKind::BCEWithLogits)
    throw UsageError("task '" + name() + "': VertexingTask needs BCEWithLogitsLoss, got " +
                     loss_class_name(loss->kind()));
  if (net->output_size() != 1)
    throw UsageError("task '" + name() + "': VertexingTask needs output_size 1, got " +
                     std::to_string(net->output_size()));
}

std::string VertexingTaskImpl::origin_label() const {
  auto out = label_;
  auto pos = out.find("VertexIndex");
  if (pos != std::string::npos) out.replace(pos, std::string("VertexIndex").size(), "OriginLabel");
  return out;
}

TaskOutput VertexingTaskImpl::forward(const torch::Tensor& x, const torch::Tensor& pad_mask,
                                      const torch::Tensor& context, const Labels* labels) {
  if (x.dim() != 3) throw UsageError("task '" + name() + "': VertexingTask needs constituent inputs, not '" + input_name() + "'");
  const int64_t b = x.size(0), n = x.size(1);
  auto adjacency = edge_adjacency(pad_mask, b, n);
  // nonzero() walks (jet, i, j) in row-major order, the order salt's boolean indexing gives.
  auto idx = adjacency.nonzero();
  auto jet = idx.select(1, 0), i = idx.select(1, 1), j = idx.select(1, 2);
  auto edges = torch::cat({x.index({jet, i}), x.index({jet, j})}, -1);
  torch::Tensor ctx;
  if (context.defined()) ctx = context.index_select(0, jet);

  TaskOutput out;
  out.preds = net->forward(edges, ctx);
  if (labels)
    out.loss = edge_loss(out.preds, label(*labels, label_), label(*labels, origin_label()), adjacency) * weight();
  return out;
}

torch::Tensor VertexingTaskImpl::edge_loss(const torch::Tensor& logits, const torch::Tensor& vertex_raw,
                                           const torch::Tensor& origin_raw, const torch::Tensor& adjacency) {
  auto vertex = vertex_raw.to(torch::kLong);
  auto negative = vertex < 0;
  auto match = (vertex.unsqueeze(-1) == vertex.unsqueeze(-2)) & (negative.unsqueeze(-1) | negative.unsqueeze(-2)).logical_not();
  auto target = match.masked_select(adjacency).to(logits.scalar_type());

  auto per_edge = loss->forward(logits.reshape({-1}), target);

  auto origin = origin_raw.to(torch::kLong);
  auto heavy = ((origin == 3) | (origin == 4) | (origin == 5)).to(torch::kLong);
  auto s = heavy - (origin == 1).to(torch::kLong);  // 1 HF, -1 fake, 0 other
  // Bitwise AND on the integers as salt does: 1&1 = 1, 1&-1 = 1, -1&-1 = -1, 0&x = 0.
  auto edge_weight = 1 + torch::bitwise_and(s.unsqueeze(-1), s.unsqueeze(-2)).masked_select(adjacency);

  // salt divides by the number of positive edges with no guard (inf/NaN when a
  // batch has none); we divide by at least 1 so such batches stay finite.
  auto num_positive = target.sum().clamp_min(1.0);
  return (per_edge * edge_weight).sum() / num_positive;
}

PredictionColumns VertexingTaskImpl::predict(const torch::Tensor& preds, const torch::Tensor& pad_mask, const Labels*,
                                             const std::string&) const {
  auto mask = pad_mask;
  if (!mask.defined()) throw UsageError("task '" + name() + "': vertex assignment needs the constituent pad mask");
  return {{"VertexIndex"}, vertex_assignment(preds, mask).unsqueeze(-1)};
}

}  // namespace salt::models
