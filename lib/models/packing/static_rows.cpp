#include "models/packing/static_rows.h"

#include <algorithm>

namespace salt::models {

namespace {
// A thread-local, not a switch: the guard of the step being captured or replayed
// now (StepGraphs makes one around each graphed forward pass). Whether steps are
// graphed at all is StepOptions::cuda_graphs (training/step/step_options.h), read once;
// this only carries that step's scope to TokenIndex::from_mask and the vertexing
// edges, deep in modules whose forward takes tensors alone (as salt's do).
thread_local StaticRows* innermost = nullptr;
}

int64_t bucket_capacity(int64_t n) {
  if (n < 32) return n;
  int e = 0;
  while ((n >> e) >= 32) ++e;  // n < 32 * 2^e: a granule of 2^e is at most n/16
  const int64_t granule = int64_t{1} << e;
  return (n + granule - 1) / granule * granule;
}

bool static_rows_enabled() { return innermost != nullptr; }

int64_t row_capacity(int64_t valid, int64_t batch, int64_t length) {
  return std::min(batch * length, bucket_capacity(valid));
}

int64_t edge_capacity(int64_t pairs, int64_t batch, int64_t length) {
  return std::min(batch * length * length, bucket_capacity(pairs));
}

int64_t note_capacity(int64_t capacity) {
  if (innermost) innermost->capacities_.push_back(capacity);
  return capacity;
}

StaticRows::StaticRows() : previous_(innermost) { innermost = this; }
StaticRows::~StaticRows() { innermost = previous_; }

}  // namespace salt::models
