#include "config/tree_ops.h"

#include "config/yaml_load.h"
#include "config/yaml_util.h"
#include "core/errors.h"

namespace salt::config {
namespace {

bool is_component_meta_key(const std::string& key) {
  return key == "class_path" || key == "init_args" || key == "dict_kwargs";
}

YAML::Node merge_maps(const YAML::Node& dst, const YAML::Node& src, const AcceptsArg& accepts) {
  YAML::Node out = copy_tree(dst);
  for (const auto& kv : src) set_entry(out, kv.first, merge_values(get_entry(dst, kv.first), kv.second, accepts));
  return out;
}

// dst is a component; src is a component, a bare class path, or a map of args.
YAML::Node merge_component(const YAML::Node& dst, const YAML::Node& src, const AcceptsArg& accepts) {
  YAML::Node incoming;
  if (src.IsScalar()) {
    incoming = YAML::Node(YAML::NodeType::Map);
    incoming["class_path"] = src.Scalar();
  } else if (is_component(src)) {
    incoming.reset(src);
  } else {
    // Only arguments: they belong to the current class.
    incoming = YAML::Node(YAML::NodeType::Map);
    incoming["class_path"] = class_path_of(dst);
    YAML::Node args(YAML::NodeType::Map);
    for (const auto& kv : src) {
      const auto key = kv.first.Scalar();
      if (key == "init_args")
        args = merge_maps(args, kv.second, accepts);
      else if (key != "class_path")
        args[key] = copy_tree(kv.second);
    }
    incoming["init_args"] = args;
  }

  const auto old_class = class_path_of(dst);
  const auto new_class = class_path_of(incoming);
  YAML::Node out(YAML::NodeType::Map);
  out["class_path"] = new_class;
  YAML::Node kept(YAML::NodeType::Map);
  auto old_args = get(dst, "init_args");
  if (old_args.IsMap()) {
    for (const auto& kv : old_args) {
      const auto key = kv.first.Scalar();
      if (new_class == old_class || (accepts && accepts(new_class, key))) kept[key] = copy_tree(kv.second);
    }
  }
  auto new_args = get(incoming, "init_args");
  YAML::Node args = new_args.IsMap() ? merge_maps(kept, new_args, accepts) : kept;
  if (args.size() > 0 || has_key(dst, "init_args") || has_key(incoming, "init_args")) out["init_args"] = args;
  for (const auto* extra : {"dict_kwargs"}) {
    auto a = get(dst, extra), b = get(incoming, extra);
    if (a || b) out[extra] = merge_values(a, b, accepts);
  }
  return out;
}

}  // namespace

YAML::Node merge_values(const YAML::Node& dst, const YAML::Node& src, const AcceptsArg& accepts) {
  if (!src.IsDefined()) return copy_tree(dst);
  if (!dst.IsDefined() || dst.IsNull() || src.IsNull()) return copy_tree(src);
  if (is_component(dst) && (src.IsScalar() || src.IsMap())) return merge_component(dst, src, accepts);
  if (dst.IsMap() && src.IsMap()) return merge_maps(dst, src, accepts);
  return copy_tree(src);
}

std::vector<std::string> split_path(const std::string& dotted) { return split_at(dotted, '.'); }

std::vector<std::string> split_at(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

namespace {

bool parse_index(const std::string& s, std::size_t* index) {
  // More digits than any list has items: not an index (and beyond std::stoul).
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *index = std::stoul(s);
  return true;
}

// Walks to the parent of the last segment, creating maps as needed. Returns the
// parent node and fills `leaf` (the final key) and `canonical` (the full path).
YAML::Node walk_to_parent(YAML::Node root, const std::string& path, const std::string& token, std::string* leaf,
                          std::string* canonical) {
  auto parts = split_path(path);
  for (const auto& p : parts)
    if (p.empty()) throw UsageError("command line '" + token + "': empty key in '" + path + "'");
  YAML::Node cur;
  cur.reset(root);
  std::string canon;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& seg = parts[i];
    if (cur.IsMap() && is_component(cur) && !is_component_meta_key(seg)) {
      if (!has_key(cur, "init_args")) cur["init_args"] = YAML::Node(YAML::NodeType::Map);
      YAML::Node args = cur["init_args"];
      cur.reset(args);
      canon = join_path(canon, "init_args");
    }
    if (i + 1 == parts.size()) {
      // A key below a scalar (`data: oops` then --data.batch_size): yaml-cpp would throw BadSubscript.
      if (cur.IsScalar())
        throw UsageError("command line '" + token + "': '" + canon + "' is a single value, not a mapping");
      *leaf = seg;
      *canonical = join_path(canon, seg);
      return cur;
    }
    if (cur.IsSequence()) {
      std::size_t index = 0;
      if (!parse_index(seg, &index) || index >= cur.size())
        throw UsageError("command line '" + token + "': '" + canon + "' is a list of " + std::to_string(cur.size()) +
                         " items; '" + seg + "' is not a valid index");
      YAML::Node next = cur[index];
      cur.reset(next);
    } else {
      if (!cur.IsMap()) {
        if (cur.IsNull() || !cur.IsDefined())
          cur = YAML::Node(YAML::NodeType::Map);
        else
          throw UsageError("command line '" + token + "': '" + canon + "' is a single value, not a mapping");
      }
      if (!has_key(cur, seg)) cur[seg] = YAML::Node(YAML::NodeType::Map);
      YAML::Node next = cur[seg];
      if (next.IsNull()) {
        cur[seg] = YAML::Node(YAML::NodeType::Map);
        next.reset(cur[seg]);
      }
      cur.reset(next);
    }
    canon = join_path(canon, seg);
  }
  return cur;  // unreachable
}

}  // namespace

std::string set_path(YAML::Node root, const std::string& path, const YAML::Node& value, const AcceptsArg& accepts,
                     const std::string& token) {
  std::string leaf, canonical;
  YAML::Node parent = walk_to_parent(root, path, token, &leaf, &canonical);
  if (parent.IsSequence()) {
    std::size_t index = 0;
    if (!parse_index(leaf, &index) || index >= parent.size())
      throw UsageError("command line '" + token + "': '" + leaf + "' is not a valid index of a list of " +
                       std::to_string(parent.size()) + " items");
    parent[index] = merge_values(parent[index], value, accepts);
    return canonical;
  }
  parent[leaf] = merge_values(get(parent, leaf), value, accepts);
  return canonical;
}

std::string append_path(YAML::Node root, const std::string& path, const YAML::Node& value, const std::string& token) {
  std::string leaf, canonical;
  YAML::Node parent = walk_to_parent(root, path, token, &leaf, &canonical);
  if (parent.IsSequence()) throw UsageError("command line '" + token + "': cannot append to a list item");
  auto current = get(parent, leaf);
  if (!current.IsDefined() || current.IsNull()) {
    parent[leaf] = YAML::Node(YAML::NodeType::Sequence);
  } else if (!current.IsSequence()) {
    throw UsageError("command line '" + token + "': '" + canonical + "' is not a list, so '+=' cannot append to it");
  }
  YAML::Node list = parent[leaf];
  list.push_back(copy_tree(value));
  return canonical;
}

}  // namespace salt::config
