// salt.utils.union_find.get_node_assignment: from directed edge logits to vertex
// indices. Each edge score is symmetrised, sigmoid((s_ij + s_ji) / 2); edges
// scoring >= 0.5 join their constituents, and every constituent gets the smallest
// index (counted among the jet's valid constituents) in its connected group.
#pragma once
#include <torch/torch.h>

namespace salt::models {

// logits: [E, 1] in (jet, i, j) order over valid i != j; pad_mask bool [B, L].
// Returns int64 [B, L]: the assignment at valid slots, -1 at padded ones.
torch::Tensor vertex_assignment(const torch::Tensor& logits, const torch::Tensor& pad_mask);

}  // namespace salt::models
