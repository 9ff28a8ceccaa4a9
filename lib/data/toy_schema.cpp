#include "data/toy_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "config/model_view.h"
#include "core/errors.h"
#include "core/signals.h"
#include "data/cuts.h"
#include "data/labeller.h"
#include "data/toy_support.h"

namespace salt::data {

namespace fs = std::filesystem;
using Kind = ToyField::Kind;

namespace {

// --- the schema ------------------------------------------------------------------------------

// Names for the global object's flavour_label attribute when the config gives none:
// ftag flavours, so prediction columns get their usual names (pb, pc, pu, ptau, ...).
std::vector<std::string> default_flavours(int64_t n) {
  static const std::vector<std::string> known = {"bjets",      "cjets",     "ujets",   "taujets",
                                                 "strangejets", "gluonjets", "upjets", "downjets"};
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(i < static_cast<int64_t>(known.size()) ? known[static_cast<size_t>(i)] : fmt::format("class{}", i));
  return out;
}

// A kind ranks above another when a field is named twice (e.g. a regression
// denominator that is also an input): a positive value suits both uses.
int rank(Kind k) {
  switch (k) {
    case Kind::kFloat: return 0;
    case Kind::kPositive: return 1;
    default: return 2;
  }
}

class SchemaBuilder {
 public:
  SchemaBuilder(const config::DataConfig& data, int64_t slots) : data_(data), slots_(slots) {
    schema_.global_dataset = data.dataset_of(data.global_object);
    dataset(data.global_object);
  }

  ToyDataset& dataset(const std::string& input) {
    const bool global = input == data_.global_object || input == "global" || input == "parameters";
    const std::string name = global ? schema_.global_dataset : data_.dataset_of(input);
    for (auto& d : schema_.datasets)
      if (d.name == name) return d;
    ToyDataset d;
    d.name = name;
    d.sequence = !global;
    if (d.sequence) {
      auto n = data_.num_inputs.find(input);
      d.slots = n == data_.num_inputs.end() ? slots_ : std::max<int64_t>(n->second, 1);
      if (d.slots > kMaxToySlots)
        throw UsageError(
            fmt::format("data.num_inputs.{}: salt toydata writes 1 to {} slots, got {}", input, kMaxToySlots, d.slots));
    }
    schema_.datasets.push_back(std::move(d));
    return schema_.datasets.back();
  }

  void add(const std::string& input, ToyField f) {
    for (const auto& e : data_.multi_target)  // created by the loader, not stored
      if (e.custom_target == f.name && (e.input_name == input || dataset(e.input_name).name == dataset(input).name)) return;
    auto& fields = dataset(input).fields;
    auto it = std::find_if(fields.begin(), fields.end(), [&](const ToyField& g) { return g.name == f.name; });
    if (it == fields.end())
      fields.push_back(std::move(f));
    else if (rank(f.kind) > rank(it->kind))
      *it = std::move(f);
  }

  void add_inputs() {
    for (const auto& input : data_.input_order) {
      for (const auto& v : data_.variables.at(input)) add(input, {v, Kind::kFloat, {}});
      if (input == "parameters") continue;  // never normalised (salt's InputNorm skips them)
      const auto& ds = dataset(input).name;
      auto& norm = schema_.norm_variables[ds];
      for (const auto& v : data_.variables.at(input))
        if (std::find(norm.begin(), norm.end(), v) == norm.end()) norm.push_back(v);
    }
    for (const auto& [input, extra] : data_.labels)
      for (const auto& l : extra) add(input, {l, Kind::kFloat, {}});
  }

  void add_selections() {
    for (const auto& [input, cuts] : data_.selections)
      for (size_t i = 0; i < cuts.size(); ++i) {
        Cut cut;
        try {
          cut = parse_cut(cuts[i]);
        } catch (const std::invalid_argument& e) {
          throw UsageError(fmt::format("data.selections.{}[{}]: {}", input, i, e.what()));
        }
        if (cut.variable == "NSHARED") {
          add(input, {"numberOfPixelSharedHits", Kind::kPositive, {}});
          add(input, {"numberOfSCTSharedHits", Kind::kPositive, {}});
        } else {
          add(input, {cut.variable, Kind::kFloat, {}});
        }
      }
  }

  // data.edge_constructors: the kinematics the edge features read, with their
  // physical ranges (pt and energy positive, a subjet index of -1, 0 or 1).
  void add_edge_kinematics() {
    for (const auto& c : data_.edge_constructors)
      for (const auto& f : c.edge_features)
        for (const auto& v : config::edge_feature_requirements(f, "data.edge_constructors")) {
          if (v == "pt" || v == "energy") add(c.input_name, {v, Kind::kPositive, {}});
          else if (v == "subjetIndex") add(c.input_name, {v, Kind::kClass, {-1, 0, 1}, {0, 1, 2}, 3});
          else add(c.input_name, {v, Kind::kFloat, {}});
        }
  }

  void add_multi_targets() {
    for (const auto& e : data_.multi_target) {
      const auto v = static_cast<int64_t>(e.value);
      add(e.input_name, {e.sel_label, Kind::kClass, {v, v + 1, v - 1}, {0, 1, 2}, 3});
      add(e.input_name, {e.source, Kind::kPositive, {}});
      if (e.target) add(e.input_name, {*e.target, Kind::kPositive, {}});
    }
  }

  void add_labeller() {
    if (!data_.labeller_config.use_labeller || !data_.labeller_config.class_names) return;
    schema_.labeller_classes = *data_.labeller_config.class_names;
    const Labeller labeller(schema_.labeller_classes, true);
    for (const auto& cuts : labeller.class_cuts())
      for (const auto& c : cuts) add(data_.global_object, {c.variable, Kind::kTruth, {}});
  }

  // data.mf_config: the objects (num_objects slots, ids, classes) and the
  // constituents' link to them; the object tasks add their targets.
  void add_maskformer(const config::ModelView& model) {
    if (!data_.mf_config) return;
    const auto& mf = *data_.mf_config;
    int64_t slots = mf.object.max_objects.value_or(0);
    if (!slots && model.num_objects) slots = *model.num_objects;
    dataset("objects").slots = std::max<int64_t>(1, slots ? slots : 5);
    add("objects", {mf.object.id_label, Kind::kObjectId, {}});
    if (mf.object.class_label) {
      ToyField f{*mf.object.class_label, Kind::kClass, {}, {}, mf.object.null_index()};
      for (const auto& c : mf.object.object_classes)
        if (c.mapped != mf.object.null_index())
          for (int64_t raw : c.raw) f.values.push_back(raw), f.classes.push_back(c.mapped);
      if (f.values.empty()) throw UsageError("data.mf_config.object.object_classes: no raw values for the object classes");
      add("objects", f);
    }
    add(mf.constituent.name, {mf.constituent.id_label, Kind::kParentId, {}});
    objects_ = dataset("objects").name;
  }
  const std::string& objects_dataset() const { return objects_; }

  ToySchema& schema() { return schema_; }
  const config::DataConfig& data() const { return data_; }

 private:
  const config::DataConfig& data_;
  int64_t slots_;
  ToySchema schema_;
  std::string objects_;
};

// A classification task's label: the raw value of each of its n classes (label_map
// inverted, else the class itself), then for a label other than the main one every
// raw value label_map names (each class drawn from any of its raw values).
ToyField class_field(const config::TaskView& t, int64_t n, bool main) {
  ToyField f{t.label, main ? Kind::kMain : Kind::kClass, {}, {}, n};
  for (int64_t c = 0; c < n; ++c) {
    int64_t raw = c;
    for (const auto& [from, to] : t.label_map)
      if (to == c) {
        raw = from;
        break;
      }
    f.values.push_back(raw);
    f.classes.push_back(c);
  }
  if (!main)
    for (const auto& [from, to] : t.label_map) {
      f.values.push_back(from);
      f.classes.push_back(to);
    }
  return f;
}

// Reads the tasks from the typed view of model.model (config::model_view). Only
// labels are needed here, not the modules, so the task list is read as data
// rather than built.
void add_tasks(SchemaBuilder& b, const config::ModelView& model) {
  // A task on a merge_dict input reads its members' labels.
  auto merged = [&](const std::string& input) -> const std::vector<std::string>* {
    auto it = model.merge_dict.find(input);
    return it == model.merge_dict.end() ? nullptr : &it->second;
  };
  auto add = [&](const std::string& input, const ToyField& f) {
    if (const auto* members = merged(input))
      for (const auto& m : *members) b.add(m, f);
    else
      b.add(input, f);
  };
  bool main_found = false;
  for (size_t i = 0; i < model.tasks.size(); ++i) {
    const config::TaskView& t = model.tasks[i];
    const std::string key = fmt::format("model.model.init_args.tasks.init_args.modules[{}]", i);
    const std::string& input = t.input_name;
    for (const auto& w : t.sample_weight) add(input, {w, Kind::kPositive, {}});
    if (t.kind == config::TaskView::Kind::kVertexing) {
      add(input, {t.label, Kind::kVertex, {}});
    } else if (t.kind == config::TaskView::Kind::kRegression) {
      for (const auto& f : t.targets) add(input, {f, Kind::kPositive, {}});
      for (const auto& f : t.target_denominators) add(input, {f, Kind::kPositive, {}});
    } else if (t.kind == config::TaskView::Kind::kClassification) {
      if (t.class_names.empty() && !t.output_size)
        throw UsageError(key + ".init_args: salt toydata needs class_names or dense_config.output_size to know the classes");
      int64_t n = t.class_names.empty() ? *t.output_size : static_cast<int64_t>(t.class_names.size());
      if (n == 1) n = 2;  // a binary task with one logit
      const auto* members = merged(input);
      const ToyDataset ds = b.dataset(members && !members->empty() ? members->front() : input);  // a copy: add() may grow the list
      const bool main = !main_found && !ds.sequence && input == b.data().global_object;
      // The main label needs values[k] = a raw value of class k; others draw any raw value.
      const ToyField f = class_field(t, n, main);
      if (main) {
        main_found = true;
        auto& s = b.schema();
        s.num_classes = n;
        s.class_names = t.class_names.empty() ? default_flavours(n) : t.class_names;
        if (!s.labeller_classes.empty()) s.class_names = s.labeller_classes;
      }
      const bool relabelled = main && !b.schema().labeller_classes.empty();
      if (!relabelled) add(input, f);
      b.schema().class_dict_labels[ds.name].push_back(t.label);
    } else {
      throw UsageError(fmt::format("{}.class_path: salt toydata does not know the labels of '{}'", key, t.class_path));
    }
  }
}

}  // namespace

ToySchema toy_schema_from_config(const YAML::Node& model_model, const config::DataConfig& data, int64_t slots) {
  if (slots < 1 || slots > kMaxToySlots)
    throw UsageError(fmt::format("--slots: must be a whole number from 1 to {}, not {}", kMaxToySlots, slots));
  SchemaBuilder b(data, slots);
  b.add_labeller();
  b.add_inputs();
  b.add_edge_kinematics();
  b.add_selections();
  b.add_multi_targets();
  const config::ModelView model = config::model_view(model_model);
  b.add_maskformer(model);
  add_tasks(b, model);
  auto& s = b.schema();
  s.objects_dataset = b.objects_dataset();
  if (s.class_names.empty()) s.class_names = default_flavours(s.num_classes);
  return s;
}

namespace {

// --- the writer ------------------------------------------------------------------------------

// The mean of a float variable for class k: a fixed pattern from the name, so that
// every input carries some information about the class.
double class_mean(const std::string& name, int64_t k) {
  const uint64_t h = toy::splitmix64(std::hash<std::string>{}(name) ^ toy::splitmix64(static_cast<uint64_t>(k) + 1));
  return (static_cast<double>(h % 9) - 4.0) * 0.25;
}

// Truth values per class that ftag's cuts map back to that class: each cut's
// smallest satisfying value, unconstrained variables 0. Checked against all classes.
std::vector<std::map<std::string, int64_t>> truth_values(const std::vector<std::string>& classes) {
  const Labeller labeller(classes, true);
  std::vector<std::map<std::string, int64_t>> out;
  for (const auto& cuts : labeller.class_cuts()) {
    std::map<std::string, int64_t> v;
    for (const auto& c : cuts) {
      const int64_t x = c.values.empty() ? 0 : static_cast<int64_t>(c.values.front().as_double());
      if (c.modulus) v[c.variable] = x;
      else if (c.op == "==" || c.op == ">=" || c.op == "<=" || c.op == "in") v[c.variable] = x;
      else if (c.op == ">" || c.op == "!=") v[c.variable] = x + 1;
      else if (c.op == "<") v[c.variable] = x - 1;
      else if (c.op == "notin") {
        int64_t m = 0;
        for (const auto& n : c.values) m = std::max(m, static_cast<int64_t>(n.as_double()));
        v[c.variable] = m + 1;
      }
    }
    out.push_back(std::move(v));
  }
  auto value_of = [](const std::map<std::string, int64_t>& v, const std::string& name) {
    auto it = v.find(name);
    return CutNumber::of_int(it == v.end() ? 0 : it->second);
  };
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t last = -1;
    for (size_t c = 0; c < out.size(); ++c) {
      const auto& cuts = labeller.class_cuts()[c];
      if (std::all_of(cuts.begin(), cuts.end(),
                      [&](const Cut& cut) { return cut.passes(value_of(out[k], cut.variable), ColumnKind::Int); }))
        last = static_cast<int64_t>(c);
    }
    if (last != static_cast<int64_t>(k))
      throw UsageError(fmt::format("data.labeller_config.class_names[{}]: salt toydata cannot make truth variables that "
                                   "ftag labels '{}' (its cuts overlap another class's)",
                                   k, classes[k]));
  }
  return out;
}

h5::FieldType type_of(Kind k, bool half) {
  switch (k) {
    case Kind::kFloat: return half ? h5::kF2 : h5::kF4;
    case Kind::kPositive: return h5::kF4;  // targets and weights keep full precision, as UPP keeps pt
    default: return h5::kI4;
  }
}

struct Layout {
  bool half = false;  // kFloat fields stored as float16
  h5::CompoundBuilder builder;
  std::vector<size_t> offsets;  // per field
  size_t valid = 0, size = 0;
};

Layout layout_of(const ToyDataset& d, bool half) {
  Layout l;
  l.half = half;
  for (const auto& f : d.fields) l.builder.add(f.name, type_of(f.kind, half));
  if (d.sequence) l.builder.add("valid", h5::kBool);
  const h5::CompoundLayout c = l.builder.layout();
  for (const auto& f : d.fields) l.offsets.push_back(c.find(f.name)->offset);
  if (d.sequence) l.valid = c.find("valid")->offset;
  l.size = c.record_size;
  return l;
}

// Statistics of the training file: moments of the norm variables, class counts.
struct SchemaStats {
  std::map<std::string, std::map<std::string, toy::Moments>> moments;  // dataset -> variable
  std::map<std::string, std::map<std::string, std::vector<int64_t>>> counts;  // dataset -> label -> per class
};

class RowWriter {
 public:
  RowWriter(const ToySchema& s, toy::Rng& rng, const std::vector<std::map<std::string, int64_t>>& truth)
      : s_(s), rng_(rng), truth_(truth) {}

  // One record of `d` for a row of class k; `stats` (training file only) or null.
  void set_objects(int64_t n) { objects_ = n; }
  void fill(const ToyDataset& d, const Layout& l, uint8_t* rec, int64_t k, SchemaStats* stats, int64_t slot = 0) {
    slot_ = slot;
    for (size_t i = 0; i < d.fields.size(); ++i) {
      const ToyField& f = d.fields[i];
      uint8_t* p = rec + l.offsets[i];
      if (f.kind == Kind::kFloat || f.kind == Kind::kPositive) {
        const double m = class_mean(f.name, k);
        float x = static_cast<float>(f.kind == Kind::kFloat ? rng_.normal(m, 1.0) : std::exp(rng_.normal(0.5 * m, 0.3)));
        if (f.kind == Kind::kFloat && l.half) {
          const uint16_t h = h5::float_to_half(x);
          std::memcpy(p, &h, 2);
          x = h5::half_to_float(h);  // the statistics of what is stored
        } else {
          std::memcpy(p, &x, 4);
        }
        if (stats) add_moment(*stats, d, f.name, x);
      } else {
        int64_t cls = 0;
        int32_t x = value(f, k, cls);
        std::memcpy(p, &x, 4);
        if (stats && (f.kind == Kind::kClass || f.kind == Kind::kMain)) count(*stats, d, f, cls);
      }
    }
    if (d.sequence) rec[l.valid] = 1;
  }

 private:
  int32_t value(const ToyField& f, int64_t k, int64_t& cls) {
    switch (f.kind) {
      case Kind::kMain: cls = k; return static_cast<int32_t>(f.values[static_cast<size_t>(k)]);
      case Kind::kClass:
        cls = static_cast<int64_t>(rng_.uniform() * static_cast<double>(f.values.size()));
        cls = std::min<int64_t>(cls, static_cast<int64_t>(f.values.size()) - 1);
        return static_cast<int32_t>(f.values[static_cast<size_t>(cls)]);
      case Kind::kVertex: return static_cast<int32_t>(rng_.uniform() * 4.0) - 1;
      case Kind::kObjectId: return static_cast<int32_t>(slot_ + 1);
      case Kind::kParentId: {  // uniformly -1 (no object) or one of the row's objects 1..n
        const int64_t pick = std::min<int64_t>(objects_, static_cast<int64_t>(rng_.uniform() * static_cast<double>(objects_ + 1)));
        return pick == 0 ? -1 : static_cast<int32_t>(pick);
      }
      case Kind::kTruth: {
        const auto& v = truth_[static_cast<size_t>(k)];
        auto it = v.find(f.name);
        return static_cast<int32_t>(it == v.end() ? 0 : it->second);
      }
      default: return 0;
    }
  }
  void add_moment(SchemaStats& st, const ToyDataset& d, const std::string& name, float x) {
    auto it = s_.norm_variables.find(d.name);
    if (it == s_.norm_variables.end() || std::find(it->second.begin(), it->second.end(), name) == it->second.end())
      return;
    st.moments[d.name][name].merge(1, x, 0);
  }
  void count(SchemaStats& st, const ToyDataset& d, const ToyField& f, int64_t pos) {
    auto& c = st.counts[d.name][f.name];
    c.resize(static_cast<size_t>(f.num_classes));
    const int64_t cls = f.classes[static_cast<size_t>(pos)];
    if (cls >= 0 && cls < f.num_classes) ++c[static_cast<size_t>(cls)];
  }

  const ToySchema& s_;
  toy::Rng& rng_;
  int64_t objects_ = 0, slot_ = 0;
  const std::vector<std::map<std::string, int64_t>>& truth_;
};

void write_schema_file(const fs::path& tmp, const fs::path& shown, int64_t rows, const ToySchema& s,
                       const ToyDataOptions& o, uint64_t stream, SchemaStats* stats) {
  const auto truth = s.labeller_classes.empty() ? std::vector<std::map<std::string, int64_t>>{} : truth_values(s.labeller_classes);
  std::vector<Layout> layouts;
  for (const auto& d : s.datasets) layouts.push_back(layout_of(d, o.half_precision));
  h5::File file = h5::File::create(tmp, shown);
  {
    std::vector<h5::Dataset> sets;
    for (size_t i = 0; i < s.datasets.size(); ++i) {
      const ToyDataset& d = s.datasets[i];
      h5::DatasetSpec spec;
      spec.shape = {static_cast<hsize_t>(rows)};
      if (d.sequence) {
        spec.shape.push_back(static_cast<hsize_t>(d.slots));
        spec.chunk = {100, static_cast<hsize_t>(d.slots)};
      }
      spec.compression = o.compression;
      h5::Id type = layouts[i].builder.build();
      sets.push_back(h5::create_dataset(file, d.name, type.get(), spec, layouts[i].size));
    }
    const int64_t block = std::max<int64_t>(1, o.block_jets);
    std::vector<std::vector<uint8_t>> bufs(s.datasets.size());
    for (int64_t first = 0, b = 0; first < rows; first += block, ++b) {
      if (int sig = stop_signal()) throw StopRequested{sig};
      const int64_t n = std::min(block, rows - first);
      toy::Rng rng(toy::splitmix64(toy::splitmix64(o.seed) ^ toy::splitmix64(stream * 0x100000001b3ull + static_cast<uint64_t>(b))));
      RowWriter w(s, rng, truth);
      for (size_t i = 0; i < s.datasets.size(); ++i)
        bufs[i].assign(static_cast<size_t>(n * s.datasets[i].slots) * layouts[i].size, 0);
      for (int64_t r = 0; r < n; ++r) {
        const int64_t k = std::min<int64_t>(static_cast<int64_t>(rng.uniform() * static_cast<double>(s.num_classes)), s.num_classes - 1);
        // At least one constituent, about half the slots on average.
        auto some = [&](int64_t slots) { return 1 + std::min<int64_t>(slots - 1, static_cast<int64_t>(rng.uniform() * static_cast<double>(slots))); };
        int64_t objects = 0;  // MaskFormer objects of this row, drawn first: the constituents link to them
        for (const auto& d : s.datasets)
          if (d.name == s.objects_dataset) objects = some(d.slots);
        w.set_objects(objects);
        for (size_t i = 0; i < s.datasets.size(); ++i) {
          const ToyDataset& d = s.datasets[i];
          const size_t rs = layouts[i].size;
          uint8_t* row = bufs[i].data() + static_cast<size_t>(r * d.slots) * rs;
          const int64_t used = d.name == s.objects_dataset ? objects : d.sequence ? some(d.slots) : 1;
          for (int64_t c = 0; c < used; ++c) w.fill(d, layouts[i], row + static_cast<size_t>(c) * rs, k, stats, c);
        }
        // With the labeller the class is derived, not stored: count it for the class dict.
        if (stats && !s.labeller_classes.empty()) {
          auto& c = stats->counts[s.global_dataset]["flavour_label"];
          c.resize(static_cast<size_t>(s.num_classes));
          ++c[static_cast<size_t>(k)];
        }
      }
      for (size_t i = 0; i < s.datasets.size(); ++i) sets[i].write_records(first, n, bufs[i].data());
    }
    h5::write_attr(sets.front().id(), "flavour_label", s.class_names);
    h5::write_attr(file.id(), "writer_version", std::string("salt-cpp toydata --config"));
    h5::write_attr(file.id(), "num_jets", rows);
    h5::write_attr(file.id(), "unique_jets", rows);
    h5::write_attr(file.id(), "dsids", std::string("[999999]"));
    h5::write_attr(file.id(), "config", fmt::format("{{\"generator\": \"salt-cpp toydata --config\", \"seed\": {}, \"stream\": {}}}", o.seed, stream));
    file.flush();
  }
  file.close();
}

std::string norm_dict_yaml(const ToySchema& s, const SchemaStats& st) {
  std::string out;
  for (const auto& [ds, vars] : s.norm_variables) {
    out += ds + ":\n";
    for (const auto& v : vars) {
      const toy::Moments m = st.moments.count(ds) && st.moments.at(ds).count(v) ? st.moments.at(ds).at(v) : toy::Moments{};
      const double sd = m.std() > 0 ? m.std() : 1.0;  // a constant variable: unit std, not a division by 0
      out += fmt::format("  {}:\n    mean: {}\n    std: {}\n", v, toy::yaml_number(m.mean), toy::yaml_number(sd));
    }
  }
  return out;
}

// UPP's weights: total / count per class, divided by the smallest, 2 decimals; a
// class that never occurs counts once (every class needs a weight).
std::string class_dict_yaml(const ToySchema& s, const SchemaStats& st) {
  std::string out;
  for (const auto& [ds, labels] : s.class_dict_labels) {
    std::string entries;
    std::set<std::string> done;
    for (const auto& l : labels) {
      if (!done.insert(l).second || !st.counts.count(ds) || !st.counts.at(ds).count(l)) continue;
      std::map<int64_t, int64_t> counts;
      const auto& c = st.counts.at(ds).at(l);
      for (size_t i = 0; i < c.size(); ++i) counts[static_cast<int64_t>(i)] = std::max<int64_t>(1, c[i]);
      entries += "  " + l + ":\n" + toy::class_weights_yaml(counts);
    }
    if (!entries.empty()) out += ds + ":\n" + entries;
  }
  return out.empty() ? "{}\n" : out;
}

}  // namespace

ToyDataFiles write_schema_toy_data(const ToySchema& s, const ToyDataOptions& o) {
  const ToyDataFiles files = toy_output_files(o);
  toy::PendingFiles pending;
  SchemaStats stats;
  write_schema_file(pending.add(files.train), files.train, o.num_train, s, o, 1, &stats);
  if (o.num_val > 0) write_schema_file(pending.add(files.val), files.val, o.num_val, s, o, 2, nullptr);
  if (o.num_test > 0) write_schema_file(pending.add(files.test), files.test, o.num_test, s, o, 3, nullptr);
  write_file_synced(pending.add(files.norm_dict), norm_dict_yaml(s, stats), files.norm_dict);
  write_file_synced(pending.add(files.class_dict), class_dict_yaml(s, stats), files.class_dict);
  if (int sig = stop_signal()) throw StopRequested{sig};
  pending.commit();
  return files;
}

}  // namespace salt::data
