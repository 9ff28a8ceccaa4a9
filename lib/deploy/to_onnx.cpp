#include "deploy/to_onnx.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "config/compose.h"
#include "config/edge_config.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/provenance.h"
#include "core/signals.h"
#include "deploy/check.h"
#include "deploy/export_plan.h"
#include "deploy/metadata.h"
#include "deploy/ort_runner.h"
#include "export/graph.h"
#include "data/h5_file.h"
#include "training/checkpoints/checkpoint.h"
#include "training/checkpoints/checkpoint_config.h"
#include "training/run_setup.h"

namespace salt::deploy {
namespace fs = std::filesystem;

namespace {

// The model's config: --config, else the checkpoint's (training::CheckpointConfig:
// the run's config.yaml, or the config the checkpoint carries).
config::ConfigOp config_op(const ExportOptions& o, std::optional<training::CheckpointConfig>& from_checkpoint) {
  if (o.config) {
    if (!fs::is_regular_file(*o.config)) throw UsageError("to_onnx: --config " + o.config->string() + " does not exist");
    return {config::ConfigOp::Kind::kMergeFile, o.config->string(), "", "--config " + o.config->string()};
  }
  return from_checkpoint.emplace("to_onnx", o.ckpt_path).merge_op();
}

std::string model_name(const ExportOptions& o, const std::string& config_name) {
  std::string name = o.name.value_or("");
  if (!o.name)
    for (char c : config_name)
      if (c != '_' && c != '-') name += c;
  if (name.empty()) throw UsageError("to_onnx: --name must not be empty");
  for (unsigned char c : name)  // the name becomes the ONNX outputs' names, which Athena reads
    if (c < 0x20 || c == 0x7f) throw UsageError("to_onnx: --name must not hold control characters (a newline, a tab)");
  if (name.find_first_of("_-") != std::string::npos)
    throw UsageError("to_onnx: --name '" + name + "' must not contain '_' or '-' (Athena splits output names at '_')");
  return name;
}

std::vector<std::string> chosen_tasks(const ExportOptions& o, const models::SaltModelImpl& model) {
  std::vector<std::string> all, jet;
  for (const auto& t : model.task_list()) {
    all.push_back(t->name());
    if (t->input_name() == model.global_object()) jet.push_back(t->name());
  }
  if (o.tasks.empty()) return jet;
  for (const auto& t : o.tasks)
    if (std::find(all.begin(), all.end(), t) == all.end()) {
      std::string known;
      for (const auto& a : all) known += (known.empty() ? "" : ", ") + a;
      throw UsageError("--tasks: no task '" + t + "' in the model (tasks: " + known + ")");
    }
  return o.tasks;
}

fs::path output_path(const ExportOptions& o) {
  if (o.output && o.output->empty()) throw UsageError("to_onnx: --output must not be empty");
  const auto path = o.output ? *o.output : fs::absolute(o.ckpt_path).parent_path().parent_path() / "network.onnx";
  // Never one of the command's own inputs, --overwrite or not.
  std::error_code ec;
  const fs::path config = o.config ? *o.config : fs::absolute(o.ckpt_path).parent_path().parent_path() / "config.yaml";
  for (const auto& [what, input] : {std::pair<std::string, fs::path>{"the checkpoint", o.ckpt_path}, {"the config", config}})
    if (fs::equivalent(path, input, ec))
      throw UsageError("to_onnx: --output " + path.string() + " is " + what + " being exported; give another path");
  if (fs::exists(path) && !o.overwrite)
    throw UsageError("to_onnx: " + path.string() + " exists (pass --overwrite to replace it)");
  const auto dir = fs::absolute(path).parent_path();
  if (!fs::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0)
    throw InputError("to_onnx: cannot write " + path.string() + " (" + dir.string() + " is not a writable directory)");
  return path;
}

// --parameter NAME=VALUE -> (NAME, VALUE), VALUE a number.
std::pair<std::string, std::string> parse_parameter(const std::string& p) {
  const auto eq = p.find('=');
  const std::string value = eq == std::string::npos ? "" : p.substr(eq + 1);
  char* end = nullptr;
  if (eq == 0 || value.empty() || (std::strtod(value.c_str(), &end), *end != '\0'))
    throw UsageError("--parameter: '" + p + "' is not NAME=NUMBER");
  return {p.substr(0, eq), value};
}

// Each --parameter becomes data.parameters.NAME.test: the value the export fixes and
// the check's `salt test` forward uses. `data`: the resolved config's, without them.
void add_parameter_ops(const ExportOptions& o, const config::DataConfig& data, std::vector<config::ConfigOp>& ops) {
  const auto listed = data.variables.find("parameters");
  const auto names = listed == data.variables.end() ? std::vector<std::string>{} : listed->second;
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  for (const auto& p : o.parameters) {
    const auto [name, value] = parse_parameter(p);
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw UsageError("--parameter: '" + name + "' is not a parameter of the model (data.variables.parameters: " +
                       (known.empty() ? std::string("none") : known) + ")");
    ops.push_back({config::ConfigOp::Kind::kSet, "data.parameters." + name + ".test", value, "--parameter " + p});
  }
}

// The model on the CPU in float32, as the graph computes. Only floating tensors are
// cast: Module::to(dtype) would also turn bool buffers (the encoder's
// register_mask) into floats, and the reference forward would then differ.
void float32_on_cpu(torch::nn::Module& model) {
  model.to(torch::kCPU);
  torch::NoGradGuard no_grad;
  auto cast = [](torch::Tensor t) {
    if (t.is_floating_point() && t.scalar_type() != torch::kFloat32) t.set_data(t.to(torch::kFloat32));
  };
  for (auto& p : model.parameters()) cast(p);
  for (auto& b : model.buffers()) cast(b);
}

// Salt's output order: jet-level outputs (task order), renamed in place, then the
// combinations, then TrackOrigin, VertexIndex, TrackType.
int constituent_rank(const std::string& name) {
  for (const auto& [suffix, rank] : {std::pair{"_TrackOrigin", 0}, {"_VertexIndex", 1}, {"_TrackType", 2}})
    if (name.size() > std::strlen(suffix) && name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      return rank;
  return 3;
}

// The graph: inputs by the feature map, normalisation, the model, the outputs.
ExportPlan build_graph(ox::Graph& g, training::RunSetup& setup, const ExportOptions& o, const std::string& name,
                       const std::vector<std::string>& tasks) {
  auto& wrapper = *setup.model;
  auto& model = *wrapper.model;
  ExportPlan plan;
  plan.model_name = name;
  plan.global_object = model.global_object();
  plan.features = default_feature_map(o.track_selection, setup.run.data.input_order, plan.global_object);

  models::OnnxModelInput in;
  in.model_name = name;
  in.tasks = tasks;
  in.object_name = o.object_name.value_or("");
  in.global_variables = setup.run.data.variables.at(plan.global_object);
  for (const auto& f : plan.features) {
    const auto width = static_cast<int64_t>(setup.run.data.variables.at(f.salt_name).size());
    auto raw = f.is_global ? g.input(f.athena_out, ox::DType::kFloat, {1, width})
                           : g.input(f.athena_out, ox::DType::kFloat, {f.num_name, width});
    if (f.is_global) in.raw_global = raw;
    in.inputs[f.salt_name] = wrapper.norm->to_onnx(g, f.salt_name, raw);
    // Edge features (GN2XE) come from the raw constituents, before normalisation.
    if (const auto& edges = wrapper.edge_constructor(); edges && edges->config().input_name == f.salt_name)
      in.inputs[config::edge_input_name(f.salt_name)] = edges->to_onnx(g, raw);
  }
  if (auto it = setup.run.data.variables.find("global"); it != setup.run.data.variables.end()) {
    // salt's exporter reads the `global` inputs from the global object's input.
    std::vector<int64_t> cols;
    for (const auto& v : it->second) {
      auto pos = std::find(in.global_variables.begin(), in.global_variables.end(), v);
      if (pos == in.global_variables.end())
        throw UsageError("to_onnx: data.variables.global has '" + v + "', which is not a variable of '" +
                         plan.global_object + "' (the exported graph reads global inputs from it)");
      cols.push_back(pos - in.global_variables.begin());
    }
    auto gathered = g.op("Gather", {in.raw_global, g.ints(cols)}, {{"axis", int64_t{1}}});
    in.inputs["global"] = wrapper.norm->to_onnx(g, "global", gathered);
  }

  if (!setup.run.data.parameters.empty()) {
    // A parameterised tagger is exported at fixed parameter values (Athena passes no
    // parameters): the values `salt test` uses, so the check compares like with like.
    std::vector<float> values;
    for (const auto& p : setup.run.data.parameters) {
      values.push_back(static_cast<float>(p.test));
      plan.parameters.emplace_back(p.name, p.test);
    }
    in.inputs["parameters"] = g.constant(torch::tensor(values).reshape({1, -1}), "parameters");
  }

  auto outputs = model.to_onnx(g, in);
  std::vector<models::OnnxOutput> jet, per_constituent, objects;
  for (auto& out : outputs) (out.object ? objects : out.per_constituent ? per_constituent : jet).push_back(out);
  std::stable_sort(per_constituent.begin(), per_constituent.end(),
                   [](const auto& a, const auto& b) { return constituent_rank(a.name) < constituent_rank(b.name); });

  std::vector<std::pair<std::string, std::string>> renames;
  for (const auto& r : o.rename) renames.push_back(parse_rename(r));
  std::vector<Combination> combos;
  for (const auto& c : o.combine_outputs) combos.push_back(parse_combination(c));
  std::vector<std::string> names;
  for (const auto& out : jet) names.push_back(out.name);
  const auto final_names = rewrite_output_names(names, name, renames, combos);

  std::map<std::string, ox::Value> by_name;
  for (size_t i = 0; i < jet.size(); ++i) {
    by_name[final_names[i]] = jet[i].value;
    plan.outputs.push_back({final_names[i], jet[i].task, jet[i].column, false, false, "", {}});
  }
  for (size_t c = 0; c < combos.size(); ++c) {
    ox::Value sum;
    for (const auto& [scale, term] : combos[c].terms) {
      auto v = g.op("Mul", {by_name.at(name + "_" + term), g.scalar(static_cast<float>(scale))});
      sum = sum.empty() ? v : g.op("Add", {sum, v});
    }
    const auto& out_name = final_names[jet.size() + c];
    by_name[out_name] = sum;
    plan.outputs.push_back({out_name, "", 0, false, false, "", combos[c]});
  }
  for (const auto& p : plan.outputs) g.output(by_name.at(p.name), p.name, ox::DType::kFloat, {});
  auto declare_per_constituent = [&](const models::OnnxOutput& out) {  // int8 [n_<input>]
    std::string axis = "n_" + out.input;
    for (const auto& f : plan.features)
      if (f.salt_name == out.input) axis = f.num_name;
    g.output(out.value, out.name, ox::DType::kInt8, {axis});
    plan.outputs.push_back({out.name, out.task, 0, true, out.object, out.input, {}});
  };
  for (const auto& out : per_constituent) declare_per_constituent(out);
  // Last, MaskFormer's object outputs (salt's order): the leading object's values, each track's object.
  for (const auto& out : objects) {
    if (out.per_constituent) {
      declare_per_constituent(out);
    } else {
      g.output(out.value, out.name, ox::DType::kFloat, {});
      plan.outputs.push_back({out.name, out.task, out.column, false, true, "", {}});
    }
  }
  if (plan.outputs.empty()) throw UsageError("to_onnx: nothing to export (no task chosen has an ONNX output)");
  return plan;
}

// salt checks on random inputs; salt-cpp on test jets when it can read them: the
// config's data.test_file, unless that file is not there (a config from another
// machine, salt's base.yaml with its /eos path). An explicit --test_file must exist.
CheckJets check_source(const training::RunSetup& setup, const ExportOptions& o) {
  const auto& file = setup.run.data.test_file;
  if (o.test_file || file.find_first_of("*?[") != std::string::npos) return CheckJets::kTestFile;
  std::error_code ec;
  if (!file.empty() && std::filesystem::exists(file, ec)) return CheckJets::kTestFile;
  spdlog::info("data.test_file {} not found: checking the export on random jets, as salt does",
               file.empty() ? "(none)" : file);
  return CheckJets::kRandom;
}

}  // namespace

ExportResult to_onnx(const ExportOptions& o) {
  training::require_checkpoint_file(o.ckpt_path, "to_onnx: --ckpt_path");
  const auto& selections = track_selections();
  if (std::find(selections.begin(), selections.end(), o.track_selection) == selections.end())
    throw UsageError("--track_selection: '" + o.track_selection + "' is not one of Athena's track selections");
  for (const auto& c : o.combine_outputs) parse_combination(c);  // malformed expressions fail before any work
  for (const auto& r : o.rename) parse_rename(r);
  for (const auto& p : o.parameters) parse_parameter(p);
  if (o.object_name && o.object_name->empty()) throw UsageError("--object_name must not be empty");
  if (build_dirty() && !o.force)
    throw UsageError(std::string("to_onnx: this salt binary was built from a tree with uncommitted changes (") +
                     build_commit() + "); commit them or pass --force");
  std::optional<training::CheckpointConfig> from_checkpoint;
  std::vector<config::ConfigOp> ops{config_op(o, from_checkpoint)};
  const auto out_path = output_path(o);
  // A to_onnx killed before it could clean up (SIGKILL) left its temp model and check
  // folder next to the output (its ONNX Runtime child died with it: core/run_command.h).
  if (const int n = remove_dead_leftovers_of(out_path))
    spdlog::info("removed {} temp file(s) and check folder(s) left next to {} by killed processes", n,
                 out_path.string());

  if (o.test_file) ops.push_back({config::ConfigOp::Kind::kSet, "data.test_file", *o.test_file, "--test_file " + *o.test_file});
  auto resolved = config::resolve(config::find_base_config(), ops);
  // An explicit --test_file is checked up front, also when no ONNX Runtime will read it.
  if (o.test_file && o.test_file->find_first_of("*?[") == std::string::npos) data::h5::File::open_read(*o.test_file);
  if (!o.parameters.empty()) {  // names checked first, so an unknown one gets its own line
    add_parameter_ops(o, resolved.run.data, ops);
    resolved = config::resolve(config::find_base_config(), ops);
  }
  auto setup = training::prepare_run(resolved, training::Stage::kTest);
  {
    // A checkpoint read for its config is not read again for its weights.
    auto state = from_checkpoint ? from_checkpoint->take_state() : nullptr;
    if (!state) state = std::make_unique<training::CheckpointState>(training::load_checkpoint(o.ckpt_path));
    training::load_module_state(*setup.model, state->state_dict, o.ckpt_path.string());
  }
  setup.model->eval();
  float32_on_cpu(*setup.model);
  if (int sig = stop_signal()) throw StopRequested{sig};

  const auto name = model_name(o, setup.run.name);
  const auto tasks = chosen_tasks(o, *setup.model->model);
  ox::Graph graph("salt_" + name);
  const auto plan = build_graph(graph, setup, o, name, tasks);

  ox::ModelInfo info;
  info.doc_string = name;
  info.metadata.emplace_back("gnn_config", gnn_config_json(setup, ops.front(), o, plan));
  const auto bytes = ox::finish_model(graph, info);

  // Written and checked under a temp name: a failed check leaves nothing behind.
  const auto tmp = temp_name_for(out_path);
  write_file_synced(tmp, bytes, out_path);
  ExportResult result;
  result.onnx = out_path;
  try {
    const auto runner = find_ort_runner();
    if (int sig = stop_signal()) throw StopRequested{sig};
    if (runner.available()) {
      // Named as remove_dead_leftovers_of(out_path) finds it: .<output>.check.<pid>
      const auto work =
          out_path.parent_path() / ("." + out_path.filename().string() + ".check." + std::to_string(getpid()));
      result = check_export(setup, plan, tmp, work, runner, o.check_jets, check_source(setup, o));
      result.onnx = out_path;
    } else if (o.require_check) {
      throw UsageError("to_onnx: cannot check the export in ONNX Runtime: " + runner.missing);
    } else {
      spdlog::warn("not checked in ONNX Runtime: {}; the ONNX checker accepted the graph", runner.missing);
    }
    fs::rename(tmp, out_path);
  } catch (const InputError& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    // The check ran on the temporary file, gone now: the message names the output.
    std::string what = e.what();
    for (auto at = what.find(tmp.string()); at != std::string::npos; at = what.find(tmp.string(), at))
      what.replace(at, tmp.string().size(), out_path.string() + " (not written)");
    throw InputError(what);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  return result;
}

}  // namespace salt::deploy
