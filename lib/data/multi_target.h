// salt's data.multi_target: labels replaced (or created) by condition, applied to each
// batch after its labels are read, in the order of the entries.
#pragma once
#include <vector>

#include "config/data_config.h"
#include "data/batch.h"
#include "data/h5_reader.h"

namespace salt::data {

// The file labels the entries read (sel_label, source, and a replaced target), added
// to `labels` per input; custom targets are created, never read.
void add_multi_target_labels(VarMap& labels, const std::vector<config::MultiTarget>& entries);

// Whether `label` of `input` is created by an entry (so it is not in the file).
bool is_custom_target(const std::vector<config::MultiTarget>& entries, const std::string& input,
                      const std::string& label);

// Creates each custom target (NaN, or -1 for an integer source), then applies the
// entries in order: target = where(sel_label opp value, source, target).
void apply_multi_targets(Batch& batch, const std::vector<config::MultiTarget>& entries);

}  // namespace salt::data
