#include "training/checkpoint.h"

#include <unistd.h>

#include <fstream>
#include <iterator>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/provenance.h"
#include "core/zip_check.h"
#include "core/torch_compat.h"
#include "training/lion.h"
#include "training/muon.h"
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

namespace {

// The state `optimizer` keeps for `p`, in the checkpoint's fields.
AdamParamState read_param_state(torch::optim::Optimizer& optimizer, const torch::Tensor& p) {
  auto& state = optimizer.state();
  auto it = state.find(compat::optimizer_state_key(state, p));
  AdamParamState out;
  if (it == state.end()) return out;
  if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
    out.step = s->step();
    out.exp_avg = s->exp_avg();
    out.exp_avg_sq = s->exp_avg_sq();
  } else if (auto* s = dynamic_cast<LionParamState*>(it->second.get())) {
    out.exp_avg = s->exp_avg();
  } else if (auto* s = dynamic_cast<MuonParamState*>(it->second.get())) {
    out.momentum_buffer = s->momentum_buffer();
  }
  return out;
}

std::string optimizer_name(const torch::optim::Optimizer* optimizer) {
  if (dynamic_cast<const torch::optim::AdamW*>(optimizer)) return "AdamW";
  if (dynamic_cast<const Lion*>(optimizer)) return "Lion";
  if (dynamic_cast<const Muon*>(optimizer)) return "Muon";
  return "no optimizer";
}

// `saved` as the state `optimizer` keeps, on `device`; nullptr unless `saved` has
// exactly the fields that optimizer keeps (it was saved by another optimizer).
std::unique_ptr<torch::optim::OptimizerParamState> make_param_state(const torch::optim::Optimizer* optimizer,
                                                                    const AdamParamState& saved,
                                                                    const torch::Device& device) {
  auto to = [&](const torch::Tensor& t) { return t.to(device).clone(); };
  const bool m = saved.exp_avg.defined(), v = saved.exp_avg_sq.defined(), b = saved.momentum_buffer.defined();
  if (dynamic_cast<const torch::optim::AdamW*>(optimizer) && m && v && !b) {
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(saved.step);
    s->exp_avg(to(saved.exp_avg));
    s->exp_avg_sq(to(saved.exp_avg_sq));
    return s;
  }
  if (dynamic_cast<const Lion*>(optimizer) && m && !v && !b) {
    auto s = std::make_unique<LionParamState>();
    s->exp_avg(to(saved.exp_avg));
    return s;
  }
  if (dynamic_cast<const Muon*>(optimizer) && !m && !v && b) {
    auto s = std::make_unique<MuonParamState>();
    s->momentum_buffer(to(saved.momentum_buffer));
    return s;
  }
  return nullptr;
}

}  // namespace

std::vector<AdamParamState> adam_state(Optimization& optimization) {
  std::vector<AdamParamState> out;
  const auto& params = optimization.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto* owner = optimization.owner(i);
    out.push_back(owner ? read_param_state(*owner, params[i]) : AdamParamState{});
  }
  return out;
}

void load_adam_state(Optimization& optimization, const std::vector<AdamParamState>& saved, const std::string& source) {
  const auto& params = optimization.parameters();
  if (saved.empty()) return;
  if (saved.size() != params.size())
    throw InputError(source + ": optimizer state has " + std::to_string(saved.size()) + " parameters, the model " +
                     std::to_string(params.size()));
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (saved[i].empty()) continue;
    auto* owner = optimization.owner(i);
    auto fresh = make_param_state(owner, saved[i], params[i].device());
    if (!fresh)
      throw InputError(source + ": the optimizer state of '" + optimization.parameter_names()[i] + "' is not " +
                       optimizer_name(owner) + "'s; was the checkpoint made with another model.optimizer?");
    auto& state = owner->state();
    state[compat::optimizer_state_key(state, params[i])] = std::move(fresh);
  }
}

namespace {

// torch's per-parameter state_dict entry: the fields the optimizer keeps.
Dict param_entry(const AdamParamState& s) {
  auto entry = new_dict();
  if (s.exp_avg_sq.defined()) entry.insert("step", torch::tensor(static_cast<double>(s.step)));  // AdamW
  if (s.exp_avg.defined()) entry.insert("exp_avg", s.exp_avg.detach().cpu());
  if (s.exp_avg_sq.defined()) entry.insert("exp_avg_sq", s.exp_avg_sq.detach().cpu());
  if (s.momentum_buffer.defined()) entry.insert("momentum_buffer", s.momentum_buffer.detach().cpu());
  return entry;
}

// state: {index: entry} for the parameters `indices` (model order) that have state.
Dict state_of(const std::vector<AdamParamState>& state, const std::vector<int64_t>& indices) {
  auto per_param = Dict(c10::IntType::get(), c10::AnyType::get());
  for (auto i : indices)
    if (static_cast<std::size_t>(i) < state.size() && !state[i].empty()) per_param.insert(i, param_entry(state[i]));
  return per_param;
}

List index_list(const std::vector<int64_t>& indices) {
  auto out = new_list();
  for (auto i : indices) out.push_back(i);
  return out;
}

// A param group's schedule entries (OneCycleLR adds initial_lr, max_lr, min_lr).
Dict schedule_group(const Optimization& optimization, const std::vector<int64_t>& indices) {
  auto group = new_dict();
  group.insert("lr", optimization.current_lr());
  group.insert("weight_decay", optimization.weight_decay());
  group.insert("initial_lr", optimization.schedule().initial_lr());
  group.insert("max_lr", optimization.schedule().max_lr());
  group.insert("min_lr", optimization.schedule().min_lr());
  group.insert("params", index_list(indices));
  return group;
}

Dict optimizer_dict(const Dict& state, const Dict& group) {
  auto opt = new_dict();
  opt.insert("state", state);
  auto groups = new_list();
  groups.push_back(group);
  opt.insert("param_groups", groups);
  return opt;
}

// AdamW's and Lion's state_dict (also written without an Optimization, as AdamW's).
Dict single_optimizer(const CheckpointState& state, const Optimization* optimization) {
  std::vector<int64_t> all;
  for (std::size_t i = 0; i < state.adam_state.size(); ++i) all.push_back(static_cast<int64_t>(i));
  auto opt = new_dict();
  opt.insert("state", state_of(state.adam_state, all));
  auto groups = new_list();
  if (optimization) {
    for (std::size_t i = all.size(); i < optimization->parameters().size(); ++i) all.push_back(static_cast<int64_t>(i));
    auto group = schedule_group(*optimization, all);
    if (optimization->kind() == OptimizerKind::kLion) {
      group.insert("betas", c10::ivalue::Tuple::create({optimization->current_beta1(), 0.99}));
    } else {
      const auto& options =
          static_cast<const torch::optim::AdamWOptions&>(optimization->optimizers()[0]->param_groups()[0].options());
      group.insert("betas", c10::ivalue::Tuple::create({optimization->current_beta1(), 0.999}));
      group.insert("eps", options.eps());
      group.insert("amsgrad", false);
    }
    groups.push_back(group);
  }
  opt.insert("param_groups", groups);
  return opt;
}

// salt's HybridMuonAdamW.state_dict(); state keys are model-order indices.
Dict hybrid_optimizer(const CheckpointState& state, const Optimization& optimization) {
  std::vector<int64_t> muon, adamw;
  auto muon_names = new_list(), adamw_names = new_list();
  const auto& muon_opt = *optimization.optimizers()[0];
  for (std::size_t i = 0; i < optimization.parameters().size(); ++i) {
    if (!optimization.owner(i)) continue;
    const bool is_muon = optimization.owner(i) == &muon_opt;
    (is_muon ? muon : adamw).push_back(static_cast<int64_t>(i));
    (is_muon ? muon_names : adamw_names).push_back(optimization.parameter_names()[i]);
  }
  std::vector<int64_t> both = muon;
  both.insert(both.end(), adamw.begin(), adamw.end());

  const auto& mo = static_cast<const MuonOptions&>(muon_opt.param_groups()[0].options());
  auto muon_group = schedule_group(optimization, muon);
  muon_group.insert("momentum", mo.momentum());
  muon_group.insert("nesterov", mo.nesterov());
  const auto& abc = mo.ns_coefficients();
  muon_group.insert("ns_coefficients", c10::ivalue::Tuple::create({abc[0], abc[1], abc[2]}));
  muon_group.insert("eps", mo.eps());
  muon_group.insert("ns_steps", mo.ns_steps());
  muon_group.insert("adjust_lr_fn", std::string(mo.adjust_lr() == MuonLrAdjust::kOriginal ? "original" : "match_rms_adamw"));
  muon_group.insert("use_addmm", false);
  auto adamw_group = schedule_group(optimization, adamw);
  adamw_group.insert("betas", c10::ivalue::Tuple::create({0.9, 0.999}));
  adamw_group.insert("eps", 1e-8);
  adamw_group.insert("amsgrad", false);

  auto empty = Dict(c10::IntType::get(), c10::AnyType::get());
  auto opt = new_dict();
  opt.insert("wrapper", optimizer_dict(empty, schedule_group(optimization, both)));
  opt.insert("muon", optimizer_dict(state_of(state.adam_state, muon), muon_group));
  opt.insert("adamw", optimizer_dict(state_of(state.adam_state, adamw), adamw_group));
  opt.insert("muon_names", muon_names);
  opt.insert("adamw_names", adamw_names);
  return opt;
}

AdamParamState parse_entry(const Dict& entry) {
  AdamParamState s;
  auto get = [&](const char* key) {
    auto it = entry.find(key);
    return it == entry.end() ? torch::Tensor() : it->value().toTensor();
  };
  auto step = get("step");
  if (step.defined()) s.step = static_cast<int64_t>(step.item<double>());
  s.exp_avg = get("exp_avg");
  s.exp_avg_sq = get("exp_avg_sq");
  s.momentum_buffer = get("momentum_buffer");
  return s;
}

// Adds an optimizer's {index: entry} states to `out` (grown to fit).
void read_states(const Dict& opt, std::vector<AdamParamState>& out, const std::string& source) {
  for (const auto& item : lookup(opt, "state", source).toGenericDict()) {
    auto i = static_cast<std::size_t>(item.key().toInt());
    if (out.size() <= i) out.resize(i + 1);
    out[i] = parse_entry(item.value().toGenericDict());
  }
}

int64_t group_params(const Dict& opt, const std::string& source) {
  auto groups = lookup(opt, "param_groups", source).toList();
  return groups.size() > 0 ? static_cast<int64_t>(groups.get(0).toGenericDict().at("params").toList().size()) : 0;
}

std::vector<AdamParamState> read_optimizer(const Dict& opt, const std::string& source) {
  std::vector<AdamParamState> out;
  int64_t n = 0;
  if (opt.find("muon") != opt.end()) {  // HybridMuonAdamW
    read_states(lookup(opt, "muon", source).toGenericDict(), out, source);
    read_states(lookup(opt, "adamw", source).toGenericDict(), out, source);
    n = group_params(lookup(opt, "wrapper", source).toGenericDict(), source);
  } else {
    read_states(opt, out, source);
    n = group_params(opt, source);
  }
  if (static_cast<int64_t>(out.size()) < n) out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const CheckpointState& state, const Optimization* optimization) {
  auto root = new_dict();
  root.insert("epoch", state.epoch);
  root.insert("global_step", state.global_step);
  // A version Lightning's checkpoint migration parses (it refuses other strings)
  // and needs no migration for; salt-cpp's own version is under "salt_cpp".
  root.insert("pytorch-lightning_version", std::string(kLightningVersion));
  // Lightning restores each callback's state from here when present; none is required.
  root.insert("callbacks", new_dict());

  auto weights = new_dict();
  for (const auto& [key, tensor] : state.state_dict) weights.insert(key, tensor.detach().cpu());
  root.insert("state_dict", weights);

  // Lightning: optimizer_states = [optimizer.state_dict()], params by index.
  const bool hybrid = optimization && optimization->kind() == OptimizerKind::kHybridMuonAdamW;
  auto opt = hybrid ? hybrid_optimizer(state, *optimization) : single_optimizer(state, optimization);
  auto optimizers = new_list();
  optimizers.push_back(opt);
  root.insert("optimizer_states", optimizers);

  auto sched = new_dict();
  sched.insert("total_steps", state.scheduler_total_steps);
  const int64_t last_epoch = state.scheduler_last_epoch >= 0 ? state.scheduler_last_epoch : state.global_step;
  sched.insert("last_epoch", last_epoch);
  sched.insert("_step_count", last_epoch + 1);
  auto scheds = new_list();
  scheds.push_back(sched);
  root.insert("lr_schedulers", scheds);

  if (state.amp_scaling) {  // torch's GradScaler.state_dict()
    auto amp = new_dict();
    amp.insert("scale", state.amp_scaling->scale);
    amp.insert("growth_factor", state.amp_scaling->growth_factor);
    amp.insert("backoff_factor", state.amp_scaling->backoff_factor);
    amp.insert("growth_interval", state.amp_scaling->growth_interval);
    amp.insert("_growth_tracker", state.amp_scaling->growth_tracker);
    root.insert("native_amp_scaling_state", amp);
  }

  auto hparams = new_dict();
  hparams.insert("config", state.config_yaml);
  root.insert("hyper_parameters", hparams);

  auto metrics = new_dict();
  for (const auto& [name, value] : state.metrics) metrics.insert(name, value);
  auto extra = new_dict();
  extra.insert("metrics", metrics);
  extra.insert("batch_in_epoch", state.batch_in_epoch);
  extra.insert("version", salt_version());
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
  verify_zip_crcs(bytes.data(), bytes.size(), source);  // LibTorch's reader checks no CRC; torch.load does
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
  if (optimizers.size() > 0) state.adam_state = read_optimizer(optimizers.get(0).toGenericDict(), source);
  auto scheds = lookup(root, "lr_schedulers", source).toList();
  if (scheds.size() > 0) {
    auto sched = scheds.get(0).toGenericDict();
    state.scheduler_total_steps = sched.at("total_steps").toInt();
    if (sched.contains("last_epoch")) state.scheduler_last_epoch = sched.at("last_epoch").toInt();
  }
  state.config_yaml = lookup(lookup(root, "hyper_parameters", source).toGenericDict(), "config", source).toStringRef();
  if (auto amp = root.find("native_amp_scaling_state"); amp != root.end() && amp->value().isGenericDict()) {
    auto a = amp->value().toGenericDict();
    GradScalerState s;
    auto number = [&](const char* key, double fallback) {
      return a.contains(key) && (a.at(key).isDouble() || a.at(key).isInt()) ? a.at(key).toScalar().toDouble() : fallback;
    };
    s.scale = number("scale", s.scale);
    s.growth_factor = number("growth_factor", s.growth_factor);
    s.backoff_factor = number("backoff_factor", s.backoff_factor);
    s.growth_interval = static_cast<int64_t>(number("growth_interval", static_cast<double>(s.growth_interval)));
    s.growth_tracker = static_cast<int64_t>(number("_growth_tracker", 0));
    state.amp_scaling = s;
  }
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
