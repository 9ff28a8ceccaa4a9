#include "training/callback_registry.h"

#include <map>
#include <set>


namespace salt::callbacks {
namespace {

std::map<std::string, CallbackRegistration>& registrations() {
  static std::map<std::string, CallbackRegistration> by_class_path;
  return by_class_path;
}

}  // namespace

bool register_callback(CallbackRegistration r) {
  const auto class_path = r.spec.class_path;
  config::register_component(r.spec);
  registrations().emplace(class_path, std::move(r));
  return true;
}

CallbackList make_callbacks(const std::vector<config::ComponentNode>& configured, const training::TrainerConfig& trainer) {
  CallbackList list;
  std::set<std::string> present;
  std::vector<config::ComponentNode> nodes = configured;
  nodes.insert(nodes.end(), trainer.loggers.begin(), trainer.loggers.end());  // loggers are callbacks here
  for (const auto& node : nodes) {
    const auto* spec = config::components().find(node.class_path);
    if (!spec) continue;  // validated configs name registered classes only
    present.insert(spec->class_path);
    auto it = registrations().find(spec->class_path);
    if (it == registrations().end() || !it->second.build) continue;
    list.add(it->second.build(node.init_args));
  }
  for (const auto& [class_path, r] : registrations())
    if (r.build && r.default_when && !present.count(class_path) && r.default_when(trainer))
      list.add(r.build(r.default_args ? r.default_args(trainer) : YAML::Node(YAML::NodeType::Map)));
  list.add(make_metrics_writer());
  list.order_checkpoint_writers_last();
  return list;
}

}  // namespace salt::callbacks
