#include "config/compose.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/env_switches.h"
#include "config/schema.h"
#include "config/tree_ops.h"
#include "config/validate.h"
#include "config/yaml_load.h"
#include "config/yaml_util.h"
#include "core/errors.h"
#include "core/install_paths.h"

namespace salt::config {
namespace fs = std::filesystem;

namespace {

AcceptsArg schema_accepts() {
  return [](const std::string& class_path, const std::string& arg) { return components().accepts(class_path, arg); };
}

// Runs one step of composing (a file's merge, a flag) and checks the config it
// leaves: a tree past the limits is refused naming the step (`where`) that took it
// there. Three files, each within the limits, merged into a config past them were
// "<yaml>:0: the document is too large".
template <class Step>
void within_limits(const std::string& where, const YAML::Node& tree, Step&& step) {
  try {
    step();
    check_tree_size(tree);
  } catch (const TreeTooLarge& e) {
    throw UsageError(where + ": merged with what comes before it, " + e.what());
  }
}

// `where` names the YAML in errors: its file, or what a text merged from memory is.
void merge_loaded(Composed& composed, const LoadedYaml& loaded, const std::string& where) {
  within_limits(where, composed.tree,
                [&] { composed.tree = merge_values(composed.tree, loaded.root, schema_accepts()); });
  for (const auto& [key, where] : loaded.origins) composed.origins[key] = where;
}

// The token owns the path it wrote, and every parent it created on the way.
void record_cli_origin(Origins& origins, const std::string& written, const std::string& token) {
  const auto where = "command line '" + token + "'";
  for (auto dot = written.find('.'); dot != std::string::npos; dot = written.find('.', dot + 1))
    origins.emplace(written.substr(0, dot), where);
  record_origin(origins, written, where);
}

void apply_links(YAML::Node config) {
  YAML::Node model = config["model"];
  model["name"] = copy_tree(config["name"]);
  model["global_object"] = copy_tree(config["data"]["global_object"]);
}

void emit_node(YAML::Emitter& out, const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      if (node.size() == 0) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap << YAML::Block;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& kv : node) {
        out << YAML::Key;
        emit_node(out, kv.first);
        out << YAML::Value;
        emit_node(out, kv.second);
      }
      out << YAML::EndMap;
      return;
    case YAML::NodeType::Sequence: {
      bool flat = true;
      for (const auto& item : node) flat = flat && item.IsScalar();
      if (node.size() == 0 || flat) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& item : node) emit_node(out, item);
      out << YAML::EndSeq;
      if (node.size() == 0 || flat) out << YAML::Block;
      return;
    }
    case YAML::NodeType::Scalar:
      // A scalar quoted in the source stays a string when read back.
      if (is_quoted(node)) out << YAML::DoubleQuoted << node.Scalar();
      else out << node.Scalar();
      return;
    default:
      out << YAML::Null;
  }
}

}  // namespace

Composed compose(const std::string& base_file, const std::vector<ConfigOp>& ops) {
  Composed composed;
  composed.tree = YAML::Node(YAML::NodeType::Map);
  if (!base_file.empty()) merge_loaded(composed, load_yaml_file(base_file), base_file);
  const auto accepts = schema_accepts();
  for (const auto& op : ops) {
    switch (op.kind) {
      case ConfigOp::Kind::kMergeFile:
        merge_loaded(composed, load_yaml_file(op.target), op.target);
        break;
      case ConfigOp::Kind::kMergeText:
        merge_loaded(composed, load_yaml_string(op.value, op.target), op.target);
        break;
      case ConfigOp::Kind::kSet: {
        std::string written;
        within_limits("command line '" + op.token + "'", composed.tree, [&] {
          written = set_path(composed.tree, op.target, parse_cli_value(op.value), accepts, op.token);
        });
        record_cli_origin(composed.origins, written, op.token);
        break;
      }
      case ConfigOp::Kind::kAppend: {
        std::string written;
        within_limits("command line '" + op.token + "'", composed.tree, [&] {
          written = append_path(composed.tree, op.target, parse_cli_value(op.value), op.token);
        });
        record_cli_origin(composed.origins, written, op.token);
        break;
      }
    }
  }
  return composed;
}

namespace {

// `name` and `log_suffix` name the run directory under trainer.default_root_dir:
// a separator or `..` would put it elsewhere (inside the git tree, say).
void check_run_names(const RunConfig& run, const Origins& origins) {
  auto refuse = [&](const std::string& key, const std::string& problem) {
    const auto where = origin_of(origins, key);
    throw UsageError((where.empty() ? std::string("config") : where) + ": '" + key + "': " + problem);
  };
  auto check_name = [&](const std::string& key, const std::string& value) {
    if (value.empty() || value == "." || value == ".." || value.find('/') != std::string::npos ||
        value.find('\0') != std::string::npos)
      refuse(key, "'" + value + "' is not a name: the run directory is <default_root_dir>/<name>_<log_suffix>, so it "
                  "must be non-empty, without '/', and not '.' or '..'");
  };
  check_name("name", run.name);
  if (run.log_suffix) check_name("log_suffix", *run.log_suffix);
}

}  // namespace

ResolvedConfig resolve(const std::string& base_file, const std::vector<ConfigOp>& ops) {
  auto composed = compose(base_file, ops);
  auto validated = validate(composed.tree, composed.origins);
  apply_links(validated.resolved);
  auto run = read_run_config(validated.resolved);
  check_run_names(run, composed.origins);
  return {validated.resolved, std::move(run), composed.origins, validated.warnings};
}

std::string find_base_config() {
  if (const char* env = env_value("SALT_BASE_CONFIG"); env && *env) {
    if (!fs::exists(env)) throw UsageError(std::string("SALT_BASE_CONFIG=") + env + ": no such file");
    return env;
  }
  const auto base = share_dir() / "configs" / "base.yaml";
  std::error_code ec;
  if (!fs::exists(base, ec))
    throw UsageError("cannot find " + base.string() + "; set SALT_BASE_CONFIG to salt's configs/base.yaml");
  return base.string();
}

std::string to_yaml(const YAML::Node& config) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetNullFormat(YAML::LowerNull);
  emit_node(out, config);
  return std::string(out.c_str()) + "\n";
}

Setting setting(const ResolvedConfig& r, const std::string& section, const std::string& key) {
  Setting s;
  const auto node = r.config[section][key];
  s.origin = origin_of(r.origins, section + "." + key);
  if (node.IsSequence()) {
    s.value = static_cast<int>(node.size());
    YAML::Emitter e;
    e << YAML::Flow << node;
    s.text = e.c_str();
  } else {
    s.text = node.Scalar();
    try {
      s.value = std::stoi(s.text);
    } catch (...) {
    }
  }
  return s;
}

}  // namespace salt::config
