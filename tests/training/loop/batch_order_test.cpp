// salt's batch order (training/loop/batch_order.h) against Python torch drawing what
// salt's DataLoader and RandomBatchSampler draw, from the same seed: the base seed
// (an int64 random_()) whenever a new iterator is made, then torch.randperm of the
// full batches; persistent workers make their iterators once.
#include <gtest/gtest.h>

#include <sstream>

#include "support/test_support.h"
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
  order.resume_epoch({2, 0, 1});
  const auto before = torch::randint(1 << 30, {1}, torch::kLong);  // the stream's next value, then put back
  torch::manual_seed(7);
  EXPECT_EQ(order.train_epoch(3, true), (std::vector<int64_t>{2, 0, 1}));
  EXPECT_TRUE(torch::equal(torch::randint(1 << 30, {1}, torch::kLong), before));
  // The epoch after it draws as usual, and unshuffled epochs are in file order.
  EXPECT_EQ(order.train_epoch(4, false), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(order.current(), (std::vector<int64_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace salt::testing
