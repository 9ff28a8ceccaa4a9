#include "parallel/session.h"

#include <algorithm>
#include <csignal>

#include "core/errors.h"

namespace salt::parallel {

DistEnv Session::environment_for(int devices, int num_nodes, const EnvLookup& lookup) {
  auto env = read_dist_env(lookup);
  if (launched_externally(env)) {
    check_world_size(env, devices, num_nodes);
  } else if (devices * num_nodes > 1) {
    throw UsageError("trainer.devices=" + std::to_string(devices) + " x trainer.num_nodes=" + std::to_string(num_nodes) +
                     " needs one process per device, but none was launched: run `salt fit` (it starts them on one "
                     "machine), or launch them with srun or torchrun-style variables (see docs/distributed.md)");
  }
  return env;
}

std::unique_ptr<Session> Session::join(const DistEnv& env, const torch::Device& device, const EnvLookup& lookup) {
  auto group = ProcessGroup::connect(env, device, GroupOptions::from_environment(lookup));
  auto s = std::unique_ptr<Session>(new Session(std::move(group), lookup));
  // NCCL reduces CUDA tensors only; Gloo (also when it stages CUDA tensors) takes CPU ones.
  if (s->group_->backend_name() == "nccl") s->reduce_device_ = device;
  return s;
}

std::string Session::from_rank0(const std::string& key, const std::string& what,
                                const std::function<std::string()>& decide) {
  if (is_main()) {
    try {
      auto value = decide();
      group_->set(key, "V" + value);
      return value;
    } catch (const std::exception& e) {
      group_->set(key, std::string("E") + e.what());
      throw;
    }
  }
  auto reply = group_->get(key);
  if (!reply.empty() && reply[0] == 'E') throw InputError("rank 0 could not " + what + ": " + reply.substr(1));
  return reply.substr(1);
}

Session::StepFlags Session::agree(bool local_nan, int local_stop_signal, bool local_requeue) {
  // Sums of one-hot flags: [non-finite on rank 0 .. w-1, SIGINT, other stop signal, requeue].
  const auto w = static_cast<std::size_t>(size());
  std::vector<double> v(w + 3, 0.0);
  if (local_nan) v[static_cast<std::size_t>(rank())] = 1;
  if (local_stop_signal == SIGINT) v[w] = 1;
  else if (local_stop_signal != 0) v[w + 1] = 1;
  v[w + 2] = local_requeue ? 1 : 0;
  auto all = sum(v);
  StepFlags f;
  for (std::size_t r = 0; r < w && f.nan_rank < 0; ++r)
    if (all[r] > 0) f.nan_rank = static_cast<int>(r);
  if (local_stop_signal) f.stop_signal = local_stop_signal;
  else if (all[w] > 0) f.stop_signal = SIGINT;
  else if (all[w + 1] > 0) f.stop_signal = SIGTERM;
  f.requeue = all[w + 2] > 0;
  return f;
}

namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

// name \x1f value \x1e ...: neither separator occurs in a setting's text.
std::string encode(const Settings& settings) {
  std::string out;
  for (const auto& [name, value] : settings) out += name + '\x1f' + value + '\x1e';
  return out;
}

Settings decode(const std::string& text) {
  Settings out;
  for (std::size_t at = 0; at < text.size();) {
    const auto unit = text.find('\x1f', at), record = text.find('\x1e', at);
    if (unit == std::string::npos || record == std::string::npos || unit > record) break;
    out.emplace_back(text.substr(at, unit - at), text.substr(unit + 1, record - unit - 1));
    at = record + 1;
  }
  return out;
}

}  // namespace

void Session::require_same(const Settings& settings) {
  group_->set("settings/" + std::to_string(rank()), encode(settings));
  const auto first = rank() == 0 ? settings : decode(group_->get("settings/0"));
  for (int r = 1; r < size(); ++r) {
    const auto theirs = r == rank() ? settings : decode(group_->get("settings/" + std::to_string(r)));
    for (std::size_t i = 0; i < std::max(first.size(), theirs.size()); ++i) {
      const auto name = i < first.size() ? first[i].first : theirs[i].first;
      const auto a = i < first.size() ? first[i].second : "(not set)";
      const auto b = i < theirs.size() ? theirs[i].second : "(not set)";
      if (i < first.size() && i < theirs.size() && first[i] == theirs[i]) continue;
      throw UsageError("the ranks are not set up alike: " + name + " is " + a + " on rank 0 but " + b + " on rank " +
                       std::to_string(r) + "; start every rank with the same config and data");
    }
  }
}

std::vector<double> Session::sum(const std::vector<double>& values) {
  auto t = torch::tensor(values, torch::kFloat64).to(reduce_device_);
  group_->allreduce_sum(t);
  auto cpu = t.to(torch::kCPU);
  return {cpu.data_ptr<double>(), cpu.data_ptr<double>() + cpu.numel()};
}

std::unique_ptr<GradSync> Session::gradient_sync(std::vector<torch::Tensor> parameters) {
  return std::make_unique<GradSync>(*group_, std::move(parameters), GradSyncOptions::from_environment(lookup_));
}

}  // namespace salt::parallel
