#include "training/step/validation.h"

#include <chrono>
#include <cmath>

#include "core/signals.h"
#include "core/torch_compat.h"
#include "models/packing/host_read.h"
#include "training/step/batch_device.h"
#include "training/step/forward_batch.h"

namespace salt::training {

void LossTotals::add(const models::ModelOutput& out, int64_t jets_in_batch) {
  if (!out.loss.defined()) return;
  const double w = static_cast<double>(jets_in_batch);
  // float -> double, times w, summed in double: the same arithmetic as reading each
  // loss and summing on the host, so the means are bitwise those of before.
  auto accumulate = [&](const std::string& key, const torch::Tensor& loss) {
    auto weighted = loss.detach().to(torch::kDouble) * w;
    auto& sum = pending_[key];
    sum = sum.defined() ? sum + weighted : weighted;
  };
  accumulate("loss", out.loss);
  for (const auto& [task, loss] : out.losses) accumulate(task + "_loss", loss);
  jets += w;
}

void LossTotals::settle() {
  if (pending_.empty()) return;
  std::vector<torch::Tensor> values;
  for (const auto& [key, sum] : pending_) values.push_back(sum);
  const auto host = host_copy(torch::stack(values));
  auto v = host.accessor<double, 1>();
  std::size_t i = 0;
  for (const auto& [key, sum] : pending_) sums[key] += v[static_cast<int64_t>(i++)];
  pending_.clear();
}

std::map<std::string, double> LossTotals::means(const std::string& stage) {
  settle();
  std::map<std::string, double> m;
  for (const auto& [k, v] : sums) m[stage + "/" + k] = jets > 0 ? v / jets : NAN;
  return m;
}

EvaluatedBatch evaluation_step(models::SaltWrapperImpl& model, Batch batch, const StepContext& step,
                               LossTotals& totals) {
  torch::NoGradGuard no_grad;
  EvaluatedBatch evaluated{batch_to_device(std::move(batch), step.device(), step.transfer()), {}};
  models::ForwardContext context;
  context.kernels = step.kernels();
  evaluated.out = forward_batch(model, evaluated.batch, /*with_labels=*/true, step.autocast(), step.device(), context);
  totals.add(evaluated.out, evaluated.batch.size);
  return evaluated;
}

LossTotals validation_pass(models::SaltWrapper& model, data::Loader& loader, int64_t epoch, int64_t batches,
                           const StepContext& step, const BatchDone& on_batch, bool check_stop, const DataWait& on_wait) {
  model->eval();
  torch::NoGradGuard no_grad;
  loader.start_epoch(epoch);
  LossTotals totals;
  for (int64_t b = 0; b < batches; ++b) {
    if (check_stop)
      if (int sig = stop_signal()) throw StopRequested{sig};
    const auto asked = std::chrono::steady_clock::now();
    auto batch = loader.next();
    if (on_wait) on_wait(std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count());
    if (!batch) break;
    const auto [on_device, out] =
        evaluation_step(*model, std::move(*batch), step, totals);
    if (on_batch) on_batch(b, out, on_device);
  }
  loader.stop();
  return totals;
}

}  // namespace salt::training
