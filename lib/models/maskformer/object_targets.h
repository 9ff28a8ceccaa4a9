// The MaskFormer's targets from a batch's labels and data.mf_config, as salt's
// SaltDataset builds them (_select_objects, process_labels, build_target_masks):
//  - the object slots (salt's _select_objects): real objects (valid, id != -1)
//    passing the cuts (pv_class exempt) first, those of pv_class before the others
//    in file order, the others by sort_by (else in file order), then empty slots;
//    kept or padded to num_objects;
//  - with max_lxy_mm, a kept object beyond |lxy_field| is of the null class;
//  - object_class: class_label mapped by object_classes; an empty slot, or a raw
//    value no class lists, is the null class;
//  - masks: constituent l belongs to object m when its id_label equals the
//    object's id (empty slots and padded constituents belong to nothing);
//  - every other objects label (regression targets) in the same slot order, empty
//    slots NaN (float) or -1 (integer).
#pragma once
#include <torch/torch.h>

#include "config/mf_config.h"
#include "models/packing/common.h"

namespace salt::models {

struct ObjectTargets {
  torch::Tensor object_class;                   // [B, M] int64, null = null_index
  torch::Tensor masks;                          // [B, M, L] bool
  std::map<std::string, torch::Tensor> labels;  // objects' labels, [B, M] in slot order
  torch::Tensor source_slot;                    // [B, M] int64: the file's slot each slot holds, -1 empty
};

// labels: the batch's; pad_masks: true = padded ("objects" and the constituent
// input, when present). InputError naming the label if one is missing.
ObjectTargets object_targets(const Labels& labels, const TensorMap& pad_masks, const config::MaskformerConfig& mf,
                             int64_t num_objects);

}  // namespace salt::models
