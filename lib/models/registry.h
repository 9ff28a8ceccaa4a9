// Model components register themselves next to their module: the config spec
// (class path, aliases, help, the options binding that is its schema) and the
// builder that turns validated init_args into the module, in one call:
//
//   const bool kRegistered = register_model_component<GlobalAttentionPooling>(
//       {"salt.models.GlobalAttentionPooling", "pooling", binding().type(), "help"},
//       [](const YAML::Node& init_args, const BuildContext& ctx) { ... });
//
// The factory only wires components together by category (encoder, pooling,
// task, loss); it never names a class. Adding a component is its .h/.cpp pair.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "config/bind.h"
#include "config/schema.h"
#include "core/errors.h"

namespace salt::models {

struct ModelContext;

// What a builder gets besides its own init_args.
struct BuildContext {
  const ModelContext* model = nullptr;
  std::string path;               // the component's node, e.g. model.model.init_args.pool_net
  int64_t global_dim = 0;         // the pooled vector (+ "global" inputs): jet-level tasks' input, constituent tasks' context
  int64_t constituent_dim = 0;    // one constituent embedding (the encoder's output)
  std::set<std::string> constituents;  // inputs with an init net other than the global object
  int64_t objects_dim = 0;             // a MaskDecoder's query embeddings (tasks on "objects"); 0: none

  std::string arg(const std::string& key) const { return path + ".init_args." + key; }
  BuildContext at(const std::string& sub_path) const {
    BuildContext c = *this;
    c.path = sub_path;
    return c;
  }
};

template <class Product>
using Builder = std::function<Product(const YAML::Node& init_args, const BuildContext&)>;

// The builders of one product type (encoders, poolings, tasks, losses), by class path.
template <class Product>
std::map<std::string, Builder<Product>>& builders() {
  static std::map<std::string, Builder<Product>> by_class_path;
  return by_class_path;
}

template <class Product>
bool register_model_component(config::ComponentSpec spec, Builder<Product> build) {
  builders<Product>()[spec.class_path] = std::move(build);
  return config::register_component(std::move(spec));
}

// Builds a validated component located at ctx.path.
template <class Product>
Product build_component(const config::ComponentNode& node, const BuildContext& ctx) {
  const auto* spec = config::components().find(node.class_path);
  auto& known = builders<Product>();
  auto it = spec ? known.find(spec->class_path) : known.end();
  if (it == known.end()) throw UsageError(ctx.path + ".class_path: '" + node.class_path + "' cannot be used here");
  return it->second(node.init_args, ctx);
}

}  // namespace salt::models

