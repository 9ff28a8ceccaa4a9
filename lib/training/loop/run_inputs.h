// The fit's input files as its set-up leaves them, a part of FitRun: the
// readers of the training and validation files (over their temp copies once
// made), the wildcard inputs' members as first read, the temp copies themselves
// and a pin on every file the readers read (data/file_pin.h: a file changed under
// the run stops it in one line).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/file_pin.h"
#include "data/h5_reader.h"
#include "data/temp_copy.h"
#include "data/virtual_file.h"
#include "training/run_setup.h"

namespace salt::training {

struct RunInputs {
  std::shared_ptr<data::H5Reader> train, val;
  std::vector<data::VirtualMember> train_members, val_members;  // before any temp copies
  std::unique_ptr<data::TempCopies> temp;                       // data.move_files_temp's, removed with it
  std::vector<data::FilePin> pins;
};

// Opens (and so validates) data.train_file and data.val_file: an empty one is
// refused, as no checkpoint could be kept without a validation loss.
RunInputs open_inputs(const RunSetup& setup, const data::DataConfig& data);

// The readers over copies in `dir` (a virtual file's members one by one, with a
// virtual file over the copies beside them). Copies in memory (tmpfs) that do not
// fit in the job's cgroup are refused in one line; once made, they lower this
// process's memory cap (core/memory_limit.h). `local_ranks`: the processes on
// this node, each with copies of its own.
void copy_inputs_to(RunInputs& inputs, const RunSetup& setup, const data::DataConfig& data, const std::string& dir,
                    int local_ranks);

// A pin on every file the readers read: the inputs (or their copies) and any members.
void pin_inputs(RunInputs& inputs);

}  // namespace salt::training
