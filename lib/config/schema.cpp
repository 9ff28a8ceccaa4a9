#include "config/schema.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace salt::config {
namespace {

TypeP make(Type::Kind kind) {
  auto t = std::make_shared<Type>();
  t->kind = kind;
  return t;
}

}  // namespace

TypeP t_any() { return make(Type::Kind::kAny); }
TypeP t_null() { return make(Type::Kind::kNull); }
TypeP t_bool() { return make(Type::Kind::kBool); }
TypeP t_int() { return make(Type::Kind::kInt); }
TypeP t_float() { return make(Type::Kind::kFloat); }

namespace {

TypeP bounded(const TypeP& type, std::optional<double> min, std::optional<double> max) {
  auto t = std::make_shared<Type>(*type);
  if (t->kind == Type::Kind::kInt || t->kind == Type::Kind::kFloat) {
    t->min = min;
    t->max = max;
  }
  for (auto& alt : t->alternatives) alt = bounded(alt, min, max);
  if (t->kind == Type::Kind::kList) t->elem = bounded(t->elem, min, max);
  return t;
}

}  // namespace

TypeP at_least(const TypeP& type, double min) { return bounded(type, min, std::nullopt); }
TypeP between(const TypeP& type, double min, double max) { return bounded(type, min, max); }
TypeP t_size() { return at_least(t_int(), 1); }
TypeP t_probability() { return between(t_float(), 0, 1); }
TypeP t_str() { return make(Type::Kind::kString); }
TypeP t_path() { return make(Type::Kind::kPath); }

TypeP t_choice(std::vector<std::string> choices, std::string noun) {
  auto t = std::make_shared<Type>();
  t->kind = Type::Kind::kChoice;
  t->choices = std::move(choices);
  t->noun = std::move(noun);
  return t;
}

TypeP t_list(TypeP elem) {
  auto t = std::make_shared<Type>();
  t->kind = Type::Kind::kList;
  t->elem = std::move(elem);
  return t;
}

TypeP t_dict(TypeP value, TypeP key) {
  auto t = std::make_shared<Type>();
  t->kind = Type::Kind::kDict;
  t->elem = std::move(value);
  t->key = key ? std::move(key) : t_str();
  return t;
}

TypeP t_struct(std::vector<Field> fields) {
  auto t = std::make_shared<Type>();
  t->kind = Type::Kind::kStruct;
  t->fields = std::move(fields);
  return t;
}

TypeP t_union(std::vector<TypeP> alternatives) {
  auto t = std::make_shared<Type>();
  t->kind = Type::Kind::kUnion;
  t->alternatives = std::move(alternatives);
  return t;
}

TypeP t_optional(TypeP type) { return t_union({std::move(type), t_null()}); }

TypeP t_component(std::string category) {
  auto t = std::make_shared<Type>();
  t->kind = Type::Kind::kComponent;
  t->category = std::move(category);
  return t;
}

Field field_null(std::string name, TypeP type, std::string help) {
  return Field{std::move(name), std::move(type), YAML::Node(YAML::NodeType::Null), std::move(help)};
}

Field field_node(std::string name, TypeP type, YAML::Node default_value, std::string help) {
  return Field{std::move(name), std::move(type), std::move(default_value), std::move(help)};
}

Field required(std::string name, TypeP type, std::string help) {
  return Field{std::move(name), std::move(type), YAML::Node(YAML::NodeType::Undefined), std::move(help)};
}

std::string Type::describe() const {
  switch (kind) {
    case Kind::kAny: return "any";
    case Kind::kNull: return "null";
    case Kind::kBool: return "bool";
    case Kind::kInt:
    case Kind::kFloat: {
      const std::string s = kind == Kind::kInt ? "int" : "float";
      return min || max ? s + " " + bounds() : s;
    }
    case Kind::kString: return "str";
    case Kind::kPath: return "path";
    case Kind::kChoice: {
      std::string s = "{";
      for (std::size_t i = 0; i < choices.size(); ++i) s += (i ? "," : "") + choices[i];
      return s + "}";
    }
    case Kind::kList: return "list[" + elem->describe() + "]";
    case Kind::kDict: return "dict[" + key->describe() + ", " + elem->describe() + "]";
    case Kind::kStruct: return "mapping";
    case Kind::kUnion: {
      std::string s;
      for (std::size_t i = 0; i < alternatives.size(); ++i) s += (i ? " | " : "") + alternatives[i]->describe();
      return s;
    }
    case Kind::kComponent: return "component(" + category + ")";
  }
  return "?";
}

std::string Type::bounds() const {
  auto text = [](double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  };
  if (min && max) return "in [" + text(*min) + ", " + text(*max) + "]";
  if (min) return ">= " + text(*min);
  if (max) return "<= " + text(*max);
  return "";
}

const Field* Type::field(const std::string& name) const {
  for (const auto& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

namespace {

int category_rank(const std::string& category) {
  static const std::vector<std::string> order{"model", "encoder", "pooling", "task_list", "task", "loss", "callback", "logger"};
  auto it = std::find(order.begin(), order.end(), category);
  return static_cast<int>(it - order.begin());
}

bool before(const ComponentSpec& a, const ComponentSpec& b) {
  auto ra = category_rank(a.category), rb = category_rank(b.category);
  if (ra != rb) return ra < rb;
  if (a.category != b.category) return a.category < b.category;
  return a.class_path < b.class_path;
}

// torch.nn.MSELoss -> MSELoss; other class paths have no short form.
std::string short_torch_name(const std::string& class_path) {
  const std::string prefix = "torch.nn.";
  if (class_path.rfind(prefix, 0) != 0) return "";
  return class_path.substr(class_path.rfind('.') + 1);
}

ComponentRegistry& mutable_components() {
  static ComponentRegistry registry;
  return registry;
}

}  // namespace

void ComponentRegistry::add(ComponentSpec spec) {
  for (const auto& name : [&] {
         auto names = spec.aliases;
         names.push_back(spec.class_path);
         return names;
       }()) {
    if (find(name)) throw std::logic_error("component class path registered twice: " + name);
  }
  specs_.insert(std::upper_bound(specs_.begin(), specs_.end(), spec, before), std::move(spec));
}

const ComponentSpec* ComponentRegistry::find(const std::string& class_path) const {
  for (const auto& s : specs_) {
    if (s.class_path == class_path) return &s;
    if (std::find(s.aliases.begin(), s.aliases.end(), class_path) != s.aliases.end()) return &s;
  }
  if (class_path.find('.') == std::string::npos)
    for (const auto& s : specs_)
      if (short_torch_name(s.class_path) == class_path) return &s;
  return nullptr;
}

const ComponentRegistry& components() { return mutable_components(); }

bool register_component(ComponentSpec spec) {
  mutable_components().add(std::move(spec));
  return true;
}

std::vector<const ComponentSpec*> ComponentRegistry::in_category(const std::string& category) const {
  std::vector<const ComponentSpec*> out;
  for (const auto& s : specs_)
    if (s.category == category) out.push_back(&s);
  return out;
}

bool ComponentRegistry::accepts(const std::string& class_path, const std::string& arg) const {
  const auto* spec = find(class_path);
  return spec && spec->init_args && spec->init_args->field(arg) != nullptr;
}

}  // namespace salt::config
