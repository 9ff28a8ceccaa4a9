// How a batch crosses to the device is passed down explicitly (TransferOptions,
// training/step/batch_device.h), from the run's switches through TrainStep: no
// process-wide setting that a fit changes under everything else in the process.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "config/trainer_config.h"
#include "training/step/batch_device.h"
#include "training/step/train_step.h"

namespace salt::training {
namespace {

Batch small_batch() {
  Batch batch;
  batch.inputs["tracks"] = torch::rand({3, 4, 2});
  batch.pad_masks["tracks"] = torch::tensor({{false, false, true, true}, {false, true, true, true}, {false, false, false, true}});
  batch.labels["jets"]["flavour_label"] = torch::tensor({0, 2, 1}, torch::kLong);
  batch.size = 3;
  return batch;
}

StepOptions switches(std::map<std::string, const char*> vars) {
  return parse_step_options([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second;
  }, 2, true);
}

TEST(BatchDevice, TwinsAreKeptForMasksAndLabelsUnlessTheOptionsSayNot) {
  const auto with = batch_to_device(small_batch(), torch::kCPU);
  EXPECT_FALSE(with.twins.empty());
  EXPECT_TRUE(with.twins.of(with.pad_masks.at("tracks")).defined());
  EXPECT_TRUE(with.twins.of(with.labels.at("jets").at("flavour_label")).defined());
  EXPECT_FALSE(with.twins.of(with.inputs.at("tracks")).defined());  // inputs never get one
  const auto without = batch_to_device(small_batch(), torch::kCPU, TransferOptions().host_twins(false));
  EXPECT_TRUE(without.twins.empty());
  EXPECT_TRUE(torch::equal(without.pad_masks.at("tracks"), with.pad_masks.at("tracks")));
}

// SALT_HOST_TWINS and SALT_COPY_STREAM reach salt fit's step as values, and the
// step's to_device follows them; two steps with different switches live side by side.
TEST(BatchDevice, TheRunsSwitchesReachTheStepsTransfer) {
  EXPECT_TRUE(transfer_from(switches({})).host_twins());
  EXPECT_TRUE(transfer_from(switches({})).copy_stream());
  const auto off = transfer_from(switches({{"SALT_HOST_TWINS", "0"}, {"SALT_COPY_STREAM", "0"}}));
  EXPECT_FALSE(off.host_twins());
  EXPECT_FALSE(off.copy_stream());

  config::TrainerConfig trainer;
  const auto plain = fit_step_options(trainer, torch::kCPU, switches({}));
  const auto no_twins = fit_step_options(trainer, torch::kCPU, switches({{"SALT_HOST_TWINS", "0"}}));
  EXPECT_TRUE(plain.context().transfer().host_twins());
  EXPECT_FALSE(no_twins.context().transfer().host_twins());
}

}  // namespace
}  // namespace salt::training
