// The fit's batches, a part of FitRun: the training sampler (this rank's shard
// of salt's weakly shuffled batches), the training and validation loaders over
// the run's inputs, and the order of each epoch's training batches as salt draws
// it (batch_order.h).
#pragma once
#include <memory>

#include "data/loader.h"
#include "data/sampler.h"
#include "training/loop/batch_order.h"

namespace salt::training {

struct RunLoaders {
  data::SamplerOptions train_sampler;
  std::unique_ptr<data::Loader> train, val;
  std::unique_ptr<BatchOrder> order;  // salt's order of the training batches
};

}  // namespace salt::training
