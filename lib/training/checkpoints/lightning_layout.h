// The parts of a checkpoint only Lightning reads, as Lightning 2.x's
// dump_checkpoint writes them for a salt run, so that salt resumes, tests and
// exports from a salt-cpp checkpoint: the loops' progress counters (the epoch
// and step Lightning resumes at), salt's Checkpoint callback state, and the
// hyper_parameters LightningCLI saves (the model section plus its instantiator,
// which load_from_checkpoint needs to rebuild ModelWrapper).
#pragma once
#include <filesystem>
#include <string>

#include "serialize/py_value.h"

namespace salt::training {

struct CheckpointState;

// checkpoint["loops"] at the end of epoch `state.epoch` (salt saves on
// on_train_epoch_end) or, for a mid-epoch (requeue) save, after its batches.
serialize::PyValue lightning_loops(const CheckpointState& state);

// checkpoint["callbacks"]: salt.callbacks.Checkpoint's ModelCheckpoint state for `path`.
serialize::PyValue lightning_callbacks(const std::filesystem::path& path);

// checkpoint["hyper_parameters"] from a run's config.yaml text: its model
// section, with name and global_object (link targets salt's config.yaml drops)
// and LightningCLI's _instantiator. None when the text has no model section.
serialize::PyValue lightning_hparams(const std::string& config_yaml);

// The reverse, for a checkpoint without its run directory: a config (YAML text)
// with hyper_parameters' model section, name, and the data keys its norm_config
// carries (variables, norm_dict, input_map, global_object). Empty when the
// hyper_parameters are not LightningCLI's model section (no `model` entry).
std::string config_from_hparams(const serialize::PyValue& hparams);

}  // namespace salt::training
