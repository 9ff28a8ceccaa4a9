#include "deploy/metadata.h"

#include "config/yaml_load.h"
#include "core/provenance.h"
#include "deploy/json.h"

namespace salt::deploy {
namespace fs = std::filesystem;

namespace {

std::string strip_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0
             ? s.substr(0, s.size() - suffix.size())
             : s;
}

// Athena normalises nothing itself: the graph does, so every offset is 0 and scale 1.
YAML::Node variables_of(const std::vector<std::string>& vars, bool strip_jes) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (const auto& v : vars) {
    YAML::Node var;
    var["name"] = json_str(strip_jes ? strip_suffix(v, "_btagJes") : v);
    var["offset"] = "0.0";
    var["scale"] = "1.0";
    list.push_back(var);
  }
  return list;
}

YAML::Node load_or_null(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return YAML::Node(YAML::NodeType::Null);
  return YAML::LoadFile(path.string());
}

}  // namespace

std::string gnn_config_json(const training::RunSetup& setup, const config::ConfigOp& config, const ExportOptions& o,
                            const ExportPlan& plan) {
  const bool from_file = config.kind == config::ConfigOp::Kind::kMergeFile;
  YAML::Node m;
  m["ckpt_path"] = json_str(fs::absolute(o.ckpt_path).lexically_normal().string());
  m["layers"] = YAML::Node(YAML::NodeType::Sequence);
  m["nodes"] = YAML::Node(YAML::NodeType::Sequence);
  m["config.yaml"] = from_file ? YAML::LoadFile(config.target) : YAML::Load(config.value);
  m["metadata.yaml"] = from_file ? load_or_null(fs::path(config.target).parent_path() / "metadata.yaml")
                                 : YAML::Node(YAML::NodeType::Null);
  m["salt_export_hash"] = json_str(build_commit());
  m["salt_cpp_version"] = json_str(salt_version());
  m["forced_export"] = o.force ? "true" : "false";
  m["onnx_model_version"] = json_str("v1");
  m["output_names"] = YAML::Node(YAML::NodeType::Sequence);
  for (const auto& out : plan.outputs) m["output_names"].push_back(json_str(out.name));
  m["model_name"] = json_str(plan.model_name);
  m["inputs"] = YAML::Node(YAML::NodeType::Sequence);
  m["input_sequences"] = YAML::Node(YAML::NodeType::Sequence);
  for (const auto& f : plan.features) {
    YAML::Node in;
    in["name"] = json_str(f.athena_in);
    in["variables"] = variables_of(setup.run.data.variables.at(f.salt_name), f.is_global);
    m[f.is_global ? "inputs" : "input_sequences"].push_back(in);
  }
  if (!plan.parameters.empty()) {
    m["parameters"] = YAML::Node(YAML::NodeType::Map);  // fixed in the graph, not inputs
    for (const auto& [name, value] : plan.parameters) m["parameters"][name] = value;
  }
  m["combine_outputs"] = YAML::Node(YAML::NodeType::Sequence);
  m["rename_outputs"] = YAML::Node(YAML::NodeType::Map);
  for (const auto& out : plan.outputs) {
    if (!out.task.empty() || out.per_constituent) continue;
    YAML::Node combo(YAML::NodeType::Sequence), terms(YAML::NodeType::Sequence);
    combo.push_back(json_str(out.combination.output));
    for (const auto& [scale, term] : out.combination.terms) {
      YAML::Node t(YAML::NodeType::Sequence);
      t.push_back(scale);
      t.push_back(json_str(term));
      terms.push_back(t);
    }
    combo.push_back(terms);
    m["combine_outputs"].push_back(combo);
  }
  for (const auto& r : o.rename) {
    const auto colon = r.find(':');
    m["rename_outputs"][r.substr(0, colon)] = json_str(r.substr(colon + 1));
  }
  return to_json(m);
}

}  // namespace salt::deploy
