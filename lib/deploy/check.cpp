#include "deploy/check.h"

#include "data/batch.h"

#include <ATen/CPUGeneratorImpl.h>

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/remove_tree.h"
#include "core/signals.h"
#include "data/norm_dict.h"
#include "models/maskformer/maskformer_outputs.h"
#include "models/salt_wrapper.h"
#include "models/tasks/vertexing_task.h"

namespace salt::deploy {
namespace fs = std::filesystem;

namespace {

constexpr double kTolerance = 1e-5;

// Three more jets from real ones, so that every check covers the edge cases Athena
// sees: jet 0 without constituents, jet 1 with only its first one, and a jet with
// every slot filled (the fullest jet, its empty slots filled with real
// constituents of other jets).
void append_edge_jets(Batch& b) {
  const int64_t n = b.inputs.begin()->second.size(0);
  torch::Tensor valid_count = torch::zeros({n}, torch::kLong);
  for (const auto& [_, mask] : b.pad_masks) valid_count += mask.logical_not().sum(1);
  const auto rows = torch::tensor({int64_t{0}, std::min<int64_t>(1, n - 1), valid_count.argmax().item<int64_t>()});
  for (auto& [name, x] : b.inputs) {
    auto extra = x.index_select(0, rows).clone();
    auto m = b.pad_masks.find(name);
    if (m != b.pad_masks.end()) {
      auto mask = m->second;
      auto extra_mask = mask.index_select(0, rows).clone();
      extra_mask[0].fill_(true);
      auto first = extra_mask[1].logical_not().nonzero();
      extra_mask[1].fill_(true);
      if (first.size(0) > 0) extra_mask[1][first[0][0]] = false;
      const auto pool = x.index({mask.logical_not()});  // every real constituent [M, F]
      const int64_t fill = std::min<int64_t>(pool.size(0), x.size(1));
      extra[2].narrow(0, 0, fill).copy_(pool.narrow(0, 0, fill));
      extra_mask[2].fill_(true);
      extra_mask[2].narrow(0, 0, fill).fill_(false);
      m->second = torch::cat({mask, extra_mask});
    }
    x = torch::cat({x, extra});
  }
  for (auto& [_, labels] : b.labels)
    for (auto& [__, t] : labels) t = torch::cat({t, t.index_select(0, rows)});
  // Masks of what is not an input (MaskFormer's objects) follow their jets' labels.
  for (auto& [name, mask] : b.pad_masks)
    if (!b.inputs.count(name)) mask = torch::cat({mask, mask.index_select(0, rows)});
}

void append_number(std::string& out, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", std::isfinite(v) ? v : 0.0);
  out += buf;
}

// The runner's input file: per jet the global object [1, F] and each constituent
// type's real constituents [n, F], raw (the graph normalises).
}  // namespace

std::string ort_inputs_json(const Batch& b, const std::vector<Feature>& features, int64_t jets) {
  std::string out = "{\"jets\": [";
  for (int64_t j = 0; j < jets; ++j) {
    out += j ? ",\n{" : "\n{";
    bool first = true;
    for (const auto& f : features) {
      auto x = b.inputs.at(f.salt_name)[j].to(torch::kFloat32);
      if (!f.is_global) x = x.index({b.pad_masks.at(f.salt_name)[j].logical_not()});
      x = x.reshape({-1, x.size(-1)}).contiguous();
      out += (first ? "\"" : ", \"") + f.athena_out + "\": {\"dims\": [" + std::to_string(x.size(0)) + ", " +
             std::to_string(x.size(1)) + "], \"data\": [";
      first = false;
      const float* p = x.data_ptr<float>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (i) out += ',';
        append_number(out, p[i]);
      }
      out += "]}";
    }
    out += "}";
  }
  return out + "\n]}\n";
}

Batch read_check_jets(training::RunSetup& setup, int64_t num_jets) {
  auto reader = training::open_reader(setup, setup.run.data.test_file, -1, "num_test", /*test_stage=*/true);
  if (reader->num_rows() == 0)  // the edge jets are made from real ones
    throw InputError("to_onnx: the test file " + setup.run.data.test_file +
                     " holds no jets (0 rows) to check the export on; give a --test_file with jets");
  Batch batch = reader->read(0, std::min<int64_t>(num_jets, reader->num_rows()));
  append_edge_jets(batch);
  return batch;
}

Batch random_check_jets(const training::RunSetup& setup, int64_t num_jets) {
  const auto& D = setup.run.data;
  auto gen = at::detail::createCPUGenerator(/*seed_in=*/20240101);
  Batch b;
  for (const auto& name : D.input_order) {
    auto vars = D.variables.find(name);
    if (vars == D.variables.end() || vars->second.empty()) continue;
    const auto f = static_cast<int64_t>(vars->second.size());
    auto mean = torch::zeros({f}), std = torch::ones({f});
    try {
      const auto p = data::norm_params(setup.norm_dict, D.dataset_of(name), vars->second);
      mean = torch::tensor(p.mean);
      std = torch::tensor(p.std);
    } catch (const InputError&) {
      // not normalised by the dict (parameters, edges): standard normal
    }
    if (name == D.global_object) {
      b.inputs[name] = mean + std * at::randn({num_jets, f}, gen);
      continue;
    }
    auto n = D.num_inputs.find(name);
    const int64_t length = n != D.num_inputs.end() && n->second > 0 ? n->second : 40;
    auto valid = at::randint(1, length + 1, {num_jets}, gen, torch::kLong);
    auto mask = torch::arange(length).unsqueeze(0) >= valid.unsqueeze(1);
    b.inputs[name] = (mean + std * at::randn({num_jets, length, f}, gen)).masked_fill(mask.unsqueeze(-1), 0.0);
    b.pad_masks[name] = mask;
  }
  if (!b.inputs.count(D.global_object))
    throw InputError("to_onnx: no variables for the global object '" + D.global_object + "' to draw random jets from");
  b.size = num_jets;
  append_edge_jets(b);
  return b;
}

namespace {

struct Expected {
  std::vector<torch::Tensor> per_jet;  // per jet: [] float (jet level) or [n] int64 (per constituent)
};

// What salt's exporter derives from the objects (models/maskformer/maskformer_outputs.h), from
// the decoder's predictions in query order, the regression in physical units.
models::MaskformerOutputs maskformer_outputs_of(models::SaltWrapperImpl& wrapper, const models::ModelOutput& out,
                                                const std::string& model_name) {
  const auto& objects = out.objects.objects;
  for (const auto& task : wrapper.model->object_tasks())
    if (task->name() == "regression") {
      const auto values = task->predict(objects.tasks.at(task->name()), {}, nullptr, model_name).values;
      return models::maskformer_outputs(objects.class_probs.to(torch::kFloat32), objects.masks.to(torch::kFloat32), values);
    }
  throw InputError("to_onnx: no object task 'regression' to check the object outputs against");
}

// salt-cpp's own values for every planned output, from the inference path `salt test` uses.
std::map<std::string, Expected> expected_values(training::RunSetup& setup, const ExportPlan& plan, const Batch& b) {
  auto& wrapper = *setup.model;
  torch::NoGradGuard no_grad;
  auto out = wrapper.forward(b.inputs, b.pad_masks, nullptr);
  auto cols = wrapper.predictions(out, b.pad_masks, b.labels.empty() ? nullptr : &b.labels);
  const int64_t jets = b.inputs.at(plan.global_object).size(0);
  std::map<std::string, Expected> expected;
  std::optional<models::MaskformerOutputs> objects;
  for (const auto& p : plan.outputs) {
    Expected e;
    if (p.object) {
      if (!objects) objects = maskformer_outputs_of(wrapper, out, plan.model_name);
      for (int64_t j = 0; j < jets; ++j)
        e.per_jet.push_back(p.per_constituent
                                ? objects->indices[j].index({b.pad_masks.at(p.constituent_input)[j].logical_not()})
                                : objects->leading[j][p.column]);
    } else if (p.task.empty()) {  // a combination of earlier outputs
      for (int64_t j = 0; j < jets; ++j) {
        torch::Tensor sum = torch::zeros({}, torch::kFloat32);
        for (const auto& [scale, term] : p.combination.terms)
          sum = sum + expected.at(plan.model_name + "_" + term).per_jet[j] * static_cast<float>(scale);
        e.per_jet.push_back(sum);
      }
    } else if (!p.per_constituent) {
      const auto& v = cols.at(plan.global_object).at(p.task).values;
      for (int64_t j = 0; j < jets; ++j) e.per_jet.push_back(v[j][p.column].to(torch::kFloat32));
    } else {
      const auto& c = cols.at(p.constituent_input).at(p.task);
      const bool vertex = c.names.size() == 1 && c.names[0] == "VertexIndex";
      auto per_slot = vertex ? c.values.select(-1, 0) : c.values.argmax(-1);
      const auto& mask = b.pad_masks.at(p.constituent_input);
      for (int64_t j = 0; j < jets; ++j) e.per_jet.push_back(per_slot[j].index({mask[j].logical_not()}).to(torch::kLong));
    }
    expected[p.name] = std::move(e);
  }
  return expected;
}

std::vector<double> numbers(const YAML::Node& data) {
  std::vector<double> v;
  for (const auto& x : data) v.push_back(x.IsNull() ? std::nan("") : x.as<double>());  // JSON writes NaN as null
  return v;
}

}  // namespace

ExportResult check_export(training::RunSetup& setup, const ExportPlan& plan, const fs::path& model,
                          const fs::path& work, const OrtRunner& runner, int64_t num_jets, CheckJets source) {
  Batch batch = source == CheckJets::kRandom ? random_check_jets(setup, num_jets) : read_check_jets(setup, num_jets);
  const int64_t jets = batch.inputs.at(plan.global_object).size(0);
  if (int sig = stop_signal()) throw StopRequested{sig};
  const auto expected = expected_values(setup, plan, batch);
  if (int sig = stop_signal()) throw StopRequested{sig};

  std::error_code ec;
  if (!fs::create_directory(work, ec))
    throw InputError("to_onnx: cannot create the check's folder " + work.string() +
                     (ec ? ": " + ec.message() : std::string(": it exists")));
  YAML::Node got;
  try {
    write_file_atomic(work / "inputs.json", ort_inputs_json(batch, plan.features, jets));
    got = run_ort(runner, model, work / "inputs.json", work / "outputs.json");
  } catch (...) {
    salt::remove_tree(work, ec);
    throw;
  }
  salt::remove_tree(work, ec);
  if (got["jets"].size() != static_cast<size_t>(jets))
    throw InputError("to_onnx: the ONNX Runtime runner " + runner.script.string() + " answered for " +
                     std::to_string(got["jets"].size()) + " jets, salt-cpp asked about " + std::to_string(jets));

  ExportResult result;
  result.checked = true;
  result.jets_checked = jets;
  std::set<int64_t> counts;
  for (const auto& f : plan.features) {
    if (f.is_global) continue;
    auto n = batch.pad_masks.at(f.salt_name).logical_not().sum(1);
    for (int64_t j = 0; j < jets; ++j) counts.insert(n[j].item<int64_t>());
    break;  // the first constituent input (tracks)
  }
  result.track_counts.assign(counts.begin(), counts.end());
  std::string summary;
  for (const auto& p : plan.outputs) {
    OutputDiff d;
    d.name = p.name;
    d.integer = p.per_constituent;
    bool nan = false, all_zero = true;
    for (int64_t j = 0; j < jets; ++j) {
      const YAML::Node& answer = got;
      const auto output = answer["jets"][j][p.name];
      if (!output)
        throw InputError("to_onnx: the ONNX Runtime runner " + runner.script.string() + " gave no output " + p.name +
                         " for jet " + std::to_string(j));
      const auto onnx = numbers(output["data"]);
      auto ref = expected.at(p.name).per_jet[j].to(torch::kDouble).reshape({-1}).contiguous();
      if (static_cast<int64_t>(onnx.size()) != ref.numel())
        throw InputError("to_onnx: ONNX Runtime gave " + std::to_string(onnx.size()) + " values of " + p.name +
                         " for jet " + std::to_string(j) + ", salt-cpp " + std::to_string(ref.numel()));
      const double* r = ref.data_ptr<double>();
      for (size_t i = 0; i < onnx.size(); ++i) {
        if (p.object && std::isnan(onnx[i]) != std::isnan(r[i])) {  // a leading object on one side only
          d.max_abs_diff = d.max_scaled_diff = std::numeric_limits<double>::infinity();
          continue;
        }
        if (p.object && std::isnan(r[i])) continue;  // no object passed: NaN on both sides, as salt gives
        if (std::isnan(onnx[i]) || std::isnan(r[i])) nan = true;
        if (onnx[i] != 0) all_zero = false;
        const double diff = std::abs(onnx[i] - r[i]);
        d.max_abs_diff = p.per_constituent ? d.max_abs_diff + (diff != 0) : std::max(d.max_abs_diff, diff);
        d.max_scaled_diff = std::max(d.max_scaled_diff, diff / std::max(1.0, std::abs(r[i])));
      }
    }
    if (nan) throw InputError("to_onnx: output " + p.name + " is NaN for some jets");
    if (all_zero && !p.per_constituent && !p.object) throw InputError("to_onnx: output " + p.name + " is exactly 0 for every jet");
    char buf[96];
    std::snprintf(buf, sizeof buf, p.per_constituent ? "%s %.0f differing" : "%s %.2e", p.name.c_str(), d.max_abs_diff);
    summary += (summary.empty() ? "" : ", ") + std::string(buf);
    result.diffs.push_back(d);
  }
  const auto range = result.track_counts.empty() ? std::string("no constituents")
                                                 : std::to_string(result.track_counts.front()) + ".." +
                                                       std::to_string(result.track_counts.back()) + " constituents";
  spdlog::info("ONNX Runtime vs salt-cpp on {} {} jets ({}): max |diff| {}", jets,
               source == CheckJets::kRandom ? "random" : "test", range, summary);
  for (const auto& d : result.diffs)
    if (d.integer ? d.max_abs_diff > 0 : d.max_scaled_diff > kTolerance)
      throw InputError("to_onnx: ONNX Runtime and salt-cpp disagree on " + d.name + " (" +
                       (d.integer ? std::to_string(int64_t(d.max_abs_diff)) + " entries differ"
                                  : "max |diff| " + std::to_string(d.max_abs_diff) + ", beyond 1e-5 x max(1, |value|)") +
                       "); nothing written");
  return result;
}

}  // namespace salt::deploy
