#include "training/checkpoints/init_from.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <regex>
#include <set>

#include "core/errors.h"

namespace salt::training {
namespace {

struct InitPatterns {
  std::string key;  // init_from.<key>, for messages
  std::vector<std::string> text;
  std::vector<std::regex> re;
  std::vector<bool> used;

  InitPatterns(std::string k, const std::vector<std::string>& patterns) : key(std::move(k)), text(patterns) {
    for (const auto& p : patterns) re.emplace_back(p);
    used.assign(patterns.size(), false);
  }
  bool empty() const { return re.empty(); }
  // Every pattern is tried, so that each one's use is known.
  bool match(const std::string& name) {
    bool any = false;
    for (std::size_t i = 0; i < re.size(); ++i)
      if (std::regex_search(name, re[i])) any = used[i] = true;
    return any;
  }
};

// The model's top modules (model.init_nets, model.encoder, ...), for a pattern that finds nothing.
std::string init_top_modules(const std::vector<std::string>& names) {
  std::set<std::string> tops;
  for (const auto& n : names) {
    const auto first = n.find('.');
    const auto second = first == std::string::npos ? first : n.find('.', first + 1);
    tops.insert(n.substr(0, second));
  }
  std::string list;
  for (const auto& t : tops) list += (list.empty() ? "" : ", ") + t;
  return list;
}

void refuse_unused_pattern(const InitPatterns& p, const std::vector<std::string>& names, const char* what) {
  for (std::size_t i = 0; i < p.used.size(); ++i)
    if (!p.used[i])
      throw UsageError("'init_from." + p.key + "." + std::to_string(i) + "': '" + p.text[i] + "' matches no " + what +
                       " of the model (its modules: " + init_top_modules(names) + ")");
}

std::vector<std::pair<std::string, torch::Tensor>> init_model_state(torch::nn::Module& model) {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (auto& item : model.named_parameters(true)) state.emplace_back(item.key(), item.value());
  for (auto& item : model.named_buffers(true)) state.emplace_back(item.key(), item.value());
  return state;
}

}  // namespace

TakenWeights take_weights(torch::nn::Module& model, const std::vector<std::pair<std::string, torch::Tensor>>& saved,
                          const config::InitFrom& init, const std::string& source) {
  const std::map<std::string, torch::Tensor> from(saved.begin(), saved.end());
  InitPatterns include("include", init.include), exclude("exclude", init.exclude);
  auto state = init_model_state(model);
  std::vector<std::string> names, missing;
  for (const auto& [name, tensor] : state) names.push_back(name);
  TakenWeights taken;
  torch::NoGradGuard no_grad;
  for (auto& [name, target] : state) {
    const bool selected = (include.empty() || include.match(name)) && !exclude.match(name);
    if (!selected) {
      taken.left.push_back(name);
      continue;
    }
    const auto it = from.find(name);
    if (it == from.end()) {
      missing.push_back(name);
      continue;
    }
    if (it->second.sizes() != target.sizes())
      throw InputError(source + ": '" + name + "' has shape " + c10::str(it->second.sizes()) +
                       " but the model expects " + c10::str(target.sizes()) +
                       "; leave it out with init_from.exclude");
    target.copy_(it->second);
    ++taken.tensors;
    taken.values += target.numel();
  }
  refuse_unused_pattern(include, names, "state key");
  refuse_unused_pattern(exclude, names, "state key");
  if (!missing.empty())
    throw InputError(source + ": init_from takes '" + missing.front() + "', which the checkpoint lacks (" +
                     std::to_string(missing.size()) +
                     " missing); pick what it has with init_from.include, or leave the rest out with init_from.exclude");
  return taken;
}

FrozenParameters freeze_parameters(torch::nn::Module& model, const std::vector<std::string>& patterns) {
  FrozenParameters frozen;
  if (patterns.empty()) return frozen;
  InitPatterns freeze("freeze", patterns);
  std::vector<std::string> names;
  for (auto& item : model.named_parameters(true)) {
    names.push_back(item.key());
    if (!freeze.match(item.key())) continue;
    item.value().requires_grad_(false);
    frozen.names.push_back(item.key());
    frozen.values += item.value().numel();
  }
  refuse_unused_pattern(freeze, names, "parameter");
  return frozen;
}

std::vector<std::string> recorded_freeze(const std::string& config_yaml) {
  if (config_yaml.empty()) return {};
  const auto init = config::init_from_of(YAML::Load(config_yaml));
  return init ? init->freeze : std::vector<std::string>{};
}

}  // namespace salt::training
