#include "models/packing/static_rows.h"

#include <algorithm>

namespace salt::models {

int64_t bucket_capacity(int64_t n) {
  if (n < 32) return n;
  int e = 0;
  while ((n >> e) >= 32) ++e;  // n < 32 * 2^e: a granule of 2^e is at most n/16
  const int64_t granule = int64_t{1} << e;
  return (n + granule - 1) / granule * granule;
}

int64_t row_capacity(int64_t valid, int64_t batch, int64_t length) {
  return std::min(batch * length, bucket_capacity(valid));
}

int64_t edge_capacity(int64_t pairs, int64_t batch, int64_t length) {
  return std::min(batch * length * length, bucket_capacity(pairs));
}

}  // namespace salt::models
