#include "models/tasks/vertexing_task.h"

#include "models/registry.h"

#include "core/errors.h"
#include "models/packing/host_read.h"
#include "models/packing/static_rows.h"
#include "models/tasks/vertex_assignment.h"

#include "export/layers.h"

namespace salt::models {

torch::Tensor edge_adjacency(const torch::Tensor& pad_mask, int64_t batch, int64_t length) {
  auto valid = pad_mask.defined() ? pad_mask.logical_not()
                                  : torch::ones({batch, length}, torch::dtype(torch::kBool));
  auto eye = torch::eye(length, torch::dtype(torch::kBool).device(valid.device()));
  return valid.unsqueeze(-1) & valid.unsqueeze(-2) & eye.logical_not().unsqueeze(0);
}

namespace {
// The adjacency's true entries (ordered pairs of distinct valid tracks of one jet),
// counted on the host: from the index's host counts (its mask's host copy), or from
// the shape when every slot is valid. -1 when only the device knows.
int64_t pair_count(const torch::Tensor& pad_mask, const TokenIndex& idx) {
  if (!pad_mask.defined()) return idx.batch * idx.length * std::max<int64_t>(idx.length - 1, 0);
  if (!idx.host_counts.defined()) return -1;
  return (idx.host_counts * (idx.host_counts - 1)).sum().item<int64_t>();
}
}  // namespace

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
                                      const torch::Tensor& context, const Labels* labels,
                                      const ForwardContext& forward_context) {
  if (x.dim() != 3) throw UsageError("task '" + name() + "': VertexingTask needs constituent inputs, not '" + input_name() + "'");
  auto mask = pad_mask.defined() ? pad_mask : torch::zeros({x.size(0), x.size(1)}, torch::dtype(torch::kBool).device(x.device()));
  auto idx = TokenIndex::from_mask(mask, forward_context);
  return forward_packed(idx.gather(x), idx, pad_mask, context, labels, forward_context);
}

TaskOutput VertexingTaskImpl::forward_packed(const torch::Tensor& rows, const TokenIndex& idx,
                                             const torch::Tensor& pad_mask, const torch::Tensor& context,
                                             const Labels* labels, const ForwardContext& forward_context) {
  auto adjacency = edge_adjacency(pad_mask, idx.batch, idx.length);
  const auto edges = edges_of(adjacency, idx, pair_count(pad_mask, idx), forward_context);
  TaskOutput out;
  out.preds = edge_logits(rows, idx, context, edges);
  if (labels)
    out.loss = edge_loss_at(out.preds, label(*labels, label_), label(*labels, origin_label()), edges.pairs,
                            edges.valid) *
               weight();
  return out;
}

VertexingTaskImpl::Edges VertexingTaskImpl::edges_of(const torch::Tensor& adjacency, const TokenIndex& idx,
                                                     int64_t count, const ForwardContext& context) {
  const int64_t n = idx.length;
  // Ascending flat indices walk (jet, i, j) in row-major order, the order salt's
  // boolean indexing gives.
  const auto adjacent = adjacency.reshape({-1});
  Edges edges;
  const bool padded = idx.row_valid.defined();  // static rows: padding edges too
  if (padded) {
    const int64_t real = count >= 0 ? count : host_read<int64_t>(adjacent.sum());
    const int64_t capacity = edge_capacity(real, idx.batch, n);
    if (context.static_rows) context.static_rows->note(capacity);
    edges.pairs = true_entries_first(adjacent).narrow(0, 0, capacity);
    edges.valid = adjacent.index_select(0, edges.pairs);
  } else {
    edges.pairs = count >= 0 ? nonzero_counted(adjacent, count) : adjacent.nonzero().reshape({-1});
  }
  const int64_t divisor = std::max<int64_t>(n, 1);  // no pairs at all when n == 0
  auto i = edges.pairs.div(divisor, "floor").remainder(divisor), j = edges.pairs.remainder(divisor);
  edges.jet = edges.pairs.div(divisor * divisor, "floor");
  auto slot_i = edges.jet * n + i, slot_j = edges.jet * n + j;
  // Padded slot -> packed row.
  const auto& flat = idx.flat;
  // Slots without a row (-1) are read by padding edges only: row 0 for those.
  const int64_t no_row = padded ? 0 : -1;
  auto row_of = torch::full({idx.batch * n}, no_row, flat.options()).index_copy_(0, flat, torch::arange(idx.size(), flat.options()));
  edges.row_i = row_of.index_select(0, slot_i);
  edges.row_j = row_of.index_select(0, slot_j);
  // Packed rows run in (jet, slot) order (TokenIndex::from_mask), so row_i does not
  // decrease; each track sends and receives as many edges as its adjacency row holds.
  auto counts = adjacency.sum(-1).reshape({-1}).index_select(0, flat);
  const bool kernel = context.kernels.segment_sum_kernel;
  edges.senders = {counts, torch::Tensor(), kernel};
  // The adjacency is symmetric: the edges (jet, j, i), in the order of their (jet, i, j),
  // list every edge receiver by receiver.
  auto position = torch::full({idx.batch * n * n}, no_row, flat.options())
                      .index_copy_(0, edges.pairs, torch::arange(edges.pairs.size(0), flat.options()));
  edges.receivers = {counts, position.index_select(0, slot_j * n + i), kernel};
  return edges;
}

torch::Tensor VertexingTaskImpl::edge_logits(const torch::Tensor& rows, const TokenIndex& idx,
                                             const torch::Tensor& context, const Edges& edges) {
  const auto &row_i = edges.row_i, &row_j = edges.row_j, &jet = edges.jet;
  const int64_t c = net->context_size(), d = rows.size(1);
  if (c > 0 && !context.defined()) throw UsageError("Dense: expected a context vector, none given");
  if (net->input_size() != 2 * d)
    throw UsageError("task '" + name() + "': edge features have " + std::to_string(2 * d) +
                     " values (2 x " + std::to_string(d) + "), the network expects input_size " +
                     std::to_string(net->input_size()));
  if (!net->first_layer_is_linear()) {
    auto edges = torch::cat({rows.index_select(0, row_i), rows.index_select(0, row_j)}, -1);
    return net->forward(edges, c > 0 ? context.index_select(0, jet) : torch::Tensor());
  }
  auto first = net->first_linear();
  const auto& w = first->weight;  // [H, C + 2D]: context, x_i, x_j
  const int64_t hidden = w.size(0);
  // Per token: [W_i x | W_j x] in one product, [N, 2H].
  auto p = torch::nn::functional::linear(rows, torch::cat({w.narrow(1, c, d), w.narrow(1, c + d, d)}, 0));
  auto p_i = p.narrow(1, 0, hidden), p_j = p.narrow(1, hidden, hidden);
  // Per jet: W_ctx ctx + b, added to the sender's term once per token.
  if (c > 0)
    p_i = p_i + gather_rows(torch::nn::functional::linear(context, w.narrow(1, 0, c), first->bias), idx.jet);
  else if (first->bias.defined())
    p_i = p_i + first->bias;
  // With a ReLU next, the gathers, the add and the ReLU as one step, which a card with
  // salt-cpp's edge kernels takes in one pass (gather_pair_relu).
  if (net->relu_follows_first())
    return net->forward_after_first_relu(gather_pair_relu(p_i, p_j, row_i, row_j, edges.senders, edges.receivers));
  auto h = gather_rows(p_i, row_i, edges.senders);
  h.add_(gather_rows(p_j, row_j, edges.receivers));
  return net->forward_after_first(h);
}

torch::Tensor VertexingTaskImpl::edge_loss(const torch::Tensor& logits, const torch::Tensor& vertex_raw,
                                           const torch::Tensor& origin_raw, const torch::Tensor& adjacency) {
  return edge_loss_at(logits, vertex_raw, origin_raw, adjacency.reshape({-1}).nonzero().reshape({-1}));
}

// What adjacency.masked_select gives, read at the edges' flat indices (no wait for
// the device for the output's size).
torch::Tensor VertexingTaskImpl::edge_loss_at(const torch::Tensor& logits, const torch::Tensor& vertex_raw,
                                              const torch::Tensor& origin_raw, const torch::Tensor& pairs,
                                              const torch::Tensor& valid) {
  const auto at_edges = [&pairs](const torch::Tensor& square) { return square.reshape({-1}).index_select(0, pairs); };
  auto vertex = vertex_raw.to(torch::kLong);
  auto negative = vertex < 0;
  auto match = (vertex.unsqueeze(-1) == vertex.unsqueeze(-2)) & (negative.unsqueeze(-1) | negative.unsqueeze(-2)).logical_not();
  auto target = at_edges(match).to(logits.scalar_type());

  auto per_edge = loss->forward(logits.reshape({-1}), target);

  auto origin = origin_raw.to(torch::kLong);
  auto heavy = ((origin == 3) | (origin == 4) | (origin == 5)).to(torch::kLong);
  auto s = heavy - (origin == 1).to(torch::kLong);  // 1 HF, -1 fake, 0 other
  // Bitwise AND on the integers as salt does: 1&1 = 1, 1&-1 = 1, -1&-1 = -1, 0&x = 0.
  auto edge_weight = 1 + at_edges(torch::bitwise_and(s.unsqueeze(-1), s.unsqueeze(-2)));
  if (valid.defined()) {  // padding edges: no target, no weight
    target = target * valid;
    edge_weight = edge_weight * valid;
  }

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

namespace {

struct VertexingTaskConfig : TaskBaseConfig {
  std::string label;
};

const config::Binding<VertexingTaskConfig>& vertexing_binding() {
  static const config::Binding<VertexingTaskConfig> b = [] {
    config::Binding<VertexingTaskConfig> t{VertexingTaskConfig{}};
    bind_task_base(t);
    t.required("label", SALT_FIELD(label), "Vertex index label of input_name.");
    return t;
  }();
  return b;
}

std::shared_ptr<TaskImpl> build_vertexing(const YAML::Node& init_args, const BuildContext& ctx) {
  auto c = vertexing_binding().read(init_args);
  finish_task_base(c, ctx, /*pairwise=*/true);
  return std::make_shared<VertexingTaskImpl>(c.task, c.label);
}

const bool kVertexingTaskRegistered = register_model_component<std::shared_ptr<TaskImpl>>(
    {"salt.models.VertexingTask", "task", vertexing_binding().type(), "Pairwise same-vertex classification of constituents.",
     config::Support::kFull, "", {"salt.models.task.VertexingTask"}},
    build_vertexing);

}  // namespace


namespace {

// Label propagation over the predicted edges: every track starts with its own
// index and takes the smallest index among its neighbours, n times (enough for
// any path). The fixed point is vertex_assignment()'s union-find result: each
// track gets the smallest index of its connected component.
ox::Value smallest_connected_index(ox::Graph& g, const ox::Value& adjacent, const ox::Value& n) {
  auto n_scalar = g.op("Reshape", {n, g.ints({})});
  auto start = g.op("Range", {g.scalar_int(0), n_scalar, g.scalar_int(1)});
  auto body = ox::make_subgraph(g, "label_propagation");
  body->input(body->fresh("iteration"), ox::DType::kInt64, {});
  auto cond = body->input(body->fresh("cond"), ox::DType::kBool, {});
  auto labels = body->input(body->fresh("labels"), ox::DType::kInt64, {"n"});
  auto row = body->op("Unsqueeze", {labels, body->ints({0})});  // [1, n]: the neighbour j's label
  auto big = body->scalar_int(std::numeric_limits<int64_t>::max());
  auto neighbours = body->op("ReduceMin", {body->op("Where", {adjacent, row, big})},
                             {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  body->output_untyped(body->op("Identity", {cond}), body->fresh("cond_out"), ox::DType::kBool);
  body->output_untyped(body->op("Min", {labels, neighbours}), body->fresh("labels_out"), ox::DType::kInt64);
  return g.op("Loop", {n_scalar, g.constant(torch::scalar_tensor(true, torch::kBool), "true"), start},
              {{"body", body}});
}

}  // namespace

std::vector<OnnxOutput> VertexingTaskImpl::to_onnx(ox::Graph& g, const OnnxTaskInput& in, const std::string& model_name) {
  if (in.context.empty()) throw UsageError("to_onnx: VertexingTask '" + name() + "' needs constituent inputs");
  // Every ordered pair (i, j): cat([context, x_i, x_j]) through the edge net -> logits [n, n].
  auto n = ox::dim0(g, in.x);
  auto nn_shape = g.op("Concat", {n, n}, {{"axis", int64_t{0}}});
  auto full = [&](const ox::Value& t) {  // [n, 1, D] or [1, n, D] -> [n, n, D]
    auto d = g.op("Slice", {g.op("Shape", {in.x}), g.ints({1}), g.ints({2})});
    return g.op("Expand", {t, g.op("Concat", {nn_shape, d}, {{"axis", int64_t{0}}})});
  };
  auto xi = full(g.op("Unsqueeze", {in.x, g.ints({1})}));
  auto xj = full(g.op("Unsqueeze", {in.x, g.ints({0})}));
  const int64_t pair_width = net->input_size();  // 2 D (the context comes on top)
  auto pairs = g.op("Reshape", {g.op("Concat", {xi, xj}, {{"axis", int64_t{-1}}}), g.ints({-1, pair_width})});
  auto logits = g.op("Reshape", {net->to_onnx(g, pairs, in.context), nn_shape});
  // vertex_assignment(): symmetrised scores, sigmoid >= 0.5, no self-edges.
  auto sym = g.op("Mul", {g.op("Add", {logits, g.op("Transpose", {logits}, {{"perm", std::vector<int64_t>{1, 0}}})}),
                          g.scalar(0.5f)});
  auto linked = g.op("GreaterOrEqual", {g.op("Sigmoid", {sym}), g.scalar(0.5f)});
  auto not_self = g.op("Not", {g.op("Cast", {g.op("EyeLike", {logits})}, {{"to", int64_t{9}}})});  // 9: BOOL
  auto labels = smallest_connected_index(g, g.op("And", {linked, not_self}), n);
  return {{model_name + "_VertexIndex", g.op("Cast", {labels}, {{"to", int64_t{3}}}), true}};  // 3: INT8
}

}  // namespace salt::models
