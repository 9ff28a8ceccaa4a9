#include "training/loop/run_files.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "config/bake.h"
#include "config/compose.h"
#include "config/salt_readable.h"
#include "config/yaml_load.h"
#include "core/atomic_file.h"
#include "core/blas_info.h"
#include "core/env_switches.h"
#include "core/errors.h"
#include "core/provenance.h"
#include "core/torch_compat.h"
#include "training/checkpoints/checkpoint.h"

namespace salt::training {
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string yaml_text(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetNullFormat(YAML::LowerNull);
  out << node;
  return std::string(out.c_str()) + "\n";
}

// salt's get_attr: a string attribute holding a JSON list or object (the
// preprocessing writes dsids, jet_counts and its config so) is stored as that list
// or map, not as a string; anything else as it is.
YAML::Node attr_or_null(const YAML::Node& attrs, const char* key) {
  auto v = attrs[key];
  if (!v) return YAML::Node(YAML::NodeType::Null);
  if (v.IsScalar()) {
    const auto& text = v.Scalar();
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && (text[first] == '[' || text[first] == '{')) {
      try {
        return YAML::Load(text);  // JSON is YAML's flow style
      } catch (const YAML::Exception&) {
        // not JSON after all: kept as the string, as salt keeps it
      }
    }
  }
  return config::copy_tree(v);
}

// Copies of the dicts in the run directory, and the config pointing at them (as
// salt does): the config.yaml to write.
YAML::Node config_with_dict_copies(const fs::path& run_dir, const RunSetup& setup) {
  YAML::Node config = config::copy_tree(setup.config);
  auto norm_copy = run_dir / "norm_dict.yaml";
  write_file_atomic(norm_copy, read_text(setup.run.data.norm_dict));
  std::optional<std::string> class_copy;
  if (!setup.run.data.class_dict.empty()) {
    class_copy = (run_dir / "class_dict.yaml").string();
    write_file_atomic(*class_copy, read_text(setup.run.data.class_dict));
  }
  config::bake_run_dir(config, norm_copy.string(), class_copy, run_dir.string());
  return config;
}

}  // namespace

YAML::Node write_run_files(const fs::path& run_dir, const RunSetup& setup, const RunInfo& info) {
  create_directories_or_fail(run_dir, "run directory (trainer.default_root_dir)");
  YAML::Node config = config_with_dict_copies(run_dir, setup);

  YAML::Node meta(YAML::NodeType::Map);
  meta["train_file"] = info.train->path().string();
  meta["val_file"] = info.val->path().string();
  meta["num_train"] = info.train->num_rows();
  meta["num_val"] = info.val->num_rows();
  meta["batch_size"] = setup.run.data.batch_size;
  meta["trainable_params"] = info.trainable_params;
  meta["num_gpus"] = info.num_gpus;
  YAML::Node ids(YAML::NodeType::Sequence);
  for (int id : info.gpu_ids) ids.push_back(id);
  meta["gpu_ids"] = ids;
  meta["num_workers"] = setup.run.data.num_workers;
  meta["available_train"] = info.train->available_rows();
  meta["available_val"] = info.val->available_rows();
  auto train_attrs = info.train->file_attributes();
  auto val_attrs = info.val->file_attributes();
  meta["num_unique_jets_train"] = attr_or_null(train_attrs, "unique_jets");
  meta["dsids"] = attr_or_null(train_attrs, "dsids");
  meta["jet_counts_train"] = attr_or_null(train_attrs, "jet_counts");
  meta["pp_config_train"] = attr_or_null(train_attrs, "config");
  meta["num_unique_jets_val"] = attr_or_null(val_attrs, "unique_jets");
  meta["jet_counts_val"] = attr_or_null(val_attrs, "jet_counts");
  meta["pp_config_val"] = attr_or_null(val_attrs, "config");
  for (const auto& [key, members] : {std::pair{"train_members", &info.train_members}, {"val_members", &info.val_members}}) {
    if (members->empty()) continue;
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& m : *members) {
      YAML::Node entry;
      entry["file"] = m.file.string();
      entry["jets"] = m.rows;
      list.push_back(entry);
    }
    meta[key] = list;
  }
  // salt: dict(zip(range(n), the train file's flavour_label attribute)), a map.
  auto names = info.train->class_names();
  if (!names.empty()) {
    YAML::Node classes(YAML::NodeType::Map);
    for (std::size_t i = 0; i < names.size(); ++i) classes[static_cast<int>(i)] = names[i];
    meta["object_classes"] = classes;
  }
  meta["salt_hash"] = info.git && info.git["git_commit"] ? config::copy_tree(info.git["git_commit"])
                                                         : YAML::Node(YAML::NodeType::Null);
  if (info.git && info.git.IsMap())
    for (const auto& kv : info.git) meta[kv.first.as<std::string>()] = config::copy_tree(kv.second);
  meta["timestamp"] = info.timestamp;
  meta["torch_version"] = compat::torch_version();
  meta["lightning_version"] = kLightningVersion;
  const auto cuda = compat::cuda_version();
  meta["cuda_version"] = cuda ? YAML::Node(*cuda) : YAML::Node(YAML::NodeType::Null);
  meta["salt_cpp_version"] = salt_version();
  meta["salt_cpp_commit"] = build_commit();
  meta["salt_cpp_build_dirty"] = build_dirty();
  meta["cuda_available"] = torch::cuda::is_available();
  meta["float32_matmul_precision"] = info.float32_matmul_precision;
  if (info.step_options) meta["step_options"] = config::copy_tree(info.step_options);
  YAML::Node environment(YAML::NodeType::Map);  // every variable of salt --help-env that is set
  for (const auto& [name, value] : env_switches_set()) environment[name] = value;
  meta["environment"] = environment;
  if (info.init_from && info.init_from.size() > 0) meta["init_from"] = config::copy_tree(info.init_from);
  meta["blas"] = active_blas().vendor;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  meta["hostname"] = std::string(host);

  write_file_atomic(run_dir / "metadata.yaml", yaml_text(meta));
  config::make_salt_readable(config, names);
  // config.yaml last: its presence marks a run directory that started properly.
  write_file_atomic(run_dir / "config.yaml", config::to_yaml(config));
  return config;
}

namespace {

YAML::Node optional_mb(const std::optional<double>& mb) {
  return mb ? YAML::Node(std::round(*mb * 10) / 10) : YAML::Node(YAML::NodeType::Null);
}

}  // namespace

void write_run_resources(const fs::path& run_dir, const std::vector<EpochResources>& stages,
                         const std::vector<std::string>& attention_kernels,
                         const std::optional<GraphsCount>& graphs) {
  const auto path = run_dir / "metadata.yaml";
  YAML::Node meta = config::load_yaml_file(path.string()).root;
  YAML::Node resources(YAML::NodeType::Map);
  YAML::Node list(YAML::NodeType::Sequence);
  double peak_rss = 0;
  std::optional<double> peak_gpu;
  for (const auto& s : stages) {
    YAML::Node entry(YAML::NodeType::Map);
    entry["stage"] = s.stage;
    entry["epoch"] = s.epoch;
    entry["seconds"] = std::round(s.seconds * 1000) / 1000;
    entry["data_wait_seconds"] = std::round(s.data_wait_seconds * 1000) / 1000;
    entry["peak_host_rss_mb"] = std::round(s.peak_host_rss_mb * 10) / 10;
    entry["peak_gpu_allocated_mb"] = optional_mb(s.peak_gpu_allocated_mb);
    entry["peak_gpu_reserved_mb"] = optional_mb(s.peak_gpu_reserved_mb);
    list.push_back(entry);
    peak_rss = std::max(peak_rss, s.peak_host_rss_mb);
    if (s.peak_gpu_allocated_mb) peak_gpu = std::max(peak_gpu.value_or(0), *s.peak_gpu_allocated_mb);
  }
  resources["peak_host_rss_mb"] = std::round(peak_rss * 10) / 10;
  resources["peak_gpu_allocated_mb"] = optional_mb(peak_gpu);
  YAML::Node kernels(YAML::NodeType::Sequence);
  for (const auto& k : attention_kernels) kernels.push_back(k);
  resources["attention_kernels"] = kernels;
  resources["stages"] = list;
  meta["resources"] = resources;
  if (graphs && meta["step_options"]) record_graphs_count(meta["step_options"], *graphs);
  write_file_atomic(path, yaml_text(meta));
}

}  // namespace salt::training
