// salt's training batch order, drawn where salt draws it.
//
// salt's RandomBatchSampler gives each training epoch its full batches in
// torch.randperm(n) from torch's global CPU generator: the stream that
// initialised the weights and that dropout draws from. Before it, torch's
// DataLoader draws its base seed (an int64 random_(): two 32-bit words) each time
// a new iterator is made; Lightning keeps one iterator for a run when the workers
// are persistent (salt: num_workers > 0 and persistent_workers), and makes one per
// pass otherwise, validation passes included. Lightning's sanity check runs
// isolated from the generator, but with persistent workers its validation
// iterator is the one later passes reuse. Drawing the same numbers at the same
// places gives salt's order from salt's seed, so both trainers see the same
// jets in the same steps (docs/migrating.md).
//
// An exact resume (a salt-cpp checkpoint: its generator state and the iterators
// made restored) goes on as the uninterrupted run would, the epoch it stopped in
// with the order that checkpoint recorded; a resume from salt's checkpoint (no
// generator state) draws as salt does after its re-seed: from the state right
// after the weights, with no sanity check (Lightning skips it when resuming).
//
// Lightning's tuners (BatchSizeFinder, LearningRateFinder: on_fit_start) run after
// configure_optimizers has made the first training iterator (fit_loop.setup_data,
// at the configured batch size) and before the sanity check makes the validation
// one; their trials train on the iterator made last, and each reload of the loaders
// (a size changed, the search's end, the learning-rate finder's end) makes a new
// training iterator at once: start_tuning() and reload() below. The run's first
// epoch then trains on the iterator the tuners made last.
//
// Data parallel, Lightning re-seeds every process after the model is built
// (DDPStrategy.setup_distributed: reset_seed) and wraps salt's sampler in its
// DistributedSamplerWrapper, which lists the epoch when the iterator is made
// (distributed_epoch below); data::BatchSampler splits the list over the ranks.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace salt::training {

struct BatchOrderOptions {
  // num_workers == 0 or persistent_workers false: a new DataLoader iterator, so a
  // new base seed, for every training epoch and every validation pass.
  bool iterator_per_pass = true;
  // trainer.num_sanity_val_steps != 0: the (isolated) sanity check made the
  // persistent validation iterator before the first training batch.
  bool sanity_check = true;
  // Data parallel (Lightning's DistributedSamplerWrapper): the processes, and
  // whether the loader has worker processes (data.num_workers > 0).
  int world_size = 1;
  bool worker_processes = false;
};

class BatchOrder {
 public:
  // Which loader iterators a run has made, as a checkpoint records them.
  enum Iterators : int64_t { kTrainIterator = 1, kValIterator = 2 };
  // `made`: the iterators made before (a resumed run's checkpoint: iterators_made()
  // of the run that wrote it; 0 for a fresh run).
  BatchOrder(BatchOrderOptions options, int64_t made);

  // The epoch's order of `full_batches` batches (identity when !shuffle), after the
  // base seed a new iterator draws. The first call after resume_epoch() returns the
  // recorded order and draws nothing.
  std::vector<int64_t> train_epoch(int64_t full_batches, bool shuffle);
  // A validation pass starts: the base seed, when salt's loader makes a new iterator.
  void validation_pass();
  // Lightning's tuners start (on_fit_start): the first training iterator made, of
  // `full_batches`, if none is yet (configure_optimizers made it), and no validation
  // iterator yet.
  void start_tuning(int64_t full_batches, bool shuffle);
  // New loaders (Lightning's fit_loop.setup_data after a reset): a training iterator
  // of `full_batches` made now, which the next train_epoch() trains on; the
  // validation iterator is made again later (by the sanity check where there is one).
  void reload(int64_t full_batches, bool shuffle);
  // A mid-epoch checkpoint's order for the epoch it was saved in, and the batches
  // Lightning's restart had done in that epoch (epoch_restart(); 0 if none).
  void resume_epoch(std::vector<int64_t> order, int64_t restart_done);
  // Lightning's resume from its own (salt's) mid-epoch checkpoint: the epoch starts
  // over with a fresh iterator, so a freshly drawn order, and ends after the n - done
  // batches each rank has left. The next train_epoch() draws as usual.
  void restart_epoch(int64_t done) { restart_done_ = done; }
  // The order of the epoch being trained (what a mid-epoch checkpoint records).
  const std::vector<int64_t>& current() const { return current_; }
  // Data parallel: every rank trains on rank 0's order (dropout on packed tokens
  // may leave the ranks' generators apart).
  void adopt(std::vector<int64_t> order) { current_ = std::move(order); }
  // The batches a restarted epoch (restart_epoch) had done on each rank, 0 for any
  // other epoch: the loader puts each rank's first n - done batches behind the
  // `done` a resume skips (data::Loader::start_epoch); a checkpoint records it.
  int64_t epoch_restart() const { return epoch_restart_; }
  int64_t iterators_made() const;

 private:
  BatchOrderOptions options_;
  bool train_iterator_made_ = false, val_iterator_made_ = false;
  bool resumed_ = false;
  int64_t restart_done_ = 0, epoch_restart_ = 0;
  std::vector<int64_t> current_;
  // An iterator made ahead of its epoch (start_tuning, reload): its full batches,
  // and whether its order is already drawn (a loader that lists the epoch at once).
  struct MadeIterator {
    int64_t full_batches = 0;
    bool drawn = false;
  };
  std::optional<MadeIterator> made_;

  std::vector<int64_t> distributed_epoch(int64_t full_batches, bool shuffle, bool new_iterator);
  const std::vector<int64_t>& identity(int64_t n);
  void draw(int64_t n, bool shuffle);  // salt's order of n batches into current_
  void make_train_iterator(int64_t full_batches, bool shuffle);
  const std::vector<int64_t>& take_made(int64_t full_batches, bool shuffle);
};

}  // namespace salt::training
