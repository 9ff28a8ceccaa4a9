#include "submit/sweep.h"

#include "config/did_you_mean.h"
#include "core/errors.h"
#include "submit/option_checks.h"

namespace salt::submit {
namespace {

std::string at(const std::string& where, const YAML::Node& node) {
  if (node.Mark().is_null()) return where;
  return where + ":" + std::to_string(node.Mark().line + 1);
}

// Scalars keep their text as written (1e-3 stays 1e-3); lists and maps become flow YAML.
std::string value_text(const YAML::Node& value) {
  if (value.IsScalar()) return value.Scalar();
  if (value.IsNull()) return "null";
  YAML::Emitter out;
  out << YAML::Flow << value;
  return out.c_str();
}

// A run is one line of the runs file: its keys and values must be single lines.
std::string run_value(const std::string& where, const std::string& key, const YAML::Node& value) {
  auto text = value_text(value);
  check_single_line(at(where, value) + ": the sweep value of '" + key + "'", text);
  return text;
}

std::string key_text(const YAML::Node& key, const std::string& where) {
  if (!key.IsScalar() || key.Scalar().empty())
    throw UsageError(at(where, key) + ": sweep keys are dotted config keys (e.g. model.lrs_config.max)");
  check_single_line(at(where, key) + ": a sweep key", key.Scalar());
  return key.Scalar();
}

std::vector<SweepRun> expand_grid(const YAML::Node& grid, const std::string& where) {
  if (!grid.IsMap()) throw UsageError(at(where, grid) + ": 'grid' must map config keys to lists of values");
  std::vector<SweepRun> runs{{}};
  for (const auto& kv : grid) {
    auto key = key_text(kv.first, where);
    const auto& values = kv.second;
    if (!values.IsSequence() || values.size() == 0)
      throw UsageError(at(where, values) + ": grid key '" + key + "' needs a non-empty list of values");
    std::vector<SweepRun> next;
    for (const auto& run : runs)
      for (const auto& v : values) {
        auto r = run;
        r.emplace_back(key, run_value(where, key, v));
        next.push_back(std::move(r));
      }
    runs = std::move(next);
  }
  return runs;
}

std::vector<SweepRun> expand_list(const YAML::Node& list, const std::string& where) {
  if (!list.IsSequence() || list.size() == 0)
    throw UsageError(at(where, list) + ": 'list' must be a non-empty list of {config key: value} maps");
  std::vector<SweepRun> runs;
  for (const auto& entry : list) {
    if (!entry.IsMap()) throw UsageError(at(where, entry) + ": each 'list' entry must map config keys to values");
    SweepRun run;
    for (const auto& kv : entry) {
      auto key = key_text(kv.first, where);
      run.emplace_back(key, run_value(where, key, kv.second));
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace

std::vector<SweepRun> expand_sweep(const YAML::Node& sweep, const std::string& where) {
  if (!sweep.IsMap()) throw UsageError(where + ": a sweep file maps 'grid' and/or 'list' to overrides");
  for (const auto& kv : sweep) {
    auto key = kv.first.Scalar();
    if (key != "grid" && key != "list")
      throw UsageError(at(where, kv.first) + ": unknown sweep key '" + key + "'" +
                       config::did_you_mean(key, {"grid", "list"}) + " (expected 'grid' and/or 'list')");
  }
  const auto grid = sweep["grid"], list = sweep["list"];
  if (!grid && !list) throw UsageError(where + ": a sweep needs 'grid' and/or 'list'");
  std::vector<SweepRun> grid_runs = grid ? expand_grid(grid, where) : std::vector<SweepRun>{{}};
  std::vector<SweepRun> list_runs = list ? expand_list(list, where) : std::vector<SweepRun>{{}};
  std::vector<SweepRun> runs;
  for (const auto& l : list_runs)
    for (const auto& g : grid_runs) {
      // A key in both would make the run's value depend on flag order: refuse it.
      for (const auto& [key, value] : l)
        for (const auto& gk : g)
          if (gk.first == key)
            throw UsageError(where + ": '" + key + "' is in both 'grid' and 'list'; set it in one of them");
      SweepRun run = l;
      run.insert(run.end(), g.begin(), g.end());
      runs.push_back(std::move(run));
    }
  return runs;
}

std::vector<SweepRun> load_sweep(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw UsageError("--sweep '" + file.string() + "': " +
                     (std::filesystem::exists(file, ec) ? "not a regular file" : "no such file"));
  YAML::Node node;
  try {
    node = YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    throw UsageError("--sweep '" + file.string() + "': cannot read the file");
  } catch (const YAML::ParserException& e) {
    throw UsageError(file.string() + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  return expand_sweep(node, file.string());
}

std::vector<std::string> sweep_flags(const SweepRun& run) {
  std::vector<std::string> flags;
  for (const auto& [key, value] : run) flags.push_back("--" + key + "=" + value);
  return flags;
}

}  // namespace salt::submit
