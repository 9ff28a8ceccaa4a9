#include "training/loop/run_inputs.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "core/errors.h"
#include "core/memory_limit.h"

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

// The files copy_input copies for a reader: the file, or a virtual file's members.
std::vector<fs::path> files_to_copy(const data::H5Reader& reader) {
  if (reader.members().empty()) return {reader.path()};
  std::vector<fs::path> files;
  for (const auto& m : reader.members()) files.push_back(m.file);
  return files;
}

double total_bytes(const std::vector<fs::path>& files) {
  double bytes = 0;
  for (const auto& f : files) bytes += static_cast<double>(fs::file_size(f));
  return bytes;
}

// Copies in memory (tmpfs) are charged to the job's cgroup, never reclaimed while
// they exist: refused before copying when they do not fit in this rank's share of
// what the cgroup has free (the kernel would kill the run once it filled); once
// made, they come off this process's cap (lower_data_cap).
void check_room_for_copies(const fs::path& dir, double bytes, int ranks) {
  const auto cgroup = cgroup_memory();
  if (!cgroup) return;
  const double share = cgroup->free_bytes / std::max(1, ranks);
  if (bytes <= share) return;
  throw InputError("out of memory: data.move_files_temp: the copies of the training and validation files (" +
                   mib_text(bytes) + ") do not fit in " + dir.string() +
                   ", which is kept in memory (tmpfs) and counted by the job's cgroup memory limit of " +
                   mib_text(cgroup->limit_bytes) + ", with " + mib_text(share) + " free" +
                   (ranks > 1 ? " for each of " + std::to_string(ranks) + " processes" : std::string()) +
                   ": ask for more memory, or copy to a directory on disk");
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

void copy_inputs_to(RunInputs& inputs, const RunSetup& setup, const data::DataConfig& data, const std::string& dir,
                    int local_ranks) {
  auto files = files_to_copy(*inputs.train);
  for (const auto& f : files_to_copy(*inputs.val)) files.push_back(f);
  const double bytes = total_bytes(files);
  const bool in_memory = kept_in_memory(dir);
  if (in_memory) check_room_for_copies(dir, bytes, local_ranks);
  inputs.temp = std::make_unique<data::TempCopies>(dir);
  spdlog::info("copying training files to {}", inputs.temp->dir().string());
  inputs.train = open_reader(setup, copy_input(*inputs.temp, *inputs.train), data.num_train, "num_train");
  inputs.val = open_reader(setup, copy_input(*inputs.temp, *inputs.val), data.num_val, "num_val");
  if (!in_memory) return;
  if (const auto cap = lower_data_cap(bytes))
    spdlog::info("the temp copies in {} are memory the job's cgroup counts: this process now keeps within {}",
                 inputs.temp->dir().string(), mib_text(static_cast<double>(*cap)));
}

void pin_inputs(RunInputs& inputs) {
  for (const auto* reader : {inputs.train.get(), inputs.val.get()})
    for (const auto& file : reader->files()) inputs.pins.emplace_back(file);
}

}  // namespace salt::training
