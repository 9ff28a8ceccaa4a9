#include "data/parameters.h"

#include <algorithm>
#include <random>

#include "core/errors.h"
#include "data/toy_support.h"

namespace salt::data {

void assign_parameters(torch::Tensor& x, const std::vector<config::ParameterSpec>& specs, bool test_stage,
                       uint64_t seed, int64_t epoch, int64_t first_row) {
  if (x.size(-1) != static_cast<int64_t>(specs.size()))
    throw UsageError("data.parameters: " + std::to_string(specs.size()) + " entries for " +
                     std::to_string(x.size(-1)) + " parameters variables");
  auto a = x.accessor<float, 2>();
  toy::Rng rng(toy::splitmix64(seed ^ toy::splitmix64(static_cast<uint64_t>(first_row)) ^
                               toy::splitmix64(toy::splitmix64(static_cast<uint64_t>(epoch) + 1))));
  for (size_t j = 0; j < specs.size(); ++j) {
    const auto& s = specs[j];
    const auto col = static_cast<int64_t>(j);
    for (int64_t r = 0; r < x.size(0); ++r) {
      if (test_stage) {
        a[r][col] = static_cast<float>(s.test);
        continue;
      }
      const float v = a[r][col];
      if (std::any_of(s.train.begin(), s.train.end(), [v](double t) { return static_cast<float>(t) == v; })) continue;
      // Inverse CDF over the train values (uniform without prob).
      double u = rng.uniform(), acc = 0;
      size_t k = 0;
      for (; k + 1 < s.train.size(); ++k) {
        acc += s.prob ? (*s.prob)[k] : 1.0 / static_cast<double>(s.train.size());
        if (u < acc) break;
      }
      a[r][col] = static_cast<float>(s.train[k]);
    }
  }
}

}  // namespace salt::data
