// Static rows: packed rows padded to a bucketed capacity, the shapes a CUDA graph
// can replay. Packing (common.h) gives every batch its own row count (its valid
// tracks) and pair count (its vertexing edges), so no two steps run the same
// shapes. While a StaticRows guard lives on a thread, TokenIndex::from_mask and the
// vertexing edges round those counts up to bucket_capacity() and fill the rest
// with padding rows: padded slots of the same batch, read as zeros, whose outputs
// never reach a loss. Every shape and every scalar argument then depends on the
// bucket alone, never on the batch's exact counts (the device counts them).
#pragma once
#include <cstdint>
#include <vector>

namespace salt::models {

// The capacity of n's bucket: n itself below 32, else the smallest m * 2^e >= n
// with 16 <= m < 32, so that padding costs at most 1/16 of the rows. GN2's
// ~60k tracks of a batch of 4000 round up in steps of 2048.
int64_t bucket_capacity(int64_t n);

// Whether this thread packs rows to bucket capacities.
bool static_rows_enabled();

// The rows (or edges) to make for `count` real ones out of `limit` possible ones:
// min(limit, bucket_capacity(count)).
int64_t capacity_of(int64_t count, int64_t limit);
// capacity_of, noted in the innermost StaticRows guard: what the model asks.
int64_t static_capacity(int64_t count, int64_t limit);

// Packs to bucket capacities on this thread while it lives (nests).
class StaticRows {
 public:
  StaticRows();
  ~StaticRows();
  StaticRows(const StaticRows&) = delete;
  StaticRows& operator=(const StaticRows&) = delete;
  // Every capacity static_capacity gave under this guard, in order: two steps of
  // one bucket must give the same (training/step_graphs.h checks it).
  const std::vector<int64_t>& capacities() const { return capacities_; }

 private:
  friend int64_t static_capacity(int64_t, int64_t);
  StaticRows* previous_;
  std::vector<int64_t> capacities_;
};

}  // namespace salt::models
