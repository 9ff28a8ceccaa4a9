#include "training/loop/batch_order.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>

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
  if (options_.iterator_per_pass || !train_iterator_made_) draw_base_seed();
  train_iterator_made_ = true;
  current_.resize(static_cast<size_t>(full_batches));
  if (restart_done_ >= full_batches && full_batches > 0) {
    // Lightning restarts an epoch whose batches were all done: a new iterator (its
    // base seed), but no batch fetched, so no order drawn.
    restart_done_ = 0;
    std::iota(current_.begin(), current_.end(), int64_t{0});
    return current_;
  }
  if (!shuffle) {
    std::iota(current_.begin(), current_.end(), int64_t{0});
    return current_;
  }
  const auto perm = torch::randperm(full_batches, torch::kLong);
  const auto* p = perm.data_ptr<int64_t>();
  current_.assign(p, p + full_batches);
  if (restart_done_ > 0) {
    const auto left = std::max<int64_t>(0, full_batches - restart_done_);
    std::rotate(current_.begin(), current_.begin() + left, current_.end());
    restart_done_ = 0;
  }
  return current_;
}

void BatchOrder::validation_pass() {
  if (options_.iterator_per_pass || !val_iterator_made_) draw_base_seed();
  val_iterator_made_ = true;
}

void BatchOrder::resume_epoch(std::vector<int64_t> order) {
  current_ = std::move(order);
  resumed_ = true;
}

}  // namespace salt::training
