// salt.models.VertexingTask: a Dense classifier on every ordered pair (i != j) of
// valid constituents, edge features cat([context, x_i, x_j]), edges ordered by
// (jet, i, j). Loss: BCE-with-logits against "same ftagTruthVertexIndex and both
// >= 0", each edge weighted 1 + (s_i & s_j) (int bitwise AND) with s = 1 for
// origin FromB/FromBC/FromC, -1 for Fake, 0 otherwise; summed and divided by the
// number of positive edges. The origin label is the vertex label's name with
// "VertexIndex" -> "OriginLabel".
#pragma once
#include "models/tasks/task.h"

namespace salt::models {

class VertexingTaskImpl : public TaskImpl {
 public:
  VertexingTaskImpl(const TaskOptions& task, std::string label);
  // preds: edge logits [E, 1].
  TaskOutput forward(const torch::Tensor& x, const torch::Tensor& pad_mask, const torch::Tensor& context,
                     const Labels* labels, const ForwardContext& forward_context) override;
  // The edges are built from the packed valid tokens; the edge net's first Linear
  // is split as W_ctx ctx + W_i x_i + W_j x_j: the three products are computed once
  // per jet / token and gathered per edge, never materialising cat([ctx, x_i, x_j])
  // for every edge (identical up to float rounding). With dropout before the first
  // Linear the concatenation is built as in salt.
  TaskOutput forward_packed(const torch::Tensor& rows, const TokenIndex& idx, const torch::Tensor& pad_mask,
                            const torch::Tensor& context, const Labels* labels,
                            const ForwardContext& forward_context) override;
  // One int64 column "VertexIndex" [B, L, 1]: per constituent the index (among
  // the jet's valid constituents) of the first member of its predicted vertex;
  // padded slots -1.
  PredictionColumns predict(const torch::Tensor& preds, const torch::Tensor& pad_mask, const Labels* labels,
                            const std::string& model_name) const override;
  std::vector<OnnxOutput> to_onnx(ox::Graph& g, const OnnxTaskInput& in, const std::string& model_name) override;
  std::vector<std::string> label_names() const override { return {label_, origin_label()}; }
  std::string origin_label() const;

  // The loss from edge logits, labels [B, L] (vertex index and origin) and the
  // adjacency [B, L, L] used to build the edges. Exposed for tests.
  torch::Tensor edge_loss(const torch::Tensor& logits, const torch::Tensor& vertex, const torch::Tensor& origin,
                          const torch::Tensor& adjacency);

  // The edges (row_i[e], row_j[e]) between packed rows of jet jet[e], (jet, i, j)-ordered
  // as salt's boolean indexing; `senders` and `receivers` group them by row_i and
  // row_j (gather_rows). Exposed for tests.
  // pairs: each edge's flat index jet * L * L + i * L + j into the adjacency.
  struct Edges {
    torch::Tensor row_i, row_j, jet, pairs;
    RowGroups senders, receivers;
    // Static rows (static_rows.h): bool [E], false for the padding edges after the
    // real ones (other pairs of the adjacency, each within one jet); else undefined.
    torch::Tensor valid;
  };
  // count: the adjacency's true entries when the host knows them (no read of the
  // device for the edges' number), else -1. With static rows in idx, the edges are
  // padded to count's bucket capacity (noted in context.static_rows, where given).
  // The groups' segment sums take context.kernels' choice.
  static Edges edges_of(const torch::Tensor& adjacency, const TokenIndex& idx, int64_t count = -1,
                        const ForwardContext& context = {});

 private:
  // logits: edge logits [E, 1]; valid: Edges::valid (padding edges add nothing), or undefined.
  torch::Tensor edge_loss_at(const torch::Tensor& logits, const torch::Tensor& vertex, const torch::Tensor& origin,
                             const torch::Tensor& pairs, const torch::Tensor& valid = {});
  torch::Tensor edge_logits(const torch::Tensor& rows, const TokenIndex& idx, const torch::Tensor& context,
                            const Edges& edges);
  std::string label_;
};

// Adjacency of the edges: valid_i & valid_j & i != j, bool [B, L, L].
torch::Tensor edge_adjacency(const torch::Tensor& pad_mask, int64_t batch, int64_t length);

}  // namespace salt::models
