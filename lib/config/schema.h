// The typed schema of a salt config: every key with its type, default and one
// line of help. The same schema drives validation (errors with file:line and
// did-you-mean), `salt fit --help`, `--print_config` (all defaults explicit) and
// docs/config-reference.md. Components are registered by salt's class paths.
#pragma once
#include <yaml-cpp/yaml.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace salt::config {

struct Type;
using TypeP = std::shared_ptr<const Type>;

// What happens to a key salt accepts but salt-cpp does not implement.
enum class Support {
  kFull,         // implemented
  kIgnored,      // accepted; a non-default value gets a warning saying what happens instead
  kUnsupported,  // accepted only at its default; anything else is an error
  kSubstituted,  // a component run by a stand-in; validation warns, naming what runs instead
};

struct Field {
  std::string name;
  TypeP type;
  YAML::Node default_value;  // undefined = required
  std::string help;
  Support support = Support::kFull;
  std::string note;  // for kIgnored/kUnsupported: what happens instead / why
  bool bound = false;  // a Binding stores it into a typed struct (config/bind.h)

  bool required() const { return !default_value.IsDefined(); }
  // chained setters, torch-style
  Field& ignored(const std::string& why) { support = Support::kIgnored; note = why; return *this; }
  Field& unsupported(const std::string& why) { support = Support::kUnsupported; note = why; return *this; }
};

struct Type {
  enum class Kind { kAny, kNull, kBool, kInt, kFloat, kString, kPath, kChoice, kList, kDict, kStruct, kUnion, kComponent };
  Kind kind = Kind::kAny;
  TypeP elem;                        // kList item, kDict value
  TypeP key;                         // kDict key (string or int)
  std::vector<Field> fields;         // kStruct
  std::vector<TypeP> alternatives;   // kUnion
  std::vector<std::string> choices;  // kChoice
  std::string noun;                  // kChoice: what a choice is ("activation"), for error messages
  std::string category;              // kComponent: which registered components fit here
  std::optional<double> min;         // kInt, kFloat: smallest allowed value
  std::optional<double> max;         // kInt, kFloat: largest allowed value

  std::string describe() const;  // "int", "list[str]", "int | list[int] | null", "component(encoder)"
  std::string bounds() const;    // ">= 1", "in [0, 1]", or "" (kInt, kFloat)
  const Field* field(const std::string& name) const;
};

// Type constructors.
TypeP t_any();
TypeP t_null();
TypeP t_bool();
TypeP t_int();
TypeP t_float();
TypeP t_str();
TypeP t_path();  // a string; relative paths are made absolute against the working directory
TypeP t_choice(std::vector<std::string> choices, std::string noun = "");
TypeP t_list(TypeP elem);
TypeP t_dict(TypeP value, TypeP key = nullptr);  // key defaults to string
TypeP t_struct(std::vector<Field> fields);
TypeP t_union(std::vector<TypeP> alternatives);
TypeP t_optional(TypeP type);  // type | null
TypeP t_component(std::string category);
// The same number type with a lower bound (`int >= 1`); on a union, each number
// alternative gets it, on a list each element. Keeps a 0 where the code divides or
// loops from failing late.
TypeP at_least(const TypeP& type, double min);
// Both bounds, inclusive (`float in [0, 1]`): a probability.
TypeP between(const TypeP& type, double min, double max);
TypeP t_size();         // int >= 1: a layer width, a count of layers or heads
TypeP t_probability();  // float in [0, 1]: a dropout rate

// Field constructors: with a default, or required.
template <class T>
Field field(std::string name, TypeP type, const T& default_value, std::string help) {
  return Field{std::move(name), std::move(type), YAML::Node(default_value), std::move(help)};
}
Field field_null(std::string name, TypeP type, std::string help);  // default null
Field field_node(std::string name, TypeP type, YAML::Node default_value, std::string help);
Field required(std::string name, TypeP type, std::string help);

struct ComponentSpec {
  std::string class_path;
  std::string category;  // e.g. "model", "encoder", "pooling", "task_list", "task", "loss", "callback", "logger"
  TypeP init_args;       // a kStruct
  std::string help;
  Support support = Support::kFull;
  std::string note;  // for kIgnored / kSubstituted: what happens instead
  std::vector<std::string> aliases;  // other class paths that mean the same (e.g. module paths)
};

// Every component a config can name. Components register themselves next to
// their code (models/layers/dense.cpp registers its own spec), from static
// initialisers: `const bool kRegistered = config::register_component({...});`.
class ComponentRegistry {
 public:
  // Throws std::logic_error if the class path (or an alias) is taken.
  void add(ComponentSpec spec);
  // By class path, alias, or (for torch.nn classes) the bare class name salt
  // accepts: `MSELoss` is torch.nn.MSELoss.
  const ComponentSpec* find(const std::string& class_path) const;
  std::vector<const ComponentSpec*> in_category(const std::string& category) const;
  // Sorted by category (model, encoder, pooling, task_list, task, loss, callback,
  // logger, then others) and class path, whatever the registration order.
  const std::vector<ComponentSpec>& all() const { return specs_; }
  bool accepts(const std::string& class_path, const std::string& arg) const;

 private:
  std::vector<ComponentSpec> specs_;
};

// The schema of salt-cpp's configs (defined in schema_*.cpp and by the
// components' own registrations).
const ComponentRegistry& components();
bool register_component(ComponentSpec spec);
TypeP root_type();

}  // namespace salt::config
