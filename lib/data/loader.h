// Batches in sampler order, decoded ahead by worker threads.
//
//   Loader loader(reader, SamplerOptions::training(n, 4000, seed), LoaderOptions().set_num_workers(4));
//   for (int64_t epoch = 0; epoch < max_epochs; ++epoch) {
//     loader.start_epoch(epoch);
//     while (auto batch = loader.next()) { ... }
//   }
//
// num_workers threads claim batch indices in order and decode them (HDF5 read under
// the library's lock, then conversion in parallel); at most num_workers *
// prefetch_factor batches are in flight or waiting. next() hands them out strictly
// in sampler order, so the sequence is identical for any num_workers (0 = decode
// synchronously in the caller). A worker's exception is rethrown by next() at that
// batch's position (same type and message) and ends the epoch. Destroying the loader,
// or starting another epoch, mid-epoch is fine: workers finish at most their current
// batch and exit (or, with persistent_workers, wait for the next epoch).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "data/batch.h"
#include "data/h5_reader.h"
#include "data/sampler.h"

namespace salt::data {

// The most loader threads a Loader starts: each costs a thread stack and holds
// prefetch_factor batches, and thousands only exhaust memory (100000 ended in
// std::bad_alloc). data.num_workers above it is refused when the run is set up.
constexpr int kMaxLoaderWorkers = 1024;

struct LoaderOptions {
  int num_workers = 0;
  int prefetch_factor = 2;          // batches in flight per worker
  bool pin_memory = false;          // page-locked tensors; only when CUDA is available
  bool persistent_workers = true;   // keep threads across epochs (else one set per epoch)

  LoaderOptions& set_num_workers(int n) { num_workers = n; return *this; }
  LoaderOptions& set_prefetch_factor(int n) { prefetch_factor = n; return *this; }
  LoaderOptions& set_pin_memory(bool b) { pin_memory = b; return *this; }
  LoaderOptions& set_persistent_workers(bool b) { persistent_workers = b; return *this; }
};

class Loader {
 public:
  // sampler.num_rows is replaced by reader->num_rows(). Throws InputError for
  // num_workers < 0 or prefetch_factor < 1.
  Loader(std::shared_ptr<const H5Reader> reader, SamplerOptions sampler, LoaderOptions options = {});
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Begins epoch `epoch` (abandoning any unfinished one), in the sampler's own
  // order or with the full batches in `order` (BatchSampler::epoch_in).
  // `restart_done` > 0: Lightning restarting an epoch whose first restart_done
  // batches were done (salt's mid-epoch checkpoint): this rank's first n - done
  // batches move behind the `done` the caller skips.
  void start_epoch(int64_t epoch);
  void start_epoch(int64_t epoch, const std::vector<int64_t>& order, int64_t restart_done = 0);
  // The next batch of the epoch, or nullopt once it is exhausted (or none was started).
  std::optional<Batch> next();
  // Abandons the current epoch now.
  void stop();

  int64_t batches_per_epoch() const;
  const H5Reader& reader() const;
  const BatchSampler& sampler() const;
  const LoaderOptions& options() const;
  bool pins_memory() const;  // pin_memory and CUDA available
  int live_threads() const;  // worker threads currently running (for tests)

 private:
  void begin(int64_t epoch, std::vector<Slice> slices);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace salt::data
