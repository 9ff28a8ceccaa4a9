#include "deploy/json.h"

#include <regex>
#include <sstream>

namespace salt::deploy {

YAML::Node json_str(const std::string& s) {
  YAML::Node n(s);
  n.SetTag("!");
  return n;
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

namespace {

std::string scalar(const YAML::Node& n) {
  static const std::regex number(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
  const auto& v = n.Scalar();
  if (n.Tag() == "!") return json_quote(v);
  if (v == "true" || v == "True" || v == "false" || v == "False") return v[0] == 't' || v[0] == 'T' ? "true" : "false";
  if (v == "null" || v == "~" || v == "Null") return "null";
  if (std::regex_match(v, number)) return v;
  return json_quote(v);
}

void write(std::ostringstream& out, const YAML::Node& n, int indent, int depth) {
  const std::string pad(static_cast<size_t>(indent * (depth + 1)), ' '), close(static_cast<size_t>(indent * depth), ' ');
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      if (n.size() == 0) {
        out << "{}";
        return;
      }
      out << "{\n";
      size_t i = 0;
      for (const auto& kv : n) {
        out << pad << json_quote(kv.first.as<std::string>()) << ": ";
        write(out, kv.second, indent, depth + 1);
        out << (++i < n.size() ? ",\n" : "\n");
      }
      out << close << "}";
      return;
    }
    case YAML::NodeType::Sequence: {
      if (n.size() == 0) {
        out << "[]";
        return;
      }
      out << "[\n";
      for (size_t i = 0; i < n.size(); ++i) {
        out << pad;
        write(out, n[i], indent, depth + 1);
        out << (i + 1 < n.size() ? ",\n" : "\n");
      }
      out << close << "]";
      return;
    }
    case YAML::NodeType::Scalar: out << scalar(n); return;
    default: out << "null"; return;
  }
}

}  // namespace

std::string to_json(const YAML::Node& node, int indent) {
  std::ostringstream out;
  write(out, node, indent, 0);
  return out.str();
}

}  // namespace salt::deploy
