#include "serialize/yaml_value.h"

#include <stdexcept>

#include "config/yaml11_scalars.h"
#include "core/nesting.h"

namespace salt::serialize {
namespace {

// A scalar as yaml.safe_load types it. Mapping keys too (`as_key`): `{0: 0, 4: 1}`,
// a task's label_map, has int keys, and LightningCLI re-parses the checkpoint's
// hyper_parameters with them (salt's label_map compares labels == key).
PyValue scalar(const YAML::Node& node, bool as_key = false) {
  const auto& text = node.Scalar();
  if (node.Tag() == "!") return PyValue::str(text);  // quoted
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return PyValue();
  if (auto b = config::yaml11_bool(text)) return PyValue::boolean(*b);
  if (auto i = config::yaml11_int(text)) return PyValue::integer(*i);
  // jsonargparse turns 1e-5 (a string to PyYAML) into a float for float arguments,
  // and LightningCLI's hyper_parameters hold the parsed values; keys stay strings.
  if (!as_key)
    if (auto f = config::yaml11_float(text)) return PyValue::real(*f);
  return PyValue::str(text);
}

void check_depth(int depth) {
  if (depth > kMaxNesting) throw std::invalid_argument("nested deeper than " + std::to_string(kMaxNesting) + " levels");
}

PyValue to_py(const YAML::Node& node, int depth) {
  check_depth(depth);
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      auto d = PyValue::dict();
      for (const auto& kv : node) d.set_item(scalar(kv.first, /*as_key=*/true), to_py(kv.second, depth + 1));
      return d;
    }
    case YAML::NodeType::Sequence: {
      auto l = PyValue::list();
      for (const auto& item : node) l.append(to_py(item, depth + 1));
      return l;
    }
    case YAML::NodeType::Scalar: return scalar(node);
    default: return PyValue();
  }
}

}  // namespace

PyValue yaml_to_py(const YAML::Node& node) { return to_py(node, 0); }

namespace {

void emit(YAML::Emitter& out, const PyValue& v, int depth) {
  check_depth(depth);
  switch (v.kind()) {
    case PyValue::Kind::kNone: out << YAML::Null; break;
    case PyValue::Kind::kBool: out << v.as_bool(); break;
    case PyValue::Kind::kInt: out << v.as_int(); break;
    case PyValue::Kind::kFloat: out << v.as_number(); break;
    case PyValue::Kind::kStr: out << YAML::DoubleQuoted << v.as_str(); break;
    case PyValue::Kind::kTuple:
    case PyValue::Kind::kList:
      out << YAML::BeginSeq;
      for (const auto& item : v.items()) emit(out, item, depth + 1);
      out << YAML::EndSeq;
      break;
    case PyValue::Kind::kDict:
      out << YAML::BeginMap;
      for (const auto& [key, value] : v.entries()) {
        out << YAML::Key;
        emit(out, key, depth + 1);
        out << YAML::Value;
        emit(out, value, depth + 1);
      }
      out << YAML::EndMap;
      break;
    default: throw std::invalid_argument("a " + v.type_name() + " has no YAML form");
  }
}

}  // namespace

std::string py_to_yaml(const PyValue& value) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out.SetDoublePrecision(17);
  emit(out, value, 0);
  return out.c_str();
}

}  // namespace salt::serialize
