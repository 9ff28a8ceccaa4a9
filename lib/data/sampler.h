// Weak shuffling, as salt does it: batch k is the contiguous row range
// [k*B, (k+1)*B); a training epoch visits the full batches in a seeded random order
// and drops the partial tail; validation/test go in file order and keep the tail.
//
// `salt fit` hands each training epoch the order salt draws (torch.randperm from
// torch's generator, training/loop/batch_order.h) through epoch_in(). Without one,
// epoch() uses its own order, a pure function of (seed, epoch, rank, world_size)
// that depends on neither the loader workers, the platform nor the standard
// library (the tuners' trials use it): std::mt19937_64 (fully specified by the
// standard) seeded with seed + epoch, then our own Fisher-Yates with unbiased
// bounded draws (std::shuffle and std::uniform_int_distribution are
// implementation-defined, so they are not used).
#pragma once
#include <cstdint>
#include <vector>

namespace salt::data {

struct Slice {
  int64_t start = 0;
  int64_t size = 0;
  bool operator==(const Slice& o) const { return start == o.start && size == o.size; }
};

struct SamplerOptions {
  int64_t num_rows = 0;
  int64_t batch_size = 1;
  bool shuffle = false;    // training: true
  bool drop_last = false;  // training: true
  uint64_t seed = 42;
  // Data parallel, as Lightning's DistributedSamplerWrapper over salt's sampler:
  // the epoch's batches (the order, then the tail) are listed, their positions
  // shuffled with a generator seeded seed + epoch when `shuffle` (Lightning shuffles
  // every training sampler), padded by repeating the first positions up to a
  // multiple of world_size, and rank r takes positions r, r + world_size, ...: every
  // rank gets ceil(batches / world_size) batches, a few of them twice.
  int rank = 0;
  int world_size = 1;

  // The settings salt uses for training (shuffle, drop the tail) and for val/test.
  static SamplerOptions training(int64_t num_rows, int64_t batch_size, uint64_t seed);
  static SamplerOptions evaluation(int64_t num_rows, int64_t batch_size);
  SamplerOptions& set_shard(int r, int w) { rank = r; world_size = w; return *this; }
};

class BatchSampler {
 public:
  explicit BatchSampler(SamplerOptions options);  // throws InputError on bad settings
  const SamplerOptions& options() const { return options_; }
  // Batches of one epoch for this rank, in the order they are to be delivered.
  std::vector<Slice> epoch(int64_t epoch) const;
  // The same when the full batches come in `order`, a permutation of
  // 0..full_batches()-1 (InputError otherwise); the tail and the shard as epoch()'s.
  std::vector<Slice> epoch_in(const std::vector<int64_t>& order, int64_t epoch) const;
  int64_t batches_per_epoch() const;  // for this rank
  int64_t full_batches() const;       // batches of batch_size rows in the file

 private:
  SamplerOptions options_;
};

// Data parallel: the positions in an epoch's list of `n` batches that `rank` of
// `world` takes, as torch's DistributedSampler (drop_last false) gives them; shuffled
// with torch.randperm from a generator seeded `shuffle_seed` when there is one.
std::vector<int64_t> shard_positions(int64_t n, int rank, int world, const uint64_t* shuffle_seed);
// Unbiased draw in [0, n) from a 64-bit engine (rejection sampling); n > 0.
uint64_t uniform_below(uint64_t n, uint64_t (*next)(void*), void* state);
// The permutation of 0..n-1 used for `seed` (exposed for tests and docs).
std::vector<int64_t> permutation(int64_t n, uint64_t seed);

}  // namespace salt::data
