#include "training/loop/batch_order.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
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
  if (made_) return take_made(full_batches, shuffle);
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

// torch's DataLoader makes an iterator when Lightning's setup_data asks for one: the
// base seed then, and the order at once where the loader lists the epoch ahead
// (worker processes prefetch; Lightning's DistributedSamplerWrapper lists it before
// the base seed), otherwise at the first batch (train_epoch).
void BatchOrder::make_train_iterator(int64_t full_batches, bool shuffle) {
  MadeIterator made{full_batches, false};
  if (options_.world_size > 1) {
    draw(full_batches, shuffle);
    draw_base_seed();
    if (options_.worker_processes) draw(full_batches, shuffle);
    made.drawn = true;
  } else {
    draw_base_seed();
    if (options_.worker_processes) {
      draw(full_batches, shuffle);
      made.drawn = true;
    }
  }
  made_ = made;
}

const std::vector<int64_t>& BatchOrder::take_made(int64_t full_batches, bool shuffle) {
  const auto made = *std::exchange(made_, std::nullopt);
  if (made.full_batches != full_batches)
    throw std::logic_error("BatchOrder: an iterator of " + std::to_string(made.full_batches) +
                           " batches was made, an epoch of " + std::to_string(full_batches) + " asked for");
  train_iterator_made_ = true;
  epoch_restart_ = std::exchange(restart_done_, 0);
  if (!made.drawn) draw(full_batches, shuffle);
  return current_;
}

void BatchOrder::start_tuning(int64_t full_batches, bool shuffle) {
  val_iterator_made_ = false;
  if (!made_ && !train_iterator_made_) make_train_iterator(full_batches, shuffle);
}

void BatchOrder::reload(int64_t full_batches, bool shuffle) {
  make_train_iterator(full_batches, shuffle);
  val_iterator_made_ = !options_.iterator_per_pass && options_.sanity_check;
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
