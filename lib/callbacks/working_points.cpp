// salt_cpp.callbacks.WorkingPoints (salt-cpp's own; no trainer of the field has
// it): at every validation, the light- and c-jet rejection at fixed b-jet
// efficiencies, computed as `salt test`'s performance table computes them (puma's
// linear percentile of D_b = log(p_b / (f_c p_c + (1 - f_c) p_u)) over the b jets,
// training/outputs/performance.h), from the validation's own forward passes: each
// batch's three probabilities and flavours stay on the device, and one copy to the
// host at the end of the validation feeds the table. Logged with the losses as
// val/<tagger>_light_rej_<eff> and val/<tagger>_c_rej_<eff> (eff in percent: 77,
// 77.5), so ModelCheckpoint and EarlyStopping can monitor them (mode: max). With
// several processes every rank's jets are gathered first. A cut no background jet
// passes gives the lower bound N_background (one jet counted as passing), where
// puma gives infinity: a monitor then still has a finite value.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/errors.h"
#include "models/salt_wrapper.h"
#include "models/tasks/classification_task.h"
#include "training/callback_registry.h"
#include "training/outputs/btag_task.h"
#include "training/run_setup.h"

namespace salt::callbacks {
namespace {

struct WorkingPointsOptions {
  std::vector<double> efficiencies{0.70, 0.77, 0.85};
  double f_c = 0.2;
  std::optional<std::string> tagger;     // default: the run's name, as salt's prediction columns
  std::optional<std::string> task_name;  // default: the global object's b/c/light classification
};

const config::Binding<WorkingPointsOptions>& working_points_binding() {
  using namespace config;
  static const auto b =
      Binding<WorkingPointsOptions>({})
          .arg("efficiencies", SALT_FIELD(efficiencies), "b-jet efficiencies of the working points.",
               t_list(at_least(t_float(), 0)))
          .arg("f_c", SALT_FIELD(f_c), "c-jet fraction in the discriminant D_b.", t_probability())
          .arg("tagger", SALT_FIELD(tagger), "Name in the metrics (default: the run's name).", t_optional(t_str()))
          .arg("task_name", SALT_FIELD(task_name),
               "The jet classification task with bjets, cjets and ujets (default: the first such task).",
               t_optional(t_str()));
  return b;
}

// 0.77 -> "77", 0.775 -> "77.5": the efficiency in percent, as few digits as it needs.
std::string percent(double efficiency) {
  auto text = fmt::format("{:.4f}", efficiency * 100);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

// Every rank's rows of `local` ([n, columns], float64, host), in rank order, through
// element-wise sums: the row counts first, then each rank's rows at its offset.
torch::Tensor gather_rows(const FitState& s, const torch::Tensor& local) {
  if (!s.actions.sum_over_ranks || s.process.world_size <= 1) return local;
  std::vector<double> counts(static_cast<std::size_t>(s.process.world_size), 0.0);
  counts[static_cast<std::size_t>(s.process.rank)] = static_cast<double>(local.size(0));
  counts = s.actions.sum_over_ranks(counts);
  int64_t offset = 0, total = 0;
  for (int r = 0; r < s.process.world_size; ++r) {
    if (r < s.process.rank) offset += static_cast<int64_t>(counts[static_cast<std::size_t>(r)]);
    total += static_cast<int64_t>(counts[static_cast<std::size_t>(r)]);
  }
  const auto width = local.size(1);
  std::vector<double> all(static_cast<std::size_t>(total * width), 0.0);
  const auto flat = local.contiguous();
  std::copy(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel(), all.begin() + offset * width);
  all = s.actions.sum_over_ranks(all);
  return torch::tensor(all, torch::kFloat64).reshape({total, width});
}

class WorkingPointsCallback : public Callback {
 public:
  explicit WorkingPointsCallback(WorkingPointsOptions o) : o_(std::move(o)) {
    if (o_.efficiencies.empty()) throw UsageError("WorkingPoints: efficiencies is empty");
    for (const auto e : o_.efficiencies)
      if (!(e > 0 && e <= 1))
        throw UsageError(fmt::format("WorkingPoints: efficiency {} is not in (0, 1] (a fraction: 0.77, not 77)", e));
  }

  void on_setup(FitState& s) override {
    btag_ = training::find_btag_task(*s.setup->model, o_.task_name.value_or(""));
    if (!btag_.task)
      throw UsageError("WorkingPoints: the model has no classification of its global object with classes bjets, "
                       "cjets and ujets");
    tagger_ = o_.tagger.value_or(s.setup->run.name);
  }

  void on_epoch_start(FitState&, const std::string& stage, int64_t) override {
    if (stage == "val") probs_.clear(), flavours_.clear();
  }

  void on_validation_batch(FitState&, const models::ModelOutput& out, const Batch& batch) override {
    const auto& task = *btag_.task;
    auto [probs, flavour] = btag_.probabilities(out.preds.at(task.input_name()).at(task.name()), batch);
    probs_.push_back(probs);
    flavours_.push_back(flavour);
  }

  void add_val_metrics(FitState& s, Metrics& m) override {
    if (probs_.empty() && (!s.actions.sum_over_ranks || s.process.world_size <= 1)) return;
    auto rows = probs_.empty() ? torch::zeros({0, 4}, torch::kFloat64)
                               : torch::cat({torch::cat(probs_).to(torch::kFloat64),
                                             torch::cat(flavours_).to(torch::kFloat64).unsqueeze(1)},
                                            1)
                                     .to(torch::kCPU);
    probs_.clear(), flavours_.clear();
    rows = gather_rows(s, rows);
    std::vector<float> pb, pc, pu;
    std::vector<training::Flavour> truth;
    const auto r = rows.accessor<double, 2>();
    for (int64_t i = 0; i < rows.size(0); ++i) {
      pb.push_back(static_cast<float>(r[i][0]));
      pc.push_back(static_cast<float>(r[i][1]));
      pu.push_back(static_cast<float>(r[i][2]));
      truth.push_back(static_cast<training::Flavour>(static_cast<int>(r[i][3])));
    }
    const auto perf = training::btag_performance(pb, pc, pu, truth, o_.f_c, o_.efficiencies);
    for (const auto& p : perf.points) {
      const auto name = "val/" + tagger_ + "_";
      const auto eff = percent(p.efficiency);
      // A cut no background jet passes: N_background, as if one had (puma: infinity).
      const auto bounded = [](double rejection, int64_t n) { return std::isinf(rejection) ? double(n) : rejection; };
      if (!std::isnan(p.light_rejection)) m[name + "light_rej_" + eff] = bounded(p.light_rejection, perf.n_light);
      if (!std::isnan(p.c_rejection)) m[name + "c_rej_" + eff] = bounded(p.c_rejection, perf.n_c);
    }
  }

 private:
  WorkingPointsOptions o_;
  training::BtagTask btag_;
  std::string tagger_;
  std::vector<torch::Tensor> probs_, flavours_;
};

const bool kWorkingPointsRegistered = register_callback(
    {{"salt_cpp.callbacks.WorkingPoints", "callback", working_points_binding().type(),
      "Light and c rejection at fixed b-jet efficiencies at every validation (val/<tagger>_light_rej_77, ...), "
      "monitorable by ModelCheckpoint and EarlyStopping. salt-cpp's own: left out of config.yaml.",
      config::Support::kFull, "", {"WorkingPoints"}},
     [](const YAML::Node& args) { return std::make_unique<WorkingPointsCallback>(working_points_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
