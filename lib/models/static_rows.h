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

namespace salt::models {

// The capacity of n's bucket: n itself below 32, else the smallest m * 2^e >= n
// with 16 <= m < 32, so that padding costs at most 1/16 of the rows. GN2's
// ~60k tracks of a batch of 4000 round up in steps of 2048.
int64_t bucket_capacity(int64_t n);

// Whether this thread packs rows to bucket capacities.
bool static_rows_enabled();

// Packs to bucket capacities on this thread while it lives (nests).
class StaticRows {
 public:
  StaticRows();
  ~StaticRows();
  StaticRows(const StaticRows&) = delete;
  StaticRows& operator=(const StaticRows&) = delete;

 private:
  bool previous_;
};

}  // namespace salt::models
