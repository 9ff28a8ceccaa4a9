#include "models/static_rows.h"

namespace salt::models {

namespace {
thread_local bool static_rows_on = false;
}

int64_t bucket_capacity(int64_t n) {
  if (n < 32) return n;
  int e = 0;
  while ((n >> e) >= 32) ++e;  // n < 32 * 2^e: a granule of 2^e is at most n/16
  const int64_t granule = int64_t{1} << e;
  return (n + granule - 1) / granule * granule;
}

bool static_rows_enabled() { return static_rows_on; }

StaticRows::StaticRows() : previous_(static_rows_on) { static_rows_on = true; }
StaticRows::~StaticRows() { static_rows_on = previous_; }

}  // namespace salt::models
