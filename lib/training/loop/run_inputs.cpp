#include "training/loop/run_inputs.h"

#include <spdlog/spdlog.h>

#include <filesystem>

namespace salt::training {
namespace fs = std::filesystem;

namespace {

std::string copy_input(data::TempCopies& temp, const data::H5Reader& reader) {
  if (reader.members().empty()) return temp.copy(reader.path()).string();
  std::vector<fs::path> copies;
  for (const auto& m : reader.members()) copies.push_back(temp.copy(m.file));
  const auto vds = temp.reserve(reader.path());
  data::write_virtual_file(copies, vds, "temp copies of the members of " + reader.path().string());
  return vds.string();
}

}  // namespace

RunInputs open_inputs(const RunSetup& setup, const data::DataConfig& data) {
  RunInputs inputs;
  inputs.train = open_reader(setup, data.train_file, data.num_train, "num_train");
  inputs.val = open_reader(setup, data.val_file, data.num_val, "num_val");
  refuse_empty(*inputs.train, data.train_file, data.num_train, "num_train", "nothing to train on");
  // No validation means no val_loss, so salt's Checkpoint would keep nothing.
  refuse_empty(*inputs.val, data.val_file, data.num_val, "num_val",
               "no validation loss, so no checkpoint would be kept");
  inputs.train_members = inputs.train->members();
  inputs.val_members = inputs.val->members();
  return inputs;
}

void copy_inputs_to(RunInputs& inputs, const RunSetup& setup, const data::DataConfig& data, const std::string& dir) {
  inputs.temp = std::make_unique<data::TempCopies>(dir);
  spdlog::info("copying training files to {}", inputs.temp->dir().string());
  inputs.train = open_reader(setup, copy_input(*inputs.temp, *inputs.train), data.num_train, "num_train");
  inputs.val = open_reader(setup, copy_input(*inputs.temp, *inputs.val), data.num_val, "num_val");
}

void pin_inputs(RunInputs& inputs) {
  for (const auto* reader : {inputs.train.get(), inputs.val.get()})
    for (const auto& file : reader->files()) inputs.pins.emplace_back(file);
}

}  // namespace salt::training
