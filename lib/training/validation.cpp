#include "training/validation.h"

#include <cmath>

#include "core/signals.h"
#include "core/torch_compat.h"
#include "training/batch_device.h"

namespace salt::training {

void LossTotals::add(const models::ModelOutput& out, int64_t jets_in_batch) {
  const double w = static_cast<double>(jets_in_batch);
  sums["loss"] += out.loss.item<double>() * w;
  for (const auto& [task, loss] : out.losses) sums[task + "_loss"] += loss.item<double>() * w;
  jets += w;
}

std::map<std::string, double> LossTotals::means(const std::string& stage) const {
  std::map<std::string, double> m;
  for (const auto& [k, v] : sums) m[stage + "/" + k] = jets > 0 ? v / jets : NAN;
  return m;
}

LossTotals validation_pass(models::SaltWrapper& model, data::Loader& loader, int64_t epoch, int64_t batches,
                           const torch::Device& device, const Autocast& autocast, const BatchDone& on_batch, bool check_stop) {
  model->eval();
  torch::NoGradGuard no_grad;
  loader.start_epoch(epoch);
  LossTotals totals;
  for (int64_t b = 0; b < batches; ++b) {
    if (check_stop)
      if (int sig = stop_signal()) throw StopRequested{sig};
    auto batch = loader.next();
    if (!batch) break;
    auto on_device = batch_to_device(std::move(*batch), device);
    std::optional<compat::AutocastGuard> guard;
    if (autocast.enabled) guard.emplace(device.type(), autocast.dtype);
    auto out = model->forward(on_device, true);
    totals.add(out, on_device.size);
    if (on_batch) on_batch(b, out, on_device);
  }
  loader.stop();
  return totals;
}

}  // namespace salt::training
