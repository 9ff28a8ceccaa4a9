// Static rows: packed rows padded to a bucketed capacity, the shapes a CUDA graph
// can replay. Packing (common.h) gives every batch its own row count (its valid
// tracks) and pair count (its vertexing edges), so no two steps run the same
// shapes. A forward pass whose ForwardContext (forward_context.h) holds a StaticRows
// has TokenIndex::from_mask and the vertexing edges round those counts up to
// bucket_capacity() and fill the rest with padding rows: padded slots of the same
// batch, read as zeros, whose outputs never reach a loss. Every shape and every
// scalar argument then depends on the bucket alone, never on the batch's exact
// counts (the device counts them).
#pragma once
#include <cstdint>
#include <vector>

namespace salt::models {

// The capacity of n's bucket: n itself below 32, else the smallest m * 2^e >= n
// with 16 <= m < 32, so that padding costs at most 1/16 of the rows. GN2's
// ~60k tracks of a batch of 4000 round up in steps of 2048.
int64_t bucket_capacity(int64_t n);

// The rows to make for a [batch, length] pad mask with `valid` valid slots, and the
// vertexing edges for its `pairs` ordered pairs of valid slots of one jet: the
// count's bucket capacity, at most every slot (every pair of slots).
int64_t row_capacity(int64_t valid, int64_t batch, int64_t length);
int64_t edge_capacity(int64_t pairs, int64_t batch, int64_t length);
// The record of one forward pass under static rows: the capacities it took.
class StaticRows {
 public:
  // `capacity`, noted (the model notes each it takes).
  int64_t note(int64_t capacity) {
    capacities_.push_back(capacity);
    return capacity;
  }
  // Every capacity noted, in order: two steps of one bucket must take the same
  // (training/step/step_graphs.h checks it).
  const std::vector<int64_t>& capacities() const { return capacities_; }

 private:
  std::vector<int64_t> capacities_;
};

}  // namespace salt::models
