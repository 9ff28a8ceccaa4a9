// salt's batch order (training/loop/batch_order.h) against Python torch drawing what
// salt's DataLoader and RandomBatchSampler draw, from the same seed: the base seed
// (an int64 random_()) whenever a new iterator is made, then torch.randperm of the
// full batches; persistent workers make their iterators once.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "data/sampler.h"
#include "support/test_support.h"
#include "training/checkpoints/rng_state.h"
#include "training/loop/batch_order.h"

#include <torch/torch.h>

namespace salt::testing {
namespace {

// Python torch's draws: `plan` is a list of "t" (a training epoch of n batches) and
// "v" (a validation pass); `fresh` whether every pass makes a new iterator, `sanity`
// whether the sanity check made the persistent validation iterator. Prints one line
// per training epoch, its order.
std::vector<std::vector<int64_t>> salts_orders(int seed, int n, const std::string& plan, bool fresh, bool sanity) {
  const auto r = run_python(R"(
import sys, torch
seed, n, plan, fresh, sanity = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1", sys.argv[5] == "1"
torch.manual_seed(seed)
train_made, val_made = False, (not fresh) and sanity
for step in plan:
    if step == "t":
        if fresh or not train_made:
            torch.empty((), dtype=torch.int64).random_()
        train_made = True
        print(*torch.randperm(n).tolist())
    else:
        if fresh or not val_made:
            torch.empty((), dtype=torch.int64).random_()
        val_made = True
)",
                            {std::to_string(seed), std::to_string(n), plan, fresh ? "1" : "0", sanity ? "1" : "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::vector<int64_t>> out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    out.emplace_back();
    for (int64_t v; in >> v;) out.back().push_back(v);
  }
  return out;
}

std::vector<std::vector<int64_t>> our_orders(int seed, int n, const std::string& plan, bool fresh, bool sanity) {
  torch::manual_seed(seed);
  training::BatchOrder order({fresh, sanity}, 0);
  std::vector<std::vector<int64_t>> out;
  for (char step : plan) {
    if (step == 't') out.push_back(order.train_epoch(n, true));
    else order.validation_pass();
  }
  return out;
}

TEST(BatchOrder, DrawsWhatSaltsLoaderDrawsWithAndWithoutPersistentWorkers) {
  SALT_REQUIRE(have_python_module("torch"), "Python torch (python3-torch)");
  for (bool fresh : {true, false})
    for (bool sanity : {true, false}) {
      const auto expected = salts_orders(42, 37, "tvtvtv", fresh, sanity);
      ASSERT_EQ(expected.size(), 3u);
      EXPECT_EQ(our_orders(42, 37, "tvtvtv", fresh, sanity), expected) << "fresh " << fresh << " sanity " << sanity;
    }
  // The three ways differ: the base seeds shift the stream.
  EXPECT_NE(salts_orders(42, 37, "tvt", true, true)[1], salts_orders(42, 37, "tvt", false, true)[1]);
  EXPECT_NE(salts_orders(42, 37, "tvt", false, false)[1], salts_orders(42, 37, "tvt", false, true)[1]);
}

TEST(BatchOrder, AResumedEpochKeepsItsRecordedOrderAndDrawsNothing) {
  torch::manual_seed(7);
  training::BatchOrder order({true, true}, training::BatchOrder::kTrainIterator | training::BatchOrder::kValIterator);
  order.resume_epoch({2, 0, 1}, 1);
  const auto before = torch::randint(1 << 30, {1}, torch::kLong);  // the stream's next value, then put back
  torch::manual_seed(7);
  EXPECT_EQ(order.train_epoch(3, true), (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(order.epoch_restart(), 1);  // the recorded epoch was one Lightning's restart began
  EXPECT_TRUE(torch::equal(torch::randint(1 << 30, {1}, torch::kLong), before));
  // The epoch after it draws as usual, and unshuffled epochs are in file order.
  EXPECT_EQ(order.train_epoch(4, false), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(order.current(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(order.epoch_restart(), 0);
}

// Lightning restarting an epoch from salt's mid-epoch checkpoint: the order drawn as
// for any epoch (the loader moves the batches), the restart kept for that epoch only.
TEST(BatchOrder, ARestartedEpochDrawsAsAnyOtherAndRemembersTheRestart) {
  torch::manual_seed(3);
  torch::empty({}, torch::kLong).random_();
  const auto perm = torch::randperm(5, torch::kLong);
  const std::vector<int64_t> expected(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + 5);
  torch::manual_seed(3);
  training::BatchOrder order({true, false}, 0);
  order.restart_epoch(2);
  EXPECT_EQ(order.train_epoch(5, true), expected);
  EXPECT_EQ(order.epoch_restart(), 2);
  order.train_epoch(5, true);
  EXPECT_EQ(order.epoch_restart(), 0);
  // Every batch done: a new iterator (its base seed), but no batch fetched, so no order drawn.
  torch::manual_seed(11);
  training::BatchOrder done({true, false}, 0);
  done.restart_epoch(5);
  EXPECT_EQ(done.train_epoch(5, true), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(done.epoch_restart(), 5);
  const auto after = torch::randint(1 << 30, {1}, torch::kLong);
  torch::manual_seed(11);
  torch::empty({}, torch::kLong).random_();
  EXPECT_TRUE(torch::equal(torch::randint(1 << 30, {1}, torch::kLong), after));
}

// Data parallel, with the real torch DataLoader and DistributedSampler: salt's
// RandomBatchSampler in Lightning's DistributedSamplerWrapper (written out as
// lightning/fabric/utilities/distributed.py has them), every process re-seeded
// (Lightning's reset_seed), the sanity check isolated, set_epoch each epoch. Prints,
// per rank and training epoch, the batches that rank trains on.
std::string lightnings_rank_batches(int seed, int n, int world, int workers, bool persistent, bool sanity) {
  const auto r = run_python(R"(
import sys, torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Sampler
seed, n, world, workers, persistent, sanity = map(int, sys.argv[1:])

class RandomBatchSampler(Sampler):  # salt/data/samplers.py, batch ids for slices
    def __init__(self, n, shuffle):
        self.n, self.shuffle = n, shuffle
    def __len__(self):
        return self.n
    def __iter__(self):
        ids = torch.randperm(self.n) if self.shuffle else torch.arange(self.n)
        for i in ids:
            yield int(i)

class _DatasetSamplerWrapper(Dataset):
    def __init__(self, sampler):
        self._sampler, self._sampler_list = sampler, None
    def __getitem__(self, index):
        if self._sampler_list is None:
            self._sampler_list = list(self._sampler)
        return self._sampler_list[index]
    def __len__(self):
        return len(self._sampler)
    def reset(self):
        self._sampler_list = list(self._sampler)

class DistributedSamplerWrapper(DistributedSampler):
    def __init__(self, sampler, *args, **kwargs):
        super().__init__(_DatasetSamplerWrapper(sampler), *args, **kwargs)
    def __iter__(self):
        self.dataset.reset()
        return (self.dataset[index] for index in super().__iter__())

class Ids(Dataset):  # salt's dataset, reduced to the batch id it is handed
    def __len__(self):
        return 1 << 30
    def __getitem__(self, i):
        return i

def loader(sampler):
    return DataLoader(Ids(), batch_size=None, sampler=sampler, num_workers=workers, shuffle=False,
                      persistent_workers=bool(persistent and workers))

for rank in range(world):
    torch.manual_seed(seed)  # reset_seed
    train = DistributedSamplerWrapper(RandomBatchSampler(n, True), num_replicas=world, rank=rank, shuffle=True, seed=seed)
    val = DistributedSamplerWrapper(RandomBatchSampler(3, False), num_replicas=world, rank=rank, shuffle=False, seed=seed)
    train_loader, val_loader = loader(train), loader(val)
    if sanity:  # isolated: its draws are undone
        state = torch.get_rng_state()
        next(iter(val_loader))
        torch.set_rng_state(state)
    for epoch in range(3):
        train.set_epoch(epoch)
        print(rank, epoch, *[int(b) for b in train_loader])
        for _ in val_loader:
            pass
)",
                            {std::to_string(seed), std::to_string(n), std::to_string(world), std::to_string(workers),
                             persistent ? "1" : "0", sanity ? "1" : "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

std::string our_rank_batches(int seed, int n, int world, int workers, bool persistent, bool sanity) {
  std::ostringstream out;
  const int64_t batch = 10;
  for (int rank = 0; rank < world; ++rank) {
    torch::manual_seed(seed);
    training::BatchOrder order({workers == 0 || !persistent, sanity, world, workers > 0}, 0);
    const data::BatchSampler sampler(data::SamplerOptions::training(n * batch, batch, seed).set_shard(rank, world));
    for (int epoch = 0; epoch < 3; ++epoch) {
      out << rank << " " << epoch;
      for (const auto& slice : sampler.epoch_in(order.train_epoch(n, true), epoch)) out << " " << slice.start / batch;
      out << "\n";
      order.validation_pass();
    }
  }
  return out.str();
}

TEST(BatchOrder, DataParallelRanksTrainOnTheBatchesLightningGivesThem) {
  SALT_REQUIRE(have_python_module("torch"), "Python torch (python3-torch)");
  struct Case { int world, workers; bool persistent; };
  // A worker-process iterator lists its epoch twice when made; a persistent one once
  // an epoch after that (and the sanity check made the validation one).
  for (const auto& c : {Case{2, 0, false}, Case{3, 2, false}, Case{2, 2, true}}) {
    const auto expected = lightnings_rank_batches(42, 7, c.world, c.workers, c.persistent, c.persistent);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(our_rank_batches(42, 7, c.world, c.workers, c.persistent, c.persistent), expected)
        << "world " << c.world << " workers " << c.workers << " persistent " << c.persistent;
    if (c.world != 2) continue;
    // Padded: 7 batches over 2 ranks are 4 each (rank, epoch, 4 batches), one trained twice.
    std::istringstream lines(expected);
    for (std::string line; std::getline(lines, line);) EXPECT_EQ(std::count(line.begin(), line.end(), ' '), 5) << line;
  }
}

// Lightning's tuners: setup_data makes an iterator at once (its base seed; its order
// too with worker processes, which prefetch), an epoch trains on the iterator made
// last, and the run's first epoch on the one the tuners made last. By hand, torch's
// calls in the order Lightning makes them, for a LearningRateFinder (isolate_rng
// around its trial and its reload) and a BatchSizeFinder (a trial whose epoch ends:
// its validation's base seed, a new iterator).
std::vector<int64_t> perm_now(int64_t n) {
  const auto p = torch::randperm(n, torch::kLong);
  return {p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + n};
}
void base_seed() { torch::empty({}, torch::kLong).random_(); }
void dropout() { torch::rand({7}); }  // what a trial's steps draw

TEST(BatchOrder, TunersTrainOnTheIteratorMadeLastAndTheRunOnTheirs) {
  for (bool workers : {false, true}) {
    const training::BatchOrderOptions options{true, true, 1, workers};
    // LearningRateFinder.
    torch::manual_seed(5);
    base_seed();
    const auto prefetched = workers ? perm_now(10) : std::vector<int64_t>{};
    std::optional<training::RngSnapshot> isolated{torch::Device(torch::kCPU)};
    const auto trial = workers ? prefetched : perm_now(10);
    dropout();
    base_seed();  // the reload, inside isolate_rng
    const auto reloaded = workers ? perm_now(10) : std::vector<int64_t>{};
    isolated->restore();
    const auto first_epoch = workers ? reloaded : perm_now(10);
    const auto next = torch::randint(1 << 30, {1}, torch::kLong);

    torch::manual_seed(5);
    training::BatchOrder lrf(options, 0);
    lrf.start_tuning(10, true);
    isolated.emplace(torch::Device(torch::kCPU));
    EXPECT_EQ(lrf.train_epoch(10, true), trial) << "workers " << workers;
    dropout();
    lrf.reload(10, true);
    isolated->restore();
    EXPECT_EQ(lrf.train_epoch(10, true), first_epoch) << "workers " << workers;
    EXPECT_TRUE(torch::equal(torch::randint(1 << 30, {1}, torch::kLong), next)) << "workers " << workers;
    if (!workers) EXPECT_EQ(first_epoch, trial);  // no workers: as without the finder
    else EXPECT_NE(first_epoch, trial);           // workers: the reload's order

    // BatchSizeFinder.
    torch::manual_seed(9);
    std::vector<std::vector<int64_t>> expected;
    base_seed();                          // configure_optimizers' iterator, 10 batches
    expected.push_back(perm_now(10));     // trial 1's first batch (or its prefetch)
    dropout();
    base_seed();                          // a reload at 5 batches
    expected.push_back(perm_now(5));
    dropout();
    base_seed();                          // the trial's epoch ended: its validation
    base_seed();                          // and a new iterator for the next
    expected.push_back(perm_now(5));
    dropout();
    base_seed();                          // the search's end: made again
    if (workers) expected.push_back(perm_now(5));
    dropout();                            // (with workers the run's order is drawn before this)
    if (!workers) expected.push_back(perm_now(5));

    torch::manual_seed(9);
    training::BatchOrder bsf(options, 0);
    bsf.start_tuning(10, true);
    std::vector<std::vector<int64_t>> ours{bsf.train_epoch(10, true)};
    dropout();
    bsf.reload(5, true);
    ours.push_back(bsf.train_epoch(5, true));
    dropout();
    bsf.validation_pass();
    ours.push_back(bsf.train_epoch(5, true));
    dropout();
    bsf.reload(5, true);
    dropout();
    ours.push_back(bsf.train_epoch(5, true));
    EXPECT_EQ(ours, expected) << "workers " << workers;
  }
}

}  // namespace
}  // namespace salt::testing
