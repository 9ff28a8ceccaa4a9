#include "training/checkpoint.h"

#include <unistd.h>

#include <fstream>
#include <iterator>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/torch_compat.h"
#include "training/optimization.h"

namespace salt::training {
namespace {

using Dict = c10::impl::GenericDict;
using List = c10::impl::GenericList;

Dict new_dict() { return Dict(c10::StringType::get(), c10::AnyType::get()); }
List new_list() { return List(c10::AnyType::get()); }

const c10::IValue& lookup(const Dict& dict, const std::string& key, const std::string& source) {
  auto it = dict.find(key);
  if (it == dict.end()) throw InputError(source + ": not a salt checkpoint (no '" + key + "' entry)");
  return it->value();
}

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> module_state(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& item : module.named_parameters(true)) state.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers(true)) state.emplace_back(item.key(), item.value());
  return state;
}

void load_module_state(torch::nn::Module& module, const std::vector<std::pair<std::string, torch::Tensor>>& state,
                       const std::string& source) {
  std::map<std::string, torch::Tensor> saved(state.begin(), state.end());
  torch::NoGradGuard no_grad;
  std::vector<std::string> missing;
  auto restore = [&](const std::string& key, torch::Tensor& target) {
    auto it = saved.find(key);
    if (it == saved.end()) {
      missing.push_back(key);
      return;
    }
    if (it->second.sizes() != target.sizes())
      throw InputError(source + ": '" + key + "' has shape " + c10::str(it->second.sizes()) + " but the model expects " +
                       c10::str(target.sizes()) + "; was the checkpoint made with another config?");
    target.copy_(it->second);
    saved.erase(it);
  };
  for (auto& item : module.named_parameters(true)) restore(item.key(), item.value());
  for (auto& item : module.named_buffers(true)) restore(item.key(), item.value());
  if (!missing.empty())
    throw InputError(source + ": checkpoint lacks '" + missing.front() + "' (" + std::to_string(missing.size()) +
                     " missing); was it made with another config?");
  if (!saved.empty())
    throw InputError(source + ": checkpoint has '" + saved.begin()->first + "' which the model does not (" +
                     std::to_string(saved.size()) + " unexpected); was it made with another config?");
}

std::vector<AdamParamState> adam_state(Optimization& optimization) {
  std::vector<AdamParamState> out;
  auto& adamw = optimization.adamw();
  auto& state = adamw.state();
  for (const auto& p : optimization.parameters()) {
    auto it = state.find(compat::optimizer_state_key(state, p));
    if (it == state.end()) {
      out.push_back({});
      continue;
    }
    auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
    out.push_back({s.step(), s.exp_avg(), s.exp_avg_sq()});
  }
  return out;
}

void load_adam_state(Optimization& optimization, const std::vector<AdamParamState>& saved, const std::string& source) {
  const auto& params = optimization.parameters();
  if (saved.empty()) return;
  if (saved.size() != params.size())
    throw InputError(source + ": optimizer state has " + std::to_string(saved.size()) + " parameters, the model " +
                     std::to_string(params.size()));
  auto& state = optimization.adamw().state();
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!saved[i].exp_avg.defined()) continue;
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(saved[i].step);
    s->exp_avg(saved[i].exp_avg.to(params[i].device()).clone());
    s->exp_avg_sq(saved[i].exp_avg_sq.to(params[i].device()).clone());
    state[compat::optimizer_state_key(state, params[i])] = std::move(s);
  }
}

void save_checkpoint(const std::filesystem::path& path, const CheckpointState& state, const Optimization* optimization) {
  auto root = new_dict();
  root.insert("epoch", state.epoch);
  root.insert("global_step", state.global_step);
  root.insert("pytorch-lightning_version", std::string("salt-cpp"));

  auto weights = new_dict();
  for (const auto& [key, tensor] : state.state_dict) weights.insert(key, tensor.detach().cpu());
  root.insert("state_dict", weights);

  // Lightning: optimizer_states = [optimizer.state_dict()], params by index.
  auto opt = new_dict();
  auto per_param = Dict(c10::IntType::get(), c10::AnyType::get());
  for (std::size_t i = 0; i < state.adam_state.size(); ++i) {
    const auto& s = state.adam_state[i];
    if (!s.exp_avg.defined()) continue;
    auto entry = new_dict();
    entry.insert("step", torch::tensor(static_cast<double>(s.step)));
    entry.insert("exp_avg", s.exp_avg.detach().cpu());
    entry.insert("exp_avg_sq", s.exp_avg_sq.detach().cpu());
    per_param.insert(static_cast<int64_t>(i), entry);
  }
  opt.insert("state", per_param);
  auto groups = new_list();
  if (optimization) {
    auto group = new_dict();
    group.insert("lr", optimization->current_lr());
    group.insert("betas", c10::ivalue::Tuple::create({optimization->current_beta1(), 0.999}));
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(optimization->adamw().param_groups()[0].options());
    group.insert("eps", options.eps());
    group.insert("weight_decay", options.weight_decay());
    group.insert("amsgrad", false);
    group.insert("initial_lr", optimization->schedule().initial_lr());
    group.insert("max_lr", optimization->schedule().max_lr());
    group.insert("min_lr", optimization->schedule().min_lr());
    auto params = new_list();
    for (std::size_t i = 0; i < optimization->parameters().size(); ++i) params.push_back(static_cast<int64_t>(i));
    group.insert("params", params);
    groups.push_back(group);
  }
  opt.insert("param_groups", groups);
  auto optimizers = new_list();
  optimizers.push_back(opt);
  root.insert("optimizer_states", optimizers);

  auto sched = new_dict();
  sched.insert("total_steps", state.scheduler_total_steps);
  sched.insert("last_epoch", state.global_step);
  sched.insert("_step_count", state.global_step + 1);
  auto scheds = new_list();
  scheds.push_back(sched);
  root.insert("lr_schedulers", scheds);

  auto hparams = new_dict();
  hparams.insert("config", state.config_yaml);
  root.insert("hyper_parameters", hparams);

  auto metrics = new_dict();
  for (const auto& [name, value] : state.metrics) metrics.insert(name, value);
  auto extra = new_dict();
  extra.insert("metrics", metrics);
  extra.insert("batch_in_epoch", state.batch_in_epoch);
  if (state.cpu_rng_state.defined()) extra.insert("cpu_rng_state", state.cpu_rng_state);
  root.insert("salt_cpp", extra);

  auto bytes = torch::pickle_save(root);
  write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

CheckpointState load_checkpoint(const std::filesystem::path& path) {
  const auto source = path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(source + (std::filesystem::exists(path, ec) ? ": not a regular file" : ": no such file") +
                     ", expected a checkpoint (.ckpt)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(source + ": cannot read checkpoint");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue loaded;
  try {
    loaded = torch::pickle_load(bytes);
  } catch (const c10::Error& e) {
    throw InputError(source + ": not a readable checkpoint (" + e.what_without_backtrace() + ")");
  }
  if (!loaded.isGenericDict()) throw InputError(source + ": not a salt checkpoint (not a dict)");
  auto root = loaded.toGenericDict();
  CheckpointState state;
  state.epoch = lookup(root, "epoch", source).toInt();
  state.global_step = lookup(root, "global_step", source).toInt();
  for (const auto& item : lookup(root, "state_dict", source).toGenericDict())
    state.state_dict.emplace_back(item.key().toStringRef(), item.value().toTensor());
  auto optimizers = lookup(root, "optimizer_states", source).toList();
  if (optimizers.size() > 0) {
    auto opt = optimizers.get(0).toGenericDict();
    auto per_param = lookup(opt, "state", source).toGenericDict();
    int64_t n = 0;
    for (const auto& item : per_param) n = std::max(n, item.key().toInt() + 1);
    auto groups = lookup(opt, "param_groups", source).toList();
    if (groups.size() > 0) n = std::max<int64_t>(n, groups.get(0).toGenericDict().at("params").toList().size());
    state.adam_state.resize(static_cast<std::size_t>(n));
    for (const auto& item : per_param) {
      auto entry = item.value().toGenericDict();
      auto& s = state.adam_state[static_cast<std::size_t>(item.key().toInt())];
      s.step = static_cast<int64_t>(entry.at("step").toTensor().item<double>());
      s.exp_avg = entry.at("exp_avg").toTensor();
      s.exp_avg_sq = entry.at("exp_avg_sq").toTensor();
    }
  }
  auto scheds = lookup(root, "lr_schedulers", source).toList();
  if (scheds.size() > 0) state.scheduler_total_steps = scheds.get(0).toGenericDict().at("total_steps").toInt();
  state.config_yaml = lookup(lookup(root, "hyper_parameters", source).toGenericDict(), "config", source).toStringRef();
  auto extra = root.find("salt_cpp");
  if (extra != root.end()) {
    auto e = extra->value().toGenericDict();
    auto batch = e.find("batch_in_epoch");
    if (batch != e.end()) state.batch_in_epoch = batch->value().toInt();
    auto rng = e.find("cpu_rng_state");
    if (rng != e.end()) state.cpu_rng_state = rng->value().toTensor();
    auto metrics = e.find("metrics");
    if (metrics != e.end())
      for (const auto& item : metrics->value().toGenericDict())
        state.metrics.emplace_back(item.key().toStringRef(), item.value().toDouble());
  }
  return state;
}

}  // namespace salt::training
