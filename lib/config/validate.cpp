#include "config/validate.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "config/did_you_mean.h"
#include "config/yaml_load.h"
#include "config/yaml11_scalars.h"
#include "config/yaml_util.h"
#include "core/errors.h"

namespace salt::config {
namespace {

using Kind = Type::Kind;

std::string emit(const YAML::Node& node) {
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

std::string show(const YAML::Node& node) {
  if (node.IsNull()) return "null";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

bool parse_int(const YAML::Node& node, long long* out) {
  if (!node.IsScalar() || is_quoted(node)) return false;
  auto value = yaml11_int(node.Scalar());
  if (value) *out = *value;
  return value.has_value();
}

// Floats may be quoted: jsonargparse converts any string a `float` argument gets.
bool parse_float(const YAML::Node& node, double* out) {
  if (!node.IsScalar()) return false;
  auto value = yaml11_float(node.Scalar());
  if (value) *out = *value;
  return value.has_value();
}

bool parse_bool(const YAML::Node& node, bool* out) {
  if (!node.IsScalar() || is_quoted(node)) return false;
  auto value = yaml11_bool(node.Scalar());
  if (value) *out = *value;
  return value.has_value();
}

// A validated float, written so any YAML reader sees that float: the user's own
// spelling where yaml-cpp already reads it as a float (1e-5 stays 1e-5), a `.0`
// after integers (so 1 becomes 1.0), else the shortest round-trip text
// (1_000.5 -> 1000.5, quoted "3e-4" -> 0.0003).
YAML::Node float_node(const YAML::Node& node, double value) {
  const auto& text = node.Scalar();
  double plain = 0;
  bool plain_float = !is_quoted(node) && text.find('_') == std::string::npos &&
                     YAML::convert<double>::decode(node, plain) && (plain == value || std::isnan(value));
  if (plain_float && text.find_first_not_of("+-0123456789") == std::string::npos) return YAML::Node(text + ".0");
  if (plain_float) return copy_tree(node);
  if (std::isinf(value)) return YAML::Node(value > 0 ? ".inf" : "-.inf");
  if (std::isnan(value)) return YAML::Node(".nan");
  auto out = fmt::format("{}", value);
  if (out.find_first_of(".eE") == std::string::npos) out += ".0";
  return YAML::Node(out);
}

// Equal as values: 0 and 0.0 are the same number, whatever the spelling.
bool same_value(const YAML::Node& a, const YAML::Node& b) {
  double x, y;
  if (a.IsScalar() && b.IsScalar() && !is_quoted(a) && !is_quoted(b) && YAML::convert<double>::decode(a, x) &&
      YAML::convert<double>::decode(b, y))
    return x == y;
  return emit(a) == emit(b);
}

// Could `node` be an instance of this kind at all? Used to pick the union
// alternative whose error message is worth showing.
bool shape_fits(const Type& type, const YAML::Node& node) {
  switch (type.kind) {
    case Kind::kAny: return true;
    case Kind::kNull: return node.IsNull();
    case Kind::kList: return node.IsSequence();
    case Kind::kDict:
    case Kind::kStruct: return node.IsMap();
    case Kind::kComponent: return node.IsMap() || node.IsScalar();
    case Kind::kUnion:
      for (const auto& alt : type.alternatives)
        if (shape_fits(*alt, node)) return true;
      return false;
    default: return node.IsScalar();
  }
}

std::string joined(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

// a.modules.2.b -> a.modules[2].b
std::string indexed_path(const std::string& path) {
  std::string out;
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find('.', start);
    if (end == std::string::npos) end = path.size();
    auto part = path.substr(start, end - start);
    const bool index = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    out += index ? "[" + part + "]" : (out.empty() ? "" : ".") + part;
    start = end + 1;
  }
  return out;
}

class Validator {
 public:
  explicit Validator(const Origins& origins, bool standalone = false) : origins_(origins), standalone_(standalone) {}

  YAML::Node check(const YAML::Node& node, const Type& type, const std::string& path) {
    switch (type.kind) {
      case Kind::kAny: return copy_tree(node);
      case Kind::kNull:
        if (!node.IsNull()) fail(path, "expected null, got " + show(node));
        return YAML::Node(YAML::NodeType::Null);
      case Kind::kBool: {
        bool value = false;
        if (!parse_bool(node, &value)) fail(path, "expected true or false, got " + show(node));
        return YAML::Node(value);
      }
      case Kind::kInt: {
        long long value = 0;
        if (!parse_int(node, &value)) fail(path, "expected an integer, got " + show(node));
        check_bounds(type, static_cast<double>(value), node, path);
        return YAML::Node(value);  // canonical decimal: 38_000_000 -> 38000000
      }
      case Kind::kFloat: {
        double value = 0;
        if (!parse_float(node, &value)) fail(path, "expected a number, got " + show(node));
        check_bounds(type, value, node, path);
        return float_node(node, value);
      }
      case Kind::kString:
        if (!node.IsScalar()) fail(path, "expected a string, got " + show(node));
        return copy_tree(node);
      case Kind::kPath: {
        if (!node.IsScalar()) fail(path, "expected a file path, got " + show(node));
        std::filesystem::path p(node.Scalar());
        if (p.empty()) fail(path, "expected a file path, got an empty string");
        return YAML::Node(std::filesystem::absolute(p).lexically_normal().string());
      }
      case Kind::kChoice: {
        if (!node.IsScalar()) fail(path, "expected one of " + type.describe() + ", got " + show(node));
        for (const auto& c : type.choices)
          if (node.Scalar() == c) return copy_tree(node);
        if (standalone_ && !type.noun.empty())
          fail(path, "unknown " + type.noun + " '" + node.Scalar() + "'" + did_you_mean(node.Scalar(), type.choices));
        fail(path, "expected one of " + type.describe() + ", got " + show(node) + did_you_mean(node.Scalar(), type.choices));
      }
      case Kind::kList: {
        if (!node.IsSequence()) fail(path, "expected " + type.describe() + ", got " + show(node));
        YAML::Node out(YAML::NodeType::Sequence);
        std::size_t i = 0;
        for (const auto& item : node) out.push_back(check(item, *type.elem, join_path(path, std::to_string(i++))));
        return out;
      }
      case Kind::kDict: {
        if (!node.IsMap()) fail(path, "expected " + type.describe() + ", got " + show(node));
        YAML::Node out(YAML::NodeType::Map);
        for (const auto& kv : node) {
          const auto key = kv.first.Scalar();
          if (type.key->kind == Kind::kInt) {
            long long k = 0;
            if (!parse_int(kv.first, &k)) fail(join_path(path, key), "expected an integer key, got '" + key + "'");
            out[YAML::Node(k)] = check(kv.second, *type.elem, join_path(path, key));
          } else {
            set_entry(out, kv.first, check(kv.second, *type.elem, join_path(path, key)));
          }
        }
        return out;
      }
      case Kind::kStruct: return check_struct(node, type, path);
      case Kind::kUnion: return check_union(node, type, path);
      case Kind::kComponent: return check_component(node, type, path);
    }
    return copy_tree(node);
  }

  std::vector<std::string> warnings;

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
    if (standalone_) throw UsageError(indexed_path(path) + ": " + problem);
    auto where = origin_of(origins_, path);
    throw UsageError((where.empty() ? std::string("config") : where) + ": " + (path.empty() ? "" : "'" + path + "': ") +
                     problem);
  }

  // A number of the right type but out of range: preferred over "expected int |
  // float" when every alternative of a union fails.
  struct RangeError : UsageError {
    using UsageError::UsageError;
  };

  // Every number in a config is finite: none of salt's or Lightning's keys means
  // anything by .inf or .nan, which would end a run later as a non-finite loss (or a
  // raw library message) naming no key. A bounded number must also lie in its bounds.
  void check_bounds(const Type& type, double value, const YAML::Node& node, const std::string& path) const {
    const auto bounds = type.bounds();
    std::string problem;
    if (!std::isfinite(value))
      problem = "must be a finite number" + (bounds.empty() ? "" : " " + bounds) + ", got " + show(node);
    else if ((type.min && value < *type.min) || (type.max && value > *type.max))
      problem = "must be " + bounds + ", got " + show(node);
    if (problem.empty()) return;
    try {
      fail(path, problem);
    } catch (const UsageError& e) {
      throw RangeError(e.what());
    }
  }

  void warn(const std::string& path, const std::string& text) {
    auto where = origin_of(origins_, path);
    warnings.push_back((where.empty() ? "" : where + ": ") + text);
  }

  YAML::Node check_struct(const YAML::Node& node, const Type& type, const std::string& path) {
    if (!node.IsMap()) fail(path, "expected a mapping of keys, got " + show(node));
    std::vector<std::string> names;
    for (const auto& f : type.fields) names.push_back(f.name);
    for (const auto& kv : node) {
      const auto key = kv.first.Scalar();
      if (!type.field(key))
        fail(join_path(path, key), "unknown key" + did_you_mean(key, names));
    }
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& f : type.fields) {
      const auto fpath = join_path(path, f.name);
      auto value = get(node, f.name);
      if (!value.IsDefined()) {
        if (f.required()) fail(path, "missing required key '" + f.name + "' (" + f.help + ")");
        out[f.name] = check(f.default_value, *f.type, fpath);  // also normalises the default's spelling
        continue;
      }
      auto checked = check(value, *f.type, fpath);
      if (f.support != Support::kFull && !f.required() && !same_value(checked, check(f.default_value, *f.type, fpath))) {
        if (f.support == Support::kUnsupported) fail(fpath, (standalone_ ? "not supported: " : "is not supported: ") + f.note);
        warn(fpath, "'" + fpath + "' has no effect: " + f.note);
      }
      out[f.name] = checked;
    }
    return out;
  }

  YAML::Node check_union(const YAML::Node& node, const Type& type, const std::string& path) {
    std::vector<const Type*> candidates;
    for (const auto& alt : type.alternatives)
      if (shape_fits(*alt, node)) candidates.push_back(alt.get());
    if (candidates.empty()) fail(path, "expected " + type.describe() + ", got " + show(node));
    if (candidates.size() == 1) return check(node, *candidates.front(), path);
    std::string range_error;
    for (const auto* alt : candidates) {
      try {
        Validator trial(origins_, standalone_);
        auto out = trial.check(node, *alt, path);
        warnings.insert(warnings.end(), trial.warnings.begin(), trial.warnings.end());
        return out;
      } catch (const RangeError& e) {
        if (range_error.empty()) range_error = e.what();
      } catch (const UsageError&) {
      }
    }
    if (!range_error.empty()) throw UsageError(range_error);
    fail(path, "expected " + type.describe() + ", got " + show(node));
  }

  YAML::Node check_component(const YAML::Node& node, const Type& type, const std::string& path) {
    const auto& registry = components();
    std::string class_path;
    YAML::Node args;
    if (node.IsScalar()) {
      class_path = node.Scalar();
    } else if (node.IsMap()) {
      for (const auto& kv : node) {
        const auto key = kv.first.Scalar();
        if (key != "class_path" && key != "init_args" && key != "dict_kwargs")
          fail(join_path(path, key), "unknown key in a component (expected class_path and init_args)" +
                                         did_you_mean(key, {"class_path", "init_args"}));
      }
      if (!has_key(node, "class_path")) fail(path, "missing 'class_path'");
      class_path = class_path_of(node);
      args.reset(get(node, "init_args"));
    } else {
      fail(path, "expected a class path or {class_path, init_args}, got " + show(node));
    }
    const auto* spec = registry.find(class_path);
    std::vector<std::string> fitting;
    for (const auto* s : registry.in_category(type.category)) fitting.push_back(s->class_path);
    if (!spec && standalone_)
      fail(join_path(path, "class_path"), "unknown " + type.category + " '" + class_path + "' (salt-cpp has " + joined(fitting) + ")");
    if (!spec)
      fail(join_path(path, "class_path"), "unknown class_path '" + class_path + "'" + did_you_mean(class_path, fitting));
    if (spec->category != type.category) {
      fail(join_path(path, "class_path"), "'" + class_path + "' is a " + spec->category + ", but a " + type.category +
                                              " is needed here (" + joined(fitting) + ")");
    }
    if (spec->support == Support::kIgnored || spec->support == Support::kSubstituted)
      warn(path, spec->class_path + " " + spec->note);
    if (spec->support == Support::kUnsupported)
      fail(join_path(path, "class_path"), spec->class_path + " is not supported: " + spec->note);
    YAML::Node out(YAML::NodeType::Map);
    out["class_path"] = spec->class_path;
    YAML::Node empty(YAML::NodeType::Map);
    out["init_args"] = check(args.IsDefined() && !args.IsNull() ? args : empty, *spec->init_args, join_path(path, "init_args"));
    return out;
  }

  const Origins& origins_;
  bool standalone_;
};

}  // namespace

Validated validate(const YAML::Node& tree, const Origins& origins, const TypeP& type) {
  Validator v(origins);
  Validated result;
  result.resolved = v.check(tree, *type, "");
  result.warnings = std::move(v.warnings);
  return result;
}

YAML::Node validate_component(const YAML::Node& node, const std::string& category, const std::string& path) {
  static const Origins none;
  Validator v(none, /*standalone=*/true);
  return v.check(node, *t_component(category), path);
}

}  // namespace salt::config
