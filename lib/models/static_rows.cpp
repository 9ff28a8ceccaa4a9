#include "models/static_rows.h"

#include <algorithm>

namespace salt::models {

namespace {
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

int64_t capacity_of(int64_t count, int64_t limit) { return std::min(limit, bucket_capacity(count)); }

int64_t static_capacity(int64_t count, int64_t limit) {
  const int64_t capacity = capacity_of(count, limit);
  if (innermost) innermost->capacities_.push_back(capacity);
  return capacity;
}

StaticRows::StaticRows() : previous_(innermost) { innermost = this; }
StaticRows::~StaticRows() { innermost = previous_; }

}  // namespace salt::models
