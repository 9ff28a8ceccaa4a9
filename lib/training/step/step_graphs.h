// CUDA graphs for the forward and backward pass of a training step
// (SALT_CUDA_GRAPHS=1): the host issues GN2's ~3,700 operators of a step in about
// the time the card runs them (call K: 19 ms against 18 ms), so the card waits on
// the host. A graph replays a step's kernels in one launch.
//
// A graph replays fixed shapes; static rows (models/packing/static_rows.h) give every
// batch of one bucket the same. Each bucket's first batch runs eagerly (its
// warm-up: handles, lazy inits, autograd's streams), its second is captured into
// a graph and replayed, later ones are copied into the graph's input tensors and
// replayed. The optimizer step, loss scaling's unscale and check, clipping and the
// callbacks stay eager, after the replay, as torch's documentation advises for
// loss-scaled steps.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/salt_wrapper.h"
#include "training/step/batch_device.h"
#include "training/step/step_context.h"

namespace salt::training {

// SALT_CUDA_GRAPHS (StepOptions::cuda_graphs, step_options.h): 1 replays training
// steps as graphs where the run allows (cuda_graphs_refusal); unset or 0, eager (no
// card has run the graphs yet).

// Why this run's training steps cannot be graphs, or empty: graphs need a card,
// one process (no NCCL all-reduce inside the step), one batch per optimizer step
// and a model whose every static-rows capacity follows from the batch's pad
// masks (bucket_key); a mask decoder (its matching runs on the host), merged
// inputs (merge_dict: their counts sum several masks) do not (nor NodeQueryGAP,
// which pools a mask decoder's queries).
std::string cuda_graphs_refusal(const torch::Device& device, bool one_process, int64_t accumulate_grad_batches,
                                const models::SaltWrapperImpl& model);

// A fit's graphs decision, settled once before its files are written (so that
// metadata.yaml's step_options.cuda_graphs says `used` and `why`): empty when its
// training steps run as graphs, else why they run eagerly: SALT_CUDA_GRAPHS=0,
// cuda_graphs_refusal, or trainer.deterministic without SALT_CUDA_GRAPHS=1.
std::string decide_graphs(const GraphsChoice& choice, const torch::Device& device, bool one_process,
                          int64_t accumulate_grad_batches, const models::SaltWrapperImpl& model);

// The capacities static rows give `batch`, from its host copies: for each pad mask
// (in name order) its valid slots' and its vertexing edges' (ordered pairs of
// valid slots of one jet) bucket capacities.
std::vector<int64_t> bucket_capacities(const DeviceBatch& batch);
// The batch's bucket: every tensor's name, shape and dtype, and the capacities
// above. Two batches with one key run the same operators on the same shapes.
std::string bucket_key(const DeviceBatch& batch);

// Whether every task of `model` takes its ordinary path on `batch`'s labels
// (TaskImpl::labels_replayable, on the host copies); throws InputError for a
// label forward refuses. A batch that is not replayable runs eagerly.
bool labels_replayable(const models::SaltWrapperImpl& model, const DeviceBatch& batch);

class StepGraphs {
 public:
  // Forward and backward of one batch, eagerly (what the graph captures), under
  // static rows noted in the given StaticRows (null: plain packing).
  using Step = std::function<models::ModelOutput(const DeviceBatch&, models::StaticRows*)>;

  // `model`'s parameters get their gradients from the graphs. The training thread
  // computes on a stream of the graphs' own while this lives (a graph is not
  // captured on the default stream).
  StepGraphs(const models::SaltWrapperImpl& model, const torch::Device& device, int64_t max_graphs = 8);
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // step(batch) under static rows, eagerly or by a graph (see above); a batch whose
  // labels are not replayable (labels_replayable) eagerly. A replay returns the
  // step's loss and task losses only (what the fit reads). A step that waits for
  // the card (found in its bucket's eager warm-up, with device syncs refused)
  // gives the graphs up with one warning: eager from then on. A capture that
  // fails all the same ends the run (torch leaves its allocator capturing).
  models::ModelOutput run(const DeviceBatch& batch, const Step& step);

  int64_t graphs() const;    // captured so far
  int64_t replays() const;   // steps run by a graph
  bool given_up() const;     // a step waited for the card

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace salt::training
