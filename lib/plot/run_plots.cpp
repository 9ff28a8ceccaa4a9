#include "plot/run_plots.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/errors.h"
#include "data/h5_file.h"
#include "plot/loss_curves.h"
#include "plot/rejection.h"

namespace salt::plot {
namespace fs = std::filesystem;
namespace h5 = data::h5;

namespace {

double field_value(const uint8_t* p, h5::FieldType t) {
  switch (t.kind) {
    case h5::Kind::Float:
      if (t.size == 4) { float v; std::memcpy(&v, p, 4); return v; }
      if (t.size == 8) { double v; std::memcpy(&v, p, 8); return v; }
      if (t.size == 2) { uint16_t v; std::memcpy(&v, p, 2); return h5::half_to_float(v); }
      break;
    case h5::Kind::Int:
    case h5::Kind::Bool: {
      int64_t v = 0;
      std::memcpy(&v, p, t.size);
      const int shift = 64 - 8 * t.size;  // sign-extend (little-endian)
      return static_cast<double>(shift ? (v << shift) >> shift : v);
    }
    case h5::Kind::UInt: {
      uint64_t v = 0;
      std::memcpy(&v, p, t.size);
      return static_cast<double>(v);
    }
    default: break;
  }
  return 0;
}

// The named fields of a 1-D compound dataset as doubles, read in blocks of rows.
std::map<std::string, std::vector<double>> read_fields(const h5::Dataset& d, const std::vector<std::string>& names) {
  const auto& layout = d.layout();
  std::map<std::string, std::vector<double>> out;
  const int64_t block = 1 << 16;
  std::vector<uint8_t> buffer(static_cast<size_t>(block) * layout.record_size);
  for (int64_t start = 0; start < d.rows(); start += block) {
    const int64_t n = std::min(block, d.rows() - start);
    d.read_records(start, n, 1, buffer.data());
    for (const auto& name : names) {
      const auto* f = layout.find(name);
      auto& column = out[name];
      for (int64_t i = 0; i < n; ++i) column.push_back(field_value(buffer.data() + i * layout.record_size + f->offset, f->type));
    }
  }
  return out;
}

std::vector<std::string> taggers_of(const h5::CompoundLayout& layout) {
  std::vector<std::string> taggers;
  for (const auto& name : layout.names()) {
    if (name.size() <= 3 || name.compare(name.size() - 3, 3, "_pb") != 0) continue;
    const auto tagger = name.substr(0, name.size() - 3);
    if (layout.find(tagger + "_pc") && layout.find(tagger + "_pu")) taggers.push_back(tagger);
  }
  return taggers;
}

// "epoch=002-val_loss=0.58424__test_ttbar" -> "ttbar"
std::string sample_of(const fs::path& file) {
  const auto stem = file.stem().string();
  const auto at = stem.rfind("__test_");
  return at == std::string::npos ? stem : stem.substr(at + 7);
}

}  // namespace

std::vector<fs::path> plot_predictions(const fs::path& file, double f_c) {
  std::vector<TaggerCurves> curves;
  int64_t n_b = 0, n_c = 0, n_light = 0;
  {
    h5::Guard guard;
    auto h5file = h5::File::open_read(file);
    if (!h5file.has_dataset("jets")) throw InputError(file.string() + ": no 'jets' dataset to plot");
    const auto jets = h5file.dataset("jets");
    if (!jets.is_compound()) throw InputError(file.string() + ": 'jets' is not a table of named fields");
    const auto taggers = taggers_of(jets.layout());
    if (taggers.empty()) throw InputError(file.string() + ": no tagger in 'jets' (no <tagger>_pb/_pc/_pu fields)");
    if (!jets.layout().find("HadronConeExclTruthLabelID"))
      throw InputError(file.string() + ": 'jets' has no HadronConeExclTruthLabelID, so the flavours are unknown");
    std::vector<std::string> fields{"HadronConeExclTruthLabelID"};
    for (const auto& t : taggers)
      for (const char* p : {"_pb", "_pc", "_pu"}) fields.push_back(t + p);
    auto columns = read_fields(jets, fields);
    const auto& label = columns["HadronConeExclTruthLabelID"];
    for (const auto& t : taggers) {
      std::vector<double> b, c, light;
      const auto &pb = columns[t + "_pb"], &pc = columns[t + "_pc"], &pu = columns[t + "_pu"];
      for (std::size_t i = 0; i < label.size(); ++i) {
        const double d = discriminant_b(pb[i], pc[i], pu[i], f_c);
        if (label[i] == 5) b.push_back(d);
        else if (label[i] == 4) c.push_back(d);
        else if (label[i] == 0) light.push_back(d);
      }
      n_b = static_cast<int64_t>(b.size()), n_c = static_cast<int64_t>(c.size()), n_light = static_cast<int64_t>(light.size());
      if (b.empty()) throw InputError(file.string() + ": no b jets (HadronConeExclTruthLabelID 5) to plot against");
      const auto effs = default_efficiencies();
      curves.push_back({t, rejection_curve(b, light, effs, "light"), rejection_curve(b, c, effs, "c")});
    }
  }
  char counts[160];
  std::snprintf(counts, sizeof counts, "%lld b, %lld c, %lld light jets", static_cast<long long>(n_b),
                static_cast<long long>(n_c), static_cast<long long>(n_light));
  char fc[32];
  std::snprintf(fc, sizeof fc, "f_c = %.2f", f_c);
  const auto figure = rejection_figure(curves, {"salt-cpp, " + sample_of(file), counts, fc});
  return save(figure, file.parent_path() / (file.stem().string() + "_roc"));
}

std::vector<fs::path> plot_losses(const fs::path& run_dir) {
  const auto table = read_metrics_csv(run_dir / "metrics.csv");
  auto name = fs::absolute(run_dir).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();  // "logs/run/"
  const auto figure = loss_figure(table, {"salt-cpp, " + name.filename().string()});
  if (figure.series.empty()) throw InputError((run_dir / "metrics.csv").string() + ": no loss was logged yet");
  return save(figure, run_dir / "loss_curves");
}

std::vector<fs::path> plot_run(const fs::path& run_dir) {
  std::error_code ec;
  if (!fs::is_regular_file(run_dir / "metrics.csv", ec))
    throw InputError(run_dir.string() + ": not a run directory (no metrics.csv)");
  auto written = plot_losses(run_dir);
  std::vector<fs::path> predictions;
  for (const auto& entry : fs::directory_iterator(run_dir / "ckpts", ec))
    if (entry.path().extension() == ".h5" && entry.path().filename().string()[0] != '.') predictions.push_back(entry.path());
  std::sort(predictions.begin(), predictions.end());
  for (const auto& p : predictions) {
    auto files = plot_predictions(p);
    written.insert(written.end(), files.begin(), files.end());
  }
  return written;
}

}  // namespace salt::plot
