// What decides which CUDA graph replays a step (training/step/step_graphs.h), on the
// CPU: the bucket key follows the batch's bucket, not its exact counts, and
// predicts every capacity GN2's static rows take; runs that cannot replay a graph
// say why. tests/gpu replays the graphs on a card.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "models/model_test_helpers.h"
#include "models/packing/static_rows.h"
#include "training/step/step_graphs.h"
#include "training/step/train_step.h"

using namespace salt;
using namespace salt::models::testing;

namespace {

training::DeviceBatch on_cpu(const ToyBatch& t) {
  return training::batch_to_device(as_batch(t), torch::kCPU);  // on the CPU its own twins
}

}  // namespace

TEST(StepGraphs, KeyIsTheBucketNotTheBatch) {
  // 35 and 36 tracks (rows bucket 36), 202 and 208 edges (bucket 208); 37 tracks
  // are in bucket 38.
  const auto first = on_cpu(nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 1));
  const auto second = on_cpu(nan_padded_batch({9, 2, 7, 6, 8, 1, 3, 0}, 9, 2));
  const auto other = on_cpu(nan_padded_batch({9, 2, 7, 6, 8, 1, 3, 1}, 9, 3));
  EXPECT_EQ(training::bucket_capacities(first), (std::vector<int64_t>{36, 208}));
  EXPECT_EQ(training::bucket_key(first), training::bucket_key(second));
  EXPECT_EQ(training::bucket_capacities(other), (std::vector<int64_t>{38, 208}));
  EXPECT_NE(training::bucket_key(first), training::bucket_key(other));
  // A shorter batch (an epoch's last) is a bucket of its own.
  const auto shorter = on_cpu(nan_padded_batch({9, 2, 7, 6, 8, 1, 3}, 9, 4));
  EXPECT_NE(training::bucket_key(first), training::bucket_key(shorter));
}

TEST(StepGraphs, KeyPredictsEveryCapacityOfGn2sStep) {
  for (int registers : {1, 3}) {
    auto model = build(small_gn2_yaml(registers), make_context(2, 19));
    model->train();
    for (uint64_t seed : {5, 6}) {
      const auto batch = on_cpu(nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, seed));
      // The eager step under static rows (what a graph captures), as TrainStep runs it.
      training::TrainStep step(*model, training::TrainStepOptions());
      models::StaticRows on;
      step.forward_backward(batch, {}, &on);
      EXPECT_EQ(on.capacities(), training::bucket_capacities(batch)) << registers << " register(s)";
    }
  }
}

TEST(StepGraphs, RefusalsNameWhatTheRunDoes) {
  auto gn2 = build(small_gn2_yaml(), make_context(2, 19));
  const torch::Device card(torch::kCUDA, 0);
  EXPECT_EQ(training::cuda_graphs_refusal(card, true, 1, *gn2), "");
  EXPECT_EQ(training::cuda_graphs_refusal(torch::kCPU, true, 1, *gn2), "the run is not on a card");
  EXPECT_EQ(training::cuda_graphs_refusal(card, false, 1, *gn2), "several processes reduce gradients inside the step");
  EXPECT_EQ(training::cuda_graphs_refusal(card, true, 4, *gn2), "accumulate_grad_batches is 4");
  gn2->model->set_merge_dict({{"all", {"tracks"}}});
  EXPECT_EQ(training::cuda_graphs_refusal(card, true, 1, *gn2), "merged inputs (merge_dict)");
}

// The fit's decision (metadata.yaml's `why`): the switch, then the run, then
// trainer.deterministic unless SALT_CUDA_GRAPHS=1 asked by name.
TEST(StepGraphs, TheFitsDecisionSaysWhyItsStepsRunEagerly) {
  auto gn2 = build(small_gn2_yaml(), make_context(2, 19));
  const torch::Device card(torch::kCUDA, 0);
  const training::GraphsChoice by_default{true, false, false}, off{false, false, false};
  const training::GraphsChoice deterministic{true, false, true}, asked_deterministic{true, true, true};
  EXPECT_EQ(training::decide_graphs(by_default, card, true, 1, *gn2), "");
  EXPECT_EQ(training::decide_graphs(off, card, true, 1, *gn2), "SALT_CUDA_GRAPHS=0");
  EXPECT_EQ(training::decide_graphs(by_default, torch::kCPU, true, 1, *gn2), "the run is not on a card");
  EXPECT_EQ(training::decide_graphs(by_default, card, true, 2, *gn2), "accumulate_grad_batches is 2");
  EXPECT_EQ(training::decide_graphs(deterministic, card, true, 1, *gn2).rfind("trainer.deterministic", 0), 0u);
  EXPECT_EQ(training::decide_graphs(asked_deterministic, card, true, 1, *gn2), "");
  // A refusal of the run comes before the deterministic one.
  EXPECT_EQ(training::decide_graphs(deterministic, card, false, 1, *gn2),
            "several processes reduce gradients inside the step");
}

TEST(StepGraphs, LabelsAreCheckedBeforeAReplayAsTheStepChecksThem) {
  auto gn2 = build(small_gn2_yaml(), make_context(2, 19));
  auto t = nan_padded_batch({1, 3, 1, 8, 7, 8, 7, 0}, 9, 7);
  EXPECT_TRUE(training::labels_replayable(*gn2, on_cpu(t)));
  // No valid track origin: the eager loss is 0 by another path, so no replay.
  auto none = t;
  none.labels["tracks"]["ftagTruthOriginLabel"] = torch::full_like(t.labels["tracks"]["ftagTruthOriginLabel"], -2);
  EXPECT_FALSE(training::labels_replayable(*gn2, on_cpu(none)));
  // A flavour outside the 4 classes: the eager step's error, before any replay.
  auto bad = t;
  bad.labels["jets"]["flavour_label"] = t.labels["jets"]["flavour_label"].clone();
  bad.labels["jets"]["flavour_label"][3] = 7;
  try {
    training::labels_replayable(*gn2, on_cpu(bad));
    FAIL() << "no error";
  } catch (const salt::InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "task 'jets_classification': label 'flavour_label' has value 7 outside [0, 4) (missing label_map entry?)");
  }
}
