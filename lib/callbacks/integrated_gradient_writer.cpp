// salt.callbacks.IntegratedGradientWriter for `salt test`: integrated-gradient
// attributions (training/outputs/integrated_gradients.h) of a task's outputs to each
// input variable, on test jets whose track (and flow) count lies in the allowed
// range. As salt-attribution does it: the baselines of a jet are the n_baselines
// test jets with the same counts whose predictions have the highest entropy
// (the most undecided), and its attributions are the mean over them. Written to
// <ckpt stem>__attributions_<sample>[_<test_suff>].h5 next to the predictions:
//   jet_index [N] (row in the test file), predictions [N, C],
//   attributions/<input> [N, C, F] or [N, C, L, F] (attribute `variables`),
//   attributions/convergence_delta [N, C] (normalised by |f(x) - f(x')| with
//   normalize_deltas), attributions/output_difference [N, C],
//   baselines/jet_index, baselines/entropy, baselines/<input>;
// class names as an attribute of attributions/. Through a temp name and a rename.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "training/callback_registry.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "data/h5_file.h"
#include "models/tasks/classification_task.h"
#include "training/outputs/integrated_gradients.h"

namespace salt::callbacks {
namespace {
namespace fs = std::filesystem;
namespace h5 = data::h5;

struct IgOptions {
  std::map<std::string, std::vector<std::string>> input_keys;  // {inputs: [...], pad_masks: [...]}
  std::vector<std::string> output_keys;
  bool add_softmax = true;
  int64_t n_baselines = 5, min_allowed_track_sizes = 5, max_allowed_track_sizes = 15;
  std::optional<int64_t> min_allowed_flow_sizes, max_allowed_flow_sizes;
  std::string tracks_name = "tracks", flows_name = "flows";
  int64_t n_jets = -1, n_steps = 50, internal_batch_size = -1;
  bool normalize_deltas = true, overwrite = false;
};

const config::Binding<IgOptions>& integrated_gradient_writer_binding() {
  using namespace config;
  static const auto b =
      Binding<IgOptions>({})
          .custom(required("input_keys", t_dict(t_list(t_str())), "{inputs: [inputs to attribute], pad_masks: [...]}"),
                  [](IgOptions& o, const YAML::Node& n) { o.input_keys = Codec<std::map<std::string, std::vector<std::string>>>::decode(n); })
          .required("output_keys", SALT_FIELD(output_keys), "[input, task] of the output to attribute.", t_list(t_str()))
          .arg("add_softmax", SALT_FIELD(add_softmax), "Attribute probabilities (else logits).")
          .arg("n_baselines", SALT_FIELD(n_baselines), "Baselines per jet.", at_least(t_int(), 1))
          .arg("min_allowed_track_sizes", SALT_FIELD(min_allowed_track_sizes), "Fewest tracks of a jet used.", at_least(t_int(), 0))
          .arg("max_allowed_track_sizes", SALT_FIELD(max_allowed_track_sizes), "Most tracks of a jet used.", at_least(t_int(), 0))
          .arg("min_allowed_flow_sizes", SALT_FIELD(min_allowed_flow_sizes), "Fewest flows (with the max: also by flows).",
               t_optional(at_least(t_int(), 0)))
          .arg("max_allowed_flow_sizes", SALT_FIELD(max_allowed_flow_sizes), "Most flows.", t_optional(at_least(t_int(), 0)))
          .arg("tracks_name", SALT_FIELD(tracks_name), "The tracks input.")
          .arg("flows_name", SALT_FIELD(flows_name), "The flows input.")
          .arg("n_jets", SALT_FIELD(n_jets), "Jets to attribute (-1: half of the test jets).", at_least(t_int(), -1))
          .arg("n_steps", SALT_FIELD(n_steps), "Quadrature points of the path integral.", at_least(t_int(), 1))
          .arg("internal_batch_size", SALT_FIELD(internal_batch_size), "Jets per pass (-1: data.batch_size).",
               at_least(t_int(), -1))
          .arg("normalize_deltas", SALT_FIELD(normalize_deltas), "Convergence deltas relative to |f(x) - f(x')|.")
          .arg("overwrite", SALT_FIELD(overwrite), "Replace an existing attributions file.");
  return b;
}

// Test jets kept for attribution, on the CPU.
struct Collected {
  std::map<std::string, std::vector<torch::Tensor>> inputs, masks;
  std::vector<int64_t> rows, tracks, flows;
};

int64_t count(const Batch& b, const std::string& name, int64_t i) {
  const auto it = b.pad_masks.find(name);
  return it == b.pad_masks.end() ? 0 : (~it->second[i]).sum().item<int64_t>();
}

torch::Tensor entropy(const torch::Tensor& p) { return -(p * torch::log(p.clamp_min(1e-12))).sum(1); }

void write_tensor(hid_t loc, const std::string& name, torch::Tensor t) {
  t = t.contiguous();
  const bool integer = t.scalar_type() == torch::kInt64;
  if (!integer) t = t.to(torch::kFloat32);
  std::vector<hsize_t> dims(t.sizes().begin(), t.sizes().end());
  h5::Id space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  h5::Id set(H5Dcreate2(loc, name.c_str(), integer ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, space.get(), H5P_DEFAULT,
                        H5P_DEFAULT, H5P_DEFAULT),
             H5Dclose);
  if (!set.valid() || H5Dwrite(set.get(), integer ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                               t.data_ptr()) < 0)
    throw InputError("cannot write dataset " + name + ": " + h5::last_error());
}

class IntegratedGradientWriter : public Callback {
 public:
  explicit IntegratedGradientWriter(IgOptions o) : o_(std::move(o)) {
    if (o_.output_keys.size() != 2)
      throw UsageError("IntegratedGradientWriter: output_keys must be [input, task], got " +
                       std::to_string(o_.output_keys.size()) + " names");
    if (o_.min_allowed_flow_sizes.has_value() != o_.max_allowed_flow_sizes.has_value())
      throw UsageError("IntegratedGradientWriter: set both min_allowed_flow_sizes and max_allowed_flow_sizes, or neither");
    if (auto inputs = o_.input_keys.find("inputs"); inputs != o_.input_keys.end()) attributed_ = inputs->second;
    target_ = {o_.output_keys[0], o_.output_keys[1], o_.add_softmax};
  }

  void on_test_start(TestState& s) override {
    auto name = s.output.filename().string();
    const auto at = name.find("__test_");
    name = at == std::string::npos ? name : name.substr(0, at) + "__attributions_" + name.substr(at + 7);
    output_ = s.output.parent_path() / name;
    if (fs::exists(output_) && !o_.overwrite)
      throw UsageError("IntegratedGradientWriter: " + output_.string() + " exists; set overwrite: true to replace it");
    for (const auto& n : attributed_)
      if (!s.setup->run.data.variables.count(n))
        throw UsageError("IntegratedGradientWriter: input_keys.inputs names '" + n + "', which is not a model input");
    wanted_ = o_.n_jets >= 0 ? o_.n_jets : s.num_rows / 2;
    batch_size_ = o_.internal_batch_size > 0 ? o_.internal_batch_size : s.setup->run.data.batch_size;
    s.wants_predictions = true;  // to see the batches
    spdlog::info("IntegratedGradientWriter: attributions of up to {} jets to {}", wanted_, output_.string());
  }

  void on_test_batch_end(TestState&, const Batch& b, const Columns&) override {
    for (int64_t i = 0; i < b.size && static_cast<int64_t>(kept_.rows.size()) < wanted_; ++i) {
      const int64_t t = count(b, o_.tracks_name, i), f = count(b, o_.flows_name, i);
      if (t < o_.min_allowed_track_sizes || t > o_.max_allowed_track_sizes) continue;
      if (o_.min_allowed_flow_sizes && (f < *o_.min_allowed_flow_sizes || f > *o_.max_allowed_flow_sizes)) continue;
      for (const auto& [name, x] : b.inputs) kept_.inputs[name].push_back(x[i].clone());
      for (const auto& [name, m] : b.pad_masks) kept_.masks[name].push_back(m[i].clone());
      kept_.rows.push_back(b.start + i);
      kept_.tracks.push_back(t);
      kept_.flows.push_back(f);
    }
  }

  void on_test_end(TestState& s) override {
    if (kept_.rows.empty()) {
      spdlog::warn("IntegratedGradientWriter: no test jet has {}..{} tracks: no attributions written",
                   o_.min_allowed_track_sizes, o_.max_allowed_track_sizes);
      return;
    }
    auto& model = s.setup->model;
    device_ = model->parameters().front().device();
    models::TensorMap x, masks;
    for (auto& [name, rows] : kept_.inputs) x[name] = torch::stack(rows);
    for (auto& [name, rows] : kept_.masks) masks[name] = torch::stack(rows);
    const auto probs = predict(model, x, masks);
    const auto h = entropy(o_.add_softmax ? probs : torch::softmax(probs, 1));
    auto result = attribute(model, x, masks, h);
    write(s, x, probs, h, result);
  }

 private:
  struct Result {
    std::map<std::string, torch::Tensor> attributions;
    torch::Tensor delta, difference, baseline_rows;
  };

  models::TensorMap slice(const models::TensorMap& m, const torch::Tensor& index) const {
    models::TensorMap out;
    for (const auto& [k, v] : m) out[k] = v.index_select(0, index).to(device_);
    return out;
  }

  torch::Tensor predict(models::SaltWrapper& model, const models::TensorMap& x, const models::TensorMap& masks) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> out;
    const int64_t n = x.begin()->second.size(0);
    for (int64_t i = 0; i < n; i += batch_size_) {
      const auto index = torch::arange(i, std::min(n, i + batch_size_));
      out.push_back(training::target_output(model, slice(x, index), slice(masks, index), target_).cpu());
    }
    return torch::cat(out);
  }

  // Per group of jets with the same counts: the n_baselines highest-entropy jets
  // of the group are the baselines; attributions averaged over them.
  Result attribute(models::SaltWrapper& model, const models::TensorMap& x, const models::TensorMap& masks,
                   const torch::Tensor& h) {
    Result r;
    const int64_t n = static_cast<int64_t>(kept_.rows.size());
    std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> groups;
    for (int64_t i = 0; i < n; ++i) groups[{kept_.tracks[i], kept_.flows[i]}].push_back(i);
    std::vector<int64_t> baseline_rows;
    for (const auto& [key, members] : groups) {
      std::vector<int64_t> order = members;
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return h[a].item<double>() > h[b].item<double>(); });
      order.resize(std::min<std::size_t>(order.size(), static_cast<std::size_t>(o_.n_baselines)));
      baseline_rows.insert(baseline_rows.end(), order.begin(), order.end());
      for (std::size_t start = 0; start < members.size(); start += static_cast<std::size_t>(batch_size_)) {
        const std::vector<int64_t> chunk(members.begin() + static_cast<long>(start),
                                         members.begin() + static_cast<long>(std::min(members.size(), start + batch_size_)));
        const auto index = torch::tensor(chunk, torch::kInt64);
        const auto xc = slice(x, index), mc = slice(masks, index);
        training::Attributions mean;
        for (const int64_t b : order) {
          auto base = slice(x, torch::full({static_cast<int64_t>(chunk.size())}, b, torch::kInt64));
          for (const auto& [k, v] : xc)
            if (std::find(attributed_.begin(), attributed_.end(), k) == attributed_.end()) base[k] = v;
          auto a = training::integrated_gradients(model, xc, base, mc, attributed_, target_, static_cast<int>(o_.n_steps));
          accumulate(mean, a, 1.0 / static_cast<double>(order.size()));
        }
        store(r, mean, index, n);
      }
    }
    r.baseline_rows = torch::tensor(baseline_rows, torch::kInt64);
    return r;
  }

  static void accumulate(training::Attributions& sum, const training::Attributions& a, double w) {
    const auto add = [w](torch::Tensor& s, const torch::Tensor& v) { s = s.defined() ? s + w * v : w * v; };
    for (const auto& [k, v] : a.per_input) add(sum.per_input[k], v);
    add(sum.delta, a.delta);
    add(sum.output_difference, a.output_difference);
  }

  static void store(Result& r, const training::Attributions& a, const torch::Tensor& index, int64_t n) {
    const auto put = [&](torch::Tensor& all, const torch::Tensor& part) {
      if (!all.defined()) {
        auto shape = part.sizes().vec();
        shape[0] = n;
        all = torch::zeros(shape, part.options().device(torch::kCPU));
      }
      all.index_copy_(0, index, part.cpu());
    };
    for (const auto& [k, v] : a.per_input) put(r.attributions[k], v);
    put(r.delta, a.delta);
    put(r.difference, a.output_difference);
  }

  void write(TestState& s, const models::TensorMap& x, const torch::Tensor& probs, const torch::Tensor& h,
             const Result& r) {
    auto delta = r.delta;
    if (o_.normalize_deltas) delta = delta / r.difference.abs().clamp_min(1e-12);
    const auto task = std::dynamic_pointer_cast<models::ClassificationTaskImpl>(task_of(s));
    write_via_temp(output_, [&](const fs::path& tmp) {
      h5::Guard guard;
      auto file = h5::File::create(tmp, output_);
      write_tensor(file.id(), "jet_index", torch::tensor(kept_.rows, torch::kInt64));
      write_tensor(file.id(), "predictions", probs);
      h5::Id attr(H5Gcreate2(file.id(), "attributions", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      for (const auto& [k, v] : r.attributions) {
        write_tensor(attr.get(), k, v);
        h5::Id set(H5Dopen2(attr.get(), k.c_str(), H5P_DEFAULT), H5Dclose);
        h5::write_attr(set.get(), "variables", s.setup->run.data.variables.at(k));
      }
      write_tensor(attr.get(), "convergence_delta", delta);
      write_tensor(attr.get(), "output_difference", r.difference);
      if (task) h5::write_attr(attr.get(), "class_names", task->class_names());
      h5::Id base(H5Gcreate2(file.id(), "baselines", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      write_tensor(base.get(), "jet_index", torch::tensor(kept_.rows, torch::kInt64).index_select(0, r.baseline_rows));
      write_tensor(base.get(), "entropy", h.index_select(0, r.baseline_rows));
      for (const auto& name : attributed_) write_tensor(base.get(), name, x.at(name).index_select(0, r.baseline_rows));
      h5::write_attr(file.id(), "n_steps", o_.n_steps);
      h5::write_attr(file.id(), "n_baselines", o_.n_baselines);
      attr.reset();
      base.reset();
      file.close();
    });
    spdlog::info("attributions of {} jets written to {} (mean |convergence delta| {:.2e})", kept_.rows.size(),
                 output_.string(), delta.abs().mean().item<double>());
  }

  std::shared_ptr<models::TaskImpl> task_of(TestState& s) const {
    for (const auto& t : s.setup->model->model->task_list())
      if (t->name() == target_.task) return t;
    return nullptr;
  }

  IgOptions o_;
  std::vector<std::string> attributed_;
  training::IgTarget target_;
  fs::path output_;
  int64_t wanted_ = 0, batch_size_ = 1;
  torch::Device device_{torch::kCPU};
  Collected kept_;
};

const bool kIntegratedGradientWriterRegistered = register_callback(
    {{"salt.callbacks.IntegratedGradientWriter", "callback", integrated_gradient_writer_binding().type(),
      "salt test: integrated-gradient attributions of a task's outputs to each input variable.",
      config::Support::kFull, "", {"salt.callbacks.integrated_gradients_writer.IntegratedGradientWriter"}},
     [](const YAML::Node& args) { return std::make_unique<IntegratedGradientWriter>(integrated_gradient_writer_binding().read(args)); }});

}  // namespace
}  // namespace salt::callbacks
