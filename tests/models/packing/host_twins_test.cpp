// With the batch's host copies given to its forward pass (models/packing/host_twins.h,
// ForwardContext::twins), the model computes the same outputs, loss and gradients as
// without, and reads no device value: the token counts come from the host masks, the
// label checks from the host labels. Here the "device" tensors are CPU clones, so
// that each twin is a different tensor, as after a copy to a GPU.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "models/model_test_helpers.h"
#include "models/packing/common.h"
#include "models/packing/host_read.h"
#include "models/packing/host_twins.h"

using namespace salt::models;
using namespace salt::models::testing;

namespace {

// The batch's tensors cloned (the "device" batch), each registered with its original.
ToyBatch on_device(const ToyBatch& host, salt::HostTwins& twins) {
  ToyBatch out = host;
  auto copy = [&](torch::Tensor& t) {
    auto original = t;
    t = t.clone();
    twins.add(t, original);
  };
  for (auto& [k, t] : out.inputs) copy(t);
  for (auto& [k, t] : out.pad_masks) copy(t);
  for (auto& [g, labels] : out.labels)
    for (auto& [k, t] : labels) copy(t);
  return out;
}

// Shuffled masks (not prefixes), an all-padded jet and a full one.
ToyBatch mixed_batch(uint64_t seed) {
  const int64_t length = 7;
  auto t = toy_batch({0, 1, 4, 7, 3, 0, 6, 2}, length, 2, 19, seed);
  auto mask = t.pad_masks["tracks"].clone();
  for (int64_t i = 0; i < mask.size(0); ++i) mask[i] = mask[i].index_select(0, torch::randperm(length));
  t.pad_masks["tracks"] = mask;
  t.inputs["tracks"] = t.inputs["tracks"].masked_fill(mask.unsqueeze(-1), 0.0);
  return t;
}

struct Pass {
  ModelOutput out;
  std::map<std::string, torch::Tensor> grads;
  int64_t reads = 0;
};

Pass run(SaltWrapper& model, const ToyBatch& batch, const ForwardContext& context = {}) {
  Pass p;
  model->zero_grad();
  const auto before = salt::host_reads();
  p.out = model->forward(batch.inputs, batch.pad_masks, &batch.labels, context);
  p.reads = salt::host_reads() - before;
  p.out.loss.backward();
  for (const auto& kv : model->named_parameters())
    if (kv.value().grad().defined()) p.grads[kv.key()] = kv.value().grad().clone();
  return p;
}

}  // namespace

// The partition the GPU runs (nonzero_counted calls nonzero() on the CPU).
TEST(HostTwins, NonzeroByPartitionEqualsNonzero) {
  torch::manual_seed(3);
  for (double p : {0.0, 0.1, 0.5, 0.9, 1.0})
    for (int64_t n : {0, 1, 17, 1000}) {
      const auto flat = torch::rand({n}) < p;
      const auto want = flat.nonzero().reshape({-1});
      EXPECT_TRUE(torch::equal(nonzero_by_partition(flat, want.size(0)), want)) << "p " << p << " n " << n;
      EXPECT_TRUE(torch::equal(nonzero_counted(flat, want.size(0)), want)) << "p " << p << " n " << n;
    }
}

TEST(HostTwins, FoundForTheRegisteredTensorOnlyAndAmongTheGivenTwinsOnly) {
  salt::HostTwins twins, others;
  const auto host = torch::ones({2, 3}, torch::kBool), device = host.clone();
  twins.add(device, host);
  EXPECT_TRUE(salt::host_twin(&twins, device).is_same(host));
  EXPECT_FALSE(salt::host_twin(&twins, device.view({3, 2})).defined());  // a view is another tensor
  EXPECT_FALSE(salt::host_twin(&twins, host).defined());
  EXPECT_FALSE(salt::host_twin(&twins, torch::Tensor()).defined());
  EXPECT_FALSE(salt::host_twin(nullptr, device).defined());  // no twins given: the device is read
  EXPECT_FALSE(salt::host_twin(&others, device).defined());
}

TEST(HostTwins, TokenIndexFromTheHostMaskEqualsTheDevicesAndKnowsTheMost) {
  const auto batch = mixed_batch(5);
  salt::HostTwins twins;
  const auto dev = on_device(batch, twins);
  const auto& mask = dev.pad_masks.at("tracks");
  const auto plain = TokenIndex::from_mask(mask);
  EXPECT_EQ(plain.most, -1);
  ForwardContext context;
  context.twins = &twins;
  const auto known = TokenIndex::from_mask(mask, context);
  EXPECT_TRUE(torch::equal(known.flat, plain.flat));
  EXPECT_TRUE(torch::equal(known.jet, plain.jet));
  EXPECT_EQ(known.most, 7);  // the full jet
  EXPECT_FALSE(known.uniform);
}

// GN2 (the vertexing task's edges, two classification tasks, one or more registers):
// identical results, and no read of the device in the forward pass.
TEST(HostTwins, Gn2WithTwinsEqualsWithoutAndReadsNoDeviceValue) {
  for (int registers : {1, 3}) {
    const std::string tag = "registers " + std::to_string(registers);
    auto model = build(small_gn2_yaml(registers), make_context(2, 19));
    model->train();
    const auto batch = mixed_batch(11 + registers);
    salt::HostTwins twins;
    const auto dev = on_device(batch, twins);

    const auto plain = run(model, dev);
    EXPECT_GT(plain.reads, 0) << tag << ": without twins the model reads the device (the check has teeth)";
    ForwardContext context;
    context.twins = &twins;
    const auto known = run(model, dev, context);
    EXPECT_EQ(known.reads, 0) << tag;
    EXPECT_GT(run(model, dev).reads, 0) << tag << ": the twins went with that pass only";
    EXPECT_TRUE(torch::equal(known.out.loss, plain.out.loss)) << tag;
    for (const auto& [input, preds] : plain.out.preds)
      for (const auto& [task, p] : preds) EXPECT_TRUE(torch::equal(known.out.preds.at(input).at(task), p)) << tag << " " << task;
    ASSERT_EQ(known.grads.size(), plain.grads.size()) << tag;
    for (const auto& [name, g] : plain.grads) EXPECT_TRUE(torch::equal(known.grads.at(name), g)) << tag << " " << name;
  }
}

TEST(HostTwins, AnOutOfRangeLabelIsRefusedFromTheHostCopyAsFromTheDevice) {
  auto model = build(small_gn2_yaml(1), make_context(2, 19));
  auto batch = mixed_batch(2);
  batch.labels["jets"]["flavour_label"][3] = 9;  // 4 classes
  salt::HostTwins twins;
  const auto dev = on_device(batch, twins);
  auto message = [&](const ForwardContext& context) {
    try {
      model->forward(dev.inputs, dev.pad_masks, &dev.labels, context);
    } catch (const salt::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto plain = message({});
  EXPECT_NE(plain.find("has value 9 outside [0, 4)"), std::string::npos) << plain;
  ForwardContext context;
  context.twins = &twins;
  const auto reads = salt::host_reads();
  EXPECT_EQ(message(context), plain);
  EXPECT_EQ(salt::host_reads(), reads) << "the label was refused from its host copy";
}
