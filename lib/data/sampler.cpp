#include "data/sampler.h"

#include <fmt/format.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <random>

#include "core/errors.h"

namespace salt::data {

SamplerOptions SamplerOptions::training(int64_t num_rows, int64_t batch_size, uint64_t seed) {
  SamplerOptions o;
  o.num_rows = num_rows;
  o.batch_size = batch_size;
  o.shuffle = true;
  o.drop_last = true;
  o.seed = seed;
  return o;
}

SamplerOptions SamplerOptions::evaluation(int64_t num_rows, int64_t batch_size) {
  SamplerOptions o;
  o.num_rows = num_rows;
  o.batch_size = batch_size;
  return o;
}

BatchSampler::BatchSampler(SamplerOptions options) : options_(options) {
  if (options_.batch_size <= 0) throw InputError(fmt::format("data.batch_size must be positive, got {}", options_.batch_size));
  if (options_.num_rows < 0) throw InputError(fmt::format("Number of rows must not be negative, got {}", options_.num_rows));
  if (options_.world_size < 1 || options_.rank < 0 || options_.rank >= options_.world_size)
    throw InputError(fmt::format("Invalid shard: rank {} of world size {}", options_.rank, options_.world_size));
}

uint64_t uniform_below(uint64_t n, uint64_t (*next)(void*), void* state) {
  // Reject the top partial copy of [0, n) so every residue is equally likely.
  const uint64_t threshold = (0 - n) % n;  // = 2^64 mod n
  for (;;) {
    uint64_t r = next(state);
    if (r >= threshold) return r % n;
  }
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(seed);
  auto next = [](void* s) -> uint64_t { return (*static_cast<std::mt19937_64*>(s))(); };
  // Fisher-Yates, from the back.
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(uniform_below(static_cast<uint64_t>(i + 1), next, &rng));
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

namespace {
int64_t count_full_batches(const SamplerOptions& o) { return o.num_rows / o.batch_size; }
bool has_tail(const SamplerOptions& o) { return !o.drop_last && o.num_rows % o.batch_size != 0; }
}  // namespace

int64_t BatchSampler::batches_per_epoch() const {
  const int64_t total = count_full_batches(options_) + (has_tail(options_) ? 1 : 0);
  return (total + options_.world_size - 1) / options_.world_size;
}

std::vector<int64_t> shard_positions(int64_t n, int rank, int world, const uint64_t* shuffle_seed) {
  std::vector<int64_t> positions(static_cast<size_t>(n));
  if (shuffle_seed) {
    // torch.Generator().manual_seed(seed); torch.randperm(n, generator=g)
    auto generator = at::make_generator<at::CPUGeneratorImpl>(*shuffle_seed);
    const auto perm = torch::randperm(n, generator, torch::kLong);
    const auto* p = perm.data_ptr<int64_t>();
    positions.assign(p, p + n);
  } else {
    for (int64_t i = 0; i < n; ++i) positions[static_cast<size_t>(i)] = i;
  }
  const int64_t per_rank = (n + world - 1) / world;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank));
  // The list padded to per_rank * world by repeating it from its start.
  for (int64_t k = 0; k < per_rank; ++k) mine.push_back(positions[static_cast<size_t>((rank + k * world) % n)]);
  return mine;
}

int64_t BatchSampler::full_batches() const { return count_full_batches(options_); }

std::vector<Slice> BatchSampler::epoch(int64_t epoch) const {
  const int64_t n_full = full_batches();
  std::vector<int64_t> order;
  if (options_.shuffle) {
    order = permutation(n_full, options_.seed + static_cast<uint64_t>(epoch));
  } else {
    order.resize(static_cast<size_t>(n_full));
    for (int64_t i = 0; i < n_full; ++i) order[static_cast<size_t>(i)] = i;
  }
  return epoch_in(order, epoch);
}

std::vector<Slice> BatchSampler::epoch_in(const std::vector<int64_t>& order, int64_t epoch) const {
  const auto& o = options_;
  const int64_t n_full = full_batches();
  std::vector<char> seen(static_cast<size_t>(n_full), 0);
  bool permutation_of_all = static_cast<int64_t>(order.size()) == n_full;
  for (int64_t k : order) {
    if (!permutation_of_all || k < 0 || k >= n_full || seen[static_cast<size_t>(k)]) { permutation_of_all = false; break; }
    seen[static_cast<size_t>(k)] = 1;
  }
  if (!permutation_of_all)
    throw InputError(fmt::format("a batch order of {} entries is not a permutation of the {} full batches", order.size(), n_full));
  std::vector<Slice> all;
  all.reserve(order.size() + 1);
  for (int64_t k : order) all.push_back({k * o.batch_size, o.batch_size});
  if (has_tail(o)) all.push_back({n_full * o.batch_size, o.num_rows - n_full * o.batch_size});

  if (o.world_size == 1 || all.empty()) return all;
  const uint64_t shuffle_seed = o.seed + static_cast<uint64_t>(epoch);  // DistributedSampler's seed + epoch
  std::vector<Slice> mine;
  for (int64_t k : shard_positions(static_cast<int64_t>(all.size()), o.rank, o.world_size,
                                   o.shuffle ? &shuffle_seed : nullptr))
    mine.push_back(all[static_cast<size_t>(k)]);
  return mine;
}

}  // namespace salt::data
