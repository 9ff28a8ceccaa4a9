// A loader's batch through the model: the one call the fit, validation and test
// loops share (models/ knows nothing of the loader's Batch).
#pragma once
#include "data/batch.h"
#include "models/salt_wrapper.h"

namespace salt::training {

// Uses batch.labels when with_labels and the batch has any.
inline models::ModelOutput forward_batch(models::SaltWrapperImpl& model, const Batch& batch, bool with_labels) {
  const bool use = with_labels && !batch.labels.empty();
  return model.forward(batch.inputs, batch.pad_masks, use ? &batch.labels : nullptr);
}

}  // namespace salt::training
