#include "training/loop/batch_order.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <utility>

namespace salt::training {
namespace {

// torch.utils.data's `_BaseDataLoaderIter.__init__`:
// torch.empty((), dtype=torch.int64).random_() -- two words of the generator.
void draw_base_seed() { torch::empty({}, torch::kLong).random_(); }

}  // namespace

BatchOrder::BatchOrder(BatchOrderOptions options, int64_t made) : options_(options) {
  train_iterator_made_ = (made & kTrainIterator) != 0;
  val_iterator_made_ = (made & kValIterator) != 0 || (!options_.iterator_per_pass && options_.sanity_check);
}

int64_t BatchOrder::iterators_made() const {
  return (train_iterator_made_ ? kTrainIterator : 0) | (val_iterator_made_ ? kValIterator : 0);
}

std::vector<int64_t> BatchOrder::train_epoch(int64_t full_batches, bool shuffle) {
  if (resumed_) {
    resumed_ = false;
    return current_;
  }
  const bool new_iterator = options_.iterator_per_pass || !train_iterator_made_;
  train_iterator_made_ = true;
  epoch_restart_ = std::exchange(restart_done_, 0);
  if (options_.world_size > 1) return distributed_epoch(full_batches, shuffle, new_iterator);
  if (new_iterator) draw_base_seed();
  // Lightning restarts an epoch whose batches were all done: a new iterator (its
  // base seed), but no batch fetched, so no order drawn.
  if (epoch_restart_ >= full_batches && full_batches > 0) return identity(full_batches);
  draw(full_batches, shuffle);
  return current_;
}

// Lightning's DistributedSamplerWrapper lists the whole epoch (salt's randperm) as
// soon as its iterator is made or reset: before the new iterator's base seed, and
// once more when a worker-process iterator resets itself right after. A restarted
// epoch draws as any other.
std::vector<int64_t> BatchOrder::distributed_epoch(int64_t full_batches, bool shuffle, bool new_iterator) {
  draw(full_batches, shuffle);
  if (new_iterator) {
    draw_base_seed();
    if (options_.worker_processes) draw(full_batches, shuffle);
  }
  return current_;
}

const std::vector<int64_t>& BatchOrder::identity(int64_t n) {
  current_.resize(static_cast<size_t>(n));
  std::iota(current_.begin(), current_.end(), int64_t{0});
  return current_;
}

void BatchOrder::draw(int64_t n, bool shuffle) {
  if (!shuffle) return (void)identity(n);
  const auto perm = torch::randperm(n, torch::kLong);
  const auto* p = perm.data_ptr<int64_t>();
  current_.assign(p, p + n);
}

void BatchOrder::validation_pass() {
  if (options_.iterator_per_pass || !val_iterator_made_) draw_base_seed();
  val_iterator_made_ = true;
}

void BatchOrder::resume_epoch(std::vector<int64_t> order, int64_t restart_done) {
  current_ = std::move(order);
  epoch_restart_ = restart_done;
  resumed_ = true;
}

}  // namespace salt::training
