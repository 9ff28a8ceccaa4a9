#include "data/h5_reader.h"
#include "data/virtual_file.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <set>

#include "core/errors.h"
#include "data/cuts.h"
#include "data/labeller.h"
#include "data/multi_target.h"
#include "data/parameters.h"
#include "data/toy_support.h"

namespace salt::data {

namespace fs = std::filesystem;
using h5::FieldType;
using h5::Kind;

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

namespace {

// Field types as a flat code so the per-record loops switch on a small integer.
enum class Code : uint8_t { F2, F4, F8, I1, I2, I4, I8, U1, U2, U4, U8, B };

Code code_of(FieldType t) {
  switch (t.kind) {
    case Kind::Float: return t.size == 2 ? Code::F2 : t.size == 4 ? Code::F4 : Code::F8;
    case Kind::Int: return t.size == 1 ? Code::I1 : t.size == 2 ? Code::I2 : t.size == 4 ? Code::I4 : Code::I8;
    case Kind::UInt: return t.size == 1 ? Code::U1 : t.size == 2 ? Code::U2 : t.size == 4 ? Code::U4 : Code::U8;
    case Kind::Bool: return Code::B;
    default: return Code::F4;  // unreachable: unsupported types are rejected up front
  }
}

template <typename T>
inline T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline float as_float(const uint8_t* p, Code c) {
  switch (c) {
    case Code::F2: return h5::half_to_float(load<uint16_t>(p));
    case Code::F4: return load<float>(p);
    case Code::F8: return static_cast<float>(load<double>(p));
    case Code::I1: return static_cast<float>(load<int8_t>(p));
    case Code::I2: return static_cast<float>(load<int16_t>(p));
    case Code::I4: return static_cast<float>(load<int32_t>(p));
    case Code::I8: return static_cast<float>(load<int64_t>(p));
    case Code::U1: return static_cast<float>(load<uint8_t>(p));
    case Code::U2: return static_cast<float>(load<uint16_t>(p));
    case Code::U4: return static_cast<float>(load<uint32_t>(p));
    case Code::U8: return static_cast<float>(load<uint64_t>(p));
    case Code::B: return load<uint8_t>(p) ? 1.0f : 0.0f;
  }
  return 0.0f;
}

inline int64_t as_int(const uint8_t* p, Code c) {
  switch (c) {
    case Code::I1: return load<int8_t>(p);
    case Code::I2: return load<int16_t>(p);
    case Code::I4: return load<int32_t>(p);
    case Code::I8: return load<int64_t>(p);
    case Code::U1: return load<uint8_t>(p);
    case Code::U2: return load<uint16_t>(p);
    case Code::U4: return load<uint32_t>(p);
    case Code::U8: return static_cast<int64_t>(load<uint64_t>(p));
    case Code::B: return load<uint8_t>(p) ? 1 : 0;
    default: return static_cast<int64_t>(as_float(p, c));
  }
}

inline bool is_float(Code c) { return c == Code::F2 || c == Code::F4 || c == Code::F8; }

// A double written into a field of type `c` (numpy's unsafe cast) and read back as float.
float stored_as(double v, Code c) {
  switch (c) {
    case Code::F2: return h5::half_to_float(h5::float_to_half(static_cast<float>(v)));
    case Code::F4: case Code::F8: return static_cast<float>(v);
    case Code::B: return v != 0 ? 1.0f : 0.0f;
    default: return std::isfinite(v) ? static_cast<float>(std::trunc(v)) : 0.0f;
  }
}

inline double as_double(const uint8_t* p, Code c) {
  if (c == Code::F8) return load<double>(p);
  return is_float(c) ? static_cast<double>(as_float(p, c)) : static_cast<double>(as_int(p, c));
}

ColumnKind kind_of(Code c) {
  switch (c) {
    case Code::F2: return ColumnKind::Half;
    case Code::F4: return ColumnKind::Float;
    case Code::F8: return ColumnKind::Double;
    default: return ColumnKind::Int;
  }
}

// What a selection writes into the labels of a slot it removes: ftag's TrackSelector
// sets floats to NaN, signed ints to -1 and unsigned ints and bools to 0.
inline bool is_signed_int(Code c) { return c == Code::I1 || c == Code::I2 || c == Code::I4 || c == Code::I8; }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

struct H5Reader::Stream {
  std::string input;    // name in data.variables
  std::string dataset;  // name in the file
  std::unique_ptr<h5::Dataset> ds;
  bool sequence = false;  // 2-D constituents
  int64_t cols = 1;       // slots read per row (after truncation)
  size_t record_size = 0;
  struct Col {
    std::string name;
    size_t offset;
    Code code;
  };
  std::vector<Col> inputs;
  std::vector<Col> labels;
  bool has_valid = false;
  Col valid{};
  bool direct = false;  // read compressed chunks, decode in convert()
  struct CutCol {
    Cut cut;
    Col a, b;              // the cut's field; NSHARED reads two (a: pixel, b: SCT shared hits)
    bool nshared = false;
    ColumnKind kind = ColumnKind::Double;
  };
  std::vector<CutCol> cuts;  // data.selections of this input
  std::map<std::string, std::string> weight_keys;  // label -> config key of a sample_weight
  // data.labeller_config (global object): each class's cuts; empty = labels from the file.
  std::vector<std::vector<CutCol>> classes;
  std::vector<std::string> class_names;
  bool require_labels = true;
  // ReaderOptions::norm of this input, per column of `inputs` (empty: not checked).
  std::vector<double> mean, inv_std;
  double limit = 0;  // the smaller of warn_sigma and max_sigma that is set
  mutable std::atomic<bool> warned_implausible{false};
  // ReaderOptions::label_values of this input: label -> the values it may hold.
  struct LabelCheck {
    ReaderOptions::LabelValues spec;
    std::set<int64_t> values;
    mutable std::atomic<bool> warned{false};
  };
  std::map<std::string, LabelCheck> label_checks;
};

namespace {

using Stream = H5Reader::Stream;

void set_plausibility(Stream& s, const ReaderOptions& o) {
  auto it = o.norm.find(s.input);
  const double limit = o.warn_sigma > 0 && o.max_sigma > 0 ? std::min(o.warn_sigma, o.max_sigma)
                                                           : std::max(o.warn_sigma, o.max_sigma);
  if (it == o.norm.end() || limit <= 0 || it->second.mean.size() != s.inputs.size()) return;
  for (size_t f = 0; f < s.inputs.size(); ++f) {
    s.mean.push_back(it->second.mean[f]);
    s.inv_std.push_back(1.0 / it->second.std[f]);  // norm_params refuses std 0
  }
  s.limit = limit;
}

void set_label_checks(Stream& s, const ReaderOptions& o) {
  for (const auto& spec : o.label_values) {
    if (spec.input != s.input) continue;
    auto& check = s.label_checks[spec.label];
    check.spec = spec;
    check.values.insert(spec.values.begin(), spec.values.end());
  }
}

void warn_label_value(const Stream& s, const std::string& label, const Stream::LabelCheck& check, int64_t value,
                      int64_t n, const fs::path& path, int64_t start) {
  std::vector<std::string> listed;
  for (int64_t v : check.spec.values) listed.push_back(std::to_string(v));
  spdlog::warn("{}.{} = {} in row {}{} of dataset '{}' in {} is none of the values {} lists ({}): {} (said once "
               "per file)",
               s.dataset, label, value, n / s.cols + start,
               s.sequence ? fmt::format(" (slot {})", n % s.cols) : std::string(), s.dataset, path.string(),
               check.spec.listed_in, join(listed), check.spec.consequence);
}

// Warns once per file about the first valid slot whose label holds an unlisted value.
void check_label_values(const Stream& s, const std::map<std::string, torch::Tensor>& labels, const bool* padded,
                        const fs::path& path, int64_t start) {
  for (const auto& [label, check] : s.label_checks) {
    auto it = labels.find(label);
    if (check.warned.load() || it == labels.end() || it->second.scalar_type() != torch::kInt64) continue;
    const int64_t* values = it->second.data_ptr<int64_t>();
    const int64_t* ids = nullptr;
    if (auto id = labels.find(check.spec.unless_label); id != labels.end() && id->second.scalar_type() == torch::kInt64)
      ids = id->second.data_ptr<int64_t>();
    for (int64_t n = 0; n < it->second.numel(); ++n) {
      if ((padded && padded[n]) || (ids && ids[n] == -1) || check.values.count(values[n])) continue;
      if (!check.warned.exchange(true)) warn_label_value(s, label, check, values[n], n, path, start);
      break;
    }
  }
}

// The value of a batch furthest from its norm dict mean, beyond Stream::limit.
struct Implausible {
  int64_t record = -1;  // index into the batch's B x cols records
  int64_t col = 0;
  float value = 0;
  double sigmas = 0;
};

void report_implausible(const Stream& s, const ReaderOptions& o, const fs::path& path, int64_t start,
                        const Implausible& w) {
  const bool error = o.max_sigma > 0 && w.sigmas > o.max_sigma;
  if (!error && (o.warn_sigma <= 0 || w.sigmas <= o.warn_sigma || s.warned_implausible.exchange(true))) return;
  const auto col = static_cast<size_t>(w.col);
  const std::string what = fmt::format(
      "{}.{} = {:g} in row {}{} of dataset '{}' in {} lies {:.3g} standard deviations from the norm dict's mean "
      "({:g} +- {:g}): a damaged chunk (LZF has no checksum), or a norm dict made for other data?",
      s.input, s.inputs[col].name, w.value, w.record / s.cols + start,
      s.sequence ? fmt::format(" (slot {})", w.record % s.cols) : std::string(), s.dataset, path.string(), w.sigmas,
      s.mean[col], 1.0 / s.inv_std[col]);
  if (error) throw InputError(fmt::format("{} (data.max_input_sigma is {:g})", what, o.max_sigma));
  spdlog::warn("{} (said once per input; data.max_input_sigma makes it an error)", what);
}

Stream::Col cut_field(const Stream& s, const std::string& key, const std::string& text, const std::string& name) {
  const h5::Field* f = s.ds->layout().find(name);
  if (!f || f->type.kind == Kind::Other)
    throw InputError(fmt::format("{}: the cut '{}' needs the variable '{}', which {} {}", key, text, name,
                                 f ? "has an unsupported type in" : "is missing from", s.ds->where()));
  return Stream::Col{name, f->offset, code_of(f->type)};
}

// Finds a cut's fields in the dataset (any field of the file: cut variables need
// not be model inputs). `key` names the setting in messages.
Stream::CutCol compile_cut(const Stream& s, Cut cut, const std::string& key) {
  Stream::CutCol c;
  c.cut = std::move(cut);
  const std::string& text = c.cut.text;
  if (c.cut.variable == "NSHARED") {
    // ftag's shared-hit cut: pixel shared hits + SCT shared hits / 2, as float64.
    if (s.ds->layout().find("NSHARED"))
      throw InputError(fmt::format("{}: NSHARED is a reserved cut variable, but {} has a field of that name", key,
                                   s.ds->where()));
    c.nshared = true;
    c.a = cut_field(s, key, text, "numberOfPixelSharedHits");
    c.b = cut_field(s, key, text, "numberOfSCTSharedHits");
  } else {
    c.a = cut_field(s, key, text, c.cut.variable);
    c.kind = kind_of(c.a.code);
  }
  return c;
}

// Parses data.selections.<input>.
void compile_selections(Stream& s, const std::vector<std::string>& cuts) {
  for (size_t i = 0; i < cuts.size(); ++i) {
    const std::string key = fmt::format("data.selections.{}[{}]", s.input, i);
    Cut cut;
    try {
      cut = parse_cut(cuts[i]);
    } catch (const std::invalid_argument& e) {
      throw InputError(fmt::format("{}: cannot read the cut '{}': {} (for {})", key, cuts[i], e.what(), s.ds->where()));
    }
    s.cuts.push_back(compile_cut(s, std::move(cut), key));
  }
}

// data.labeller_config: each class's flavour cuts against the global object's fields.
void compile_labeller(Stream& s, const Labeller& labeller) {
  s.class_names = labeller.class_names();
  s.require_labels = labeller.require_labels();
  for (size_t i = 0; i < s.class_names.size(); ++i) {
    const std::string key = fmt::format("data.labeller_config.class_names[{}] ({})", i, s.class_names[i]);
    std::vector<Stream::CutCol> cols;
    for (const auto& cut : labeller.class_cuts()[i]) cols.push_back(compile_cut(s, cut, key));
    s.classes.push_back(std::move(cols));
  }
}

// salt's weighted losses assume weights >= 0; a negative one (in a slot in use) is an error.
void check_weights(const Stream& s, const std::string& label, const torch::Tensor& w, const torch::Tensor& pad,
                   int64_t start) {
  auto bad = w.lt(0);
  if (pad.defined()) bad = bad & pad.logical_not();
  if (!bad.any().item<bool>()) return;
  const int64_t k = bad.reshape({-1}).nonzero()[0].item<int64_t>();
  throw InputError(fmt::format("{}: the sample weight '{}' is negative ({}) in row {} of {}", s.weight_keys.at(label),
                               label, w.reshape({-1})[k].item<double>(), start + k / s.cols, s.ds->where()));
}

// salt relabels only the global object's flavour_label, and only when a task reads it.
bool wants_flavour_label(const VarMap& labels, const std::string& input) {
  auto it = labels.find(input);
  return it != labels.end() && std::find(it->second.begin(), it->second.end(), "flavour_label") != it->second.end();
}

CutNumber cut_value(const uint8_t* rec, const Stream::CutCol& c) {
  if (c.nshared) return CutNumber::of_float(as_double(rec + c.a.offset, c.a.code) + as_double(rec + c.b.offset, c.b.code) / 2);
  if (is_float(c.a.code)) return CutNumber::of_float(as_double(rec + c.a.offset, c.a.code));
  return CutNumber::of_int(as_int(rec + c.a.offset, c.a.code));
}

bool passes_all(const uint8_t* rec, const std::vector<Stream::CutCol>& cuts) {
  return std::all_of(cuts.begin(), cuts.end(), [&](const Stream::CutCol& c) { return c.cut.passes(cut_value(rec, c), c.kind); });
}

// ftag's Labeller.get_labels: the last class whose cuts all pass, else -1.
torch::Tensor relabel(const Stream& s, const uint8_t* base, int64_t n, int64_t start, torch::TensorOptions opts) {
  torch::Tensor y = torch::empty({n}, opts.dtype(torch::kInt64));
  int64_t* out = y.data_ptr<int64_t>();
  for (int64_t k = 0; k < n; ++k) {
    const uint8_t* rec = base + k * s.record_size;
    out[k] = -1;
    for (size_t c = 0; c < s.classes.size(); ++c)
      if (passes_all(rec, s.classes[c])) out[k] = static_cast<int64_t>(c);
    if (out[k] < 0 && s.require_labels)
      throw InputError(fmt::format("data.labeller_config: row {} of {} matches none of the classes [{}] "
                                   "(require_labels is true)",
                                   start + k, s.ds->where(), join(s.class_names)));
  }
  return y;
}

// Masks out (pad = true) the valid slots failing a cut; returns which slots it removed.
std::vector<uint8_t> apply_selections(const Stream& s, const uint8_t* base, int64_t n, bool* pad) {
  std::vector<uint8_t> removed(static_cast<size_t>(n), 0);
  for (int64_t k = 0; k < n; ++k) {
    if (pad[k]) continue;  // ftag only removes valid slots
    const uint8_t* rec = base + k * s.record_size;
    for (const auto& c : s.cuts) {
      if (!c.cut.passes(cut_value(rec, c), c.kind)) {
        removed[static_cast<size_t>(k)] = 1;
        pad[k] = true;
        break;
      }
    }
  }
  return removed;
}

}  // namespace

// A virtual dataset's members must all be there (HDF5 would read zeros for a missing
// one); they are the files a run pins.
void H5Reader::note_members(const Stream& s, bool global) {
  auto members = virtual_members(path_, s.dataset);
  for (const auto& m : members)
    if (std::find(files_.begin(), files_.end(), m.file) == files_.end()) files_.push_back(m.file);
  if (global) members_ = std::move(members);
}

H5Reader::H5Reader(const fs::path& path, ReaderOptions options, int64_t num, const std::string& num_key)
    : path_(path), options_(std::move(options)), file_(h5::File::open_read(path)), files_{path} {
  const std::string& global = options_.global_object;
  const std::string file_str = path_.string();

  // num_inputs may only name inputs that exist (salt's check).
  for (const auto& [name, n] : options_.num_inputs) {
    if (!options_.variables.count(name)) {
      std::vector<std::string> ins;
      for (const auto& [k, v] : options_.variables) ins.push_back(k);
      throw InputError(fmt::format("data.num_inputs has the key '{}', which is not an input in data.variables ({})", name,
                                   join(ins)));
    }
    if (n <= 0) throw InputError(fmt::format("data.num_inputs.{} must be positive, got {}", name, n));
  }

  check_multi_targets();

  // Streams: every input with variables or labels, plus the global object (it defines N).
  std::set<std::string> names;
  for (const auto& [k, v] : options_.variables)
    if (!k.empty() && k[0] != '_') names.insert(k);
  for (const auto& [k, v] : options_.labels)
    if (!k.empty() && k[0] != '_') names.insert(k);
  names.insert(global);

  auto dataset_of = [&](const std::string& input) {
    auto it = options_.input_map.find(input);
    return it == options_.input_map.end() ? input : it->second;
  };

  int64_t global_rows = -1;
  for (const auto& input : names) {
    auto s = std::make_unique<Stream>();
    s->input = input;
    s->dataset = dataset_of(input);
    s->ds = std::make_unique<h5::Dataset>(file_.dataset(s->dataset));
    const auto& shape = s->ds->shape();
    std::string where = s->ds->where();
    // "global" (and "parameters") read the global object's dataset: one row each (salt).
    if (input == global || input == "global" || input == "parameters") {
      if (shape.size() != 1)
        throw InputError(fmt::format("The global object {} must be 1-D (N,), but has {} dimensions", where, shape.size()));
      global_rows = s->ds->rows();
    } else {
      if (shape.size() != 2)
        throw InputError(fmt::format("The constituents {} must be 2-D (N, L), but has {} dimensions", where, shape.size()));
      s->sequence = true;
      s->cols = s->ds->cols();
      // (N, 0): no constituent could ever be read, and the models index slot 0.
      if (s->cols == 0)
        throw InputError(fmt::format("The constituents {} have 0 slots per jet (shape ({}, 0)): '{}' needs at least one",
                                     where, s->ds->rows(), input));
      if (auto it = options_.num_inputs.find(input); it != options_.num_inputs.end()) {
        if (it->second > s->cols)
          throw InputError(fmt::format("data.num_inputs.{} = {} exceeds the {} slots of {}", input, it->second, s->cols,
                                       where));
        s->cols = it->second;
      }
    }
    const h5::CompoundLayout& layout = s->ds->layout();
    s->record_size = layout.record_size;
    auto column = [&](const std::string& field, const char* what) {
      const h5::Field* f = layout.find(field);
      if (!f) throw InputError(fmt::format("{} '{}' is missing from {}", what, field, where));
      if (f->type.kind == Kind::Other)
        throw InputError(fmt::format("{} '{}' of {} has an unsupported type (supported: f2/f4/f8, i1..i8, u1..u8, bool)",
                                     what, field, where));
      return Stream::Col{field, f->offset, code_of(f->type)};
    };
    if (auto it = options_.variables.find(input); it != options_.variables.end()) {
      std::vector<std::string> missing;
      for (const auto& v : it->second)
        if (!layout.find(v)) missing.push_back(v);
      if (!missing.empty())
        throw InputError(fmt::format("Variables [{}] are missing from {}", join(missing), where));
      for (const auto& v : it->second) s->inputs.push_back(column(v, "Variable"));
    }
    if (auto it = options_.sample_weights.find(input); it != options_.sample_weights.end())
      s->weight_keys = it->second;
    for (const auto& [field, key] : s->weight_keys)
      if (!layout.find(field)) throw InputError(fmt::format("{}: the sample weight '{}' is missing from {}", key, field, where));
    const bool relabel = input == global && !options_.labeller_classes.empty() && wants_flavour_label(options_.labels, input);
    if (relabel) compile_labeller(*s, Labeller(options_.labeller_classes, options_.require_labels));
    if (auto it = options_.labels.find(input); it != options_.labels.end())
      for (const auto& l : it->second)
        if (!(relabel && l == "flavour_label") && !is_custom_target(options_.multi_targets, input, l))
          s->labels.push_back(column(l, "Label"));
    if (s->sequence && layout.find("valid")) {
      s->valid = column("valid", "Field");
      s->has_valid = true;
    }
    set_plausibility(*s, options_);
    set_label_checks(*s, options_);
    s->ds->check_filters();
    s->direct = options_.direct_chunks && s->ds->direct_chunks_supported();
    note_members(*s, input == global);
    streams_.push_back(std::move(s));
  }

  for (const auto& selection : options_.selections) {
    const auto& [input, cuts] = selection;
    const std::string& name = input;  // C++17 lambdas cannot capture a structured binding (clang refuses)
    auto it = std::find_if(streams_.begin(), streams_.end(), [&](const auto& s) { return s->input == name; });
    if (it == streams_.end() || !options_.variables.count(input))
      throw InputError(fmt::format("data.selections.{}: '{}' is not an input in data.variables", input, input));
    if (!(*it)->sequence)
      throw InputError(fmt::format("data.selections.{}: selections apply to constituents, not to the global object '{}'",
                                   input, input));
    compile_selections(**it, cuts);
  }

  for (const auto& s : streams_) {
    if (s->ds->rows() != global_rows)
      throw InputError(fmt::format("Dataset '{}' has {} rows but the global object '{}' has {} in {}", s->dataset,
                                   with_commas(s->ds->rows()), dataset_of(global), with_commas(global_rows), file_str));
  }
  available_rows_ = global_rows;
  if (num > available_rows_)
    throw InputError(fmt::format("Requested {} {} ({}), but only {} are available in the file {}", with_commas(num),
                                 global, num_key, with_commas(available_rows_), file_str));
  num_rows_ = num < 0 ? available_rows_ : num;
}

H5Reader::~H5Reader() = default;

int64_t H5Reader::slots(const std::string& input) const {
  for (const auto& s : streams_)
    if (s->input == input) return s->cols;
  throw InputError(fmt::format("'{}' is not an input read from {}", input, path_.string()));
}

std::vector<std::string> H5Reader::inputs() const {
  std::vector<std::string> out;
  for (const auto& s : streams_) out.push_back(s->input);
  return out;
}

RawBatch H5Reader::read_raw(int64_t start, int64_t count) const {
  if (start < 0 || count < 0 || start + count > num_rows_)
    throw InputError(fmt::format("Rows {}..{} are outside the {} rows in use of {}", start, start + count,
                                 with_commas(num_rows_), path_.string()));
  RawBatch raw;
  raw.start = start;
  raw.count = count;
  raw.records.resize(streams_.size());
  raw.chunks.resize(streams_.size());
  for (size_t si = 0; si < streams_.size(); ++si) {
    const Stream& s = *streams_[si];
    if (s.direct) {
      raw.chunks[si] = s.ds->read_chunks(start, count, s.cols);
    } else {
      size_t bytes = static_cast<size_t>(count * s.cols) * s.record_size;
      // new[] without () leaves the buffer uninitialised: HDF5 overwrites all of it.
      raw.records[si].reset(new uint8_t[std::max<size_t>(bytes, 1)]);
      s.ds->read_records(start, count, s.cols, raw.records[si].get());
    }
  }
  return raw;
}

Batch H5Reader::convert(RawBatch&& raw, bool pin_memory) const {
  static std::atomic<bool> warned{false};
  const int64_t B = raw.count;
  auto opts = torch::TensorOptions().pinned_memory(pin_memory);
  Batch batch;
  batch.start = raw.start;
  batch.size = B;
  for (size_t si = 0; si < streams_.size(); ++si) {
    const Stream& s = *streams_[si];
    if (!raw.records[si]) {  // direct path: decompress here, outside HDF5
      raw.records[si].reset(new uint8_t[std::max<size_t>(static_cast<size_t>(B * s.cols) * s.record_size, 1)]);
      s.ds->decode_chunks(raw.chunks[si], raw.records[si].get());
      raw.chunks[si] = h5::RawChunks{};
    }
    const uint8_t* base = raw.records[si].get();
    const int64_t L = s.cols;
    const int64_t n_records = B * L;
    const int64_t F = static_cast<int64_t>(s.inputs.size());
    const size_t rs = s.record_size;

    std::vector<int64_t> shape = s.sequence ? std::vector<int64_t>{B, L} : std::vector<int64_t>{B};
    torch::Tensor mask;
    bool* mask_ptr = nullptr;
    if (s.sequence) {
      mask = torch::empty(shape, opts.dtype(torch::kBool));
      mask_ptr = mask.data_ptr<bool>();
      for (int64_t n = 0; n < n_records; ++n)
        mask_ptr[n] = s.has_valid ? as_double(base + n * rs + s.valid.offset, s.valid.code) == 0 : false;
    }
    std::vector<uint8_t> removed;  // slots data.selections masked out
    if (!s.cuts.empty()) removed = apply_selections(s, base, n_records, mask_ptr);

    if (F > 0) {
      std::vector<int64_t> xshape = shape;
      xshape.push_back(F);
      torch::Tensor x = torch::empty(xshape, opts.dtype(torch::kFloat32));
      float* out = x.data_ptr<float>();
      bool non_finite = false;
      const bool to_num = options_.non_finite_to_num;
      const bool plausible = !s.mean.empty();
      Implausible worst;
      for (int64_t n = 0; n < n_records; ++n, out += F) {
        if (mask_ptr && mask_ptr[n]) {
          std::fill(out, out + F, 0.0f);  // padded slots are zero, whatever the file holds
          continue;
        }
        const uint8_t* rec = base + n * rs;
        for (int64_t f = 0; f < F; ++f) {
          const auto& col = s.inputs[static_cast<size_t>(f)];
          float v = as_float(rec + col.offset, col.code);
          if (is_float(col.code) && !std::isfinite(v)) {
            non_finite = true;
            if (to_num) v = 0.0f;
          }
          if (plausible) {
            const double sigmas = std::abs((v - s.mean[static_cast<size_t>(f)]) * s.inv_std[static_cast<size_t>(f)]);
            if (sigmas > s.limit && sigmas > worst.sigmas && std::isfinite(v)) worst = Implausible{n, f, v, sigmas};
          }
          out[f] = v;
        }
      }
      if (non_finite && !to_num) {
        if (!options_.ignore_finite_checks)
          throw InputError(fmt::format(
              "Non-finite inputs for '{}' in {}{}", s.input, path_.string(),
              s.sequence && !s.has_valid
                  ? fmt::format(": its dataset has no 'valid' field, so every slot, padding included, is read as a "
                                "real constituent (add 'valid', as the preprocessing writes it)")
                  : std::string()));
        if (!warned.exchange(true))
          spdlog::warn("Non-finite inputs for '{}' in {}, kept because ignore_finite_checks is set", s.input,
                       path_.string());
      }
      if (worst.record >= 0) report_implausible(s, options_, path_, raw.start, worst);
      if (!options_.noise.empty()) apply_noise(s, x, raw.epoch, raw.start);
      if (s.input == "parameters") assign_parameters(x, options_.parameters, options_.test_stage, options_.seed, raw.epoch, raw.start);
      batch.inputs[s.input] = std::move(x);
    }
    if (s.sequence) batch.pad_masks[s.input] = mask;

    for (const auto& col : s.labels) {
      if (is_float(col.code)) {
        torch::Tensor y = torch::empty(shape, opts.dtype(torch::kFloat32));
        float* out = y.data_ptr<float>();
        for (int64_t n = 0; n < n_records; ++n) out[n] = as_float(base + n * rs + col.offset, col.code);
        for (size_t n = 0; n < removed.size(); ++n)
          if (removed[n]) out[n] = NAN;
        if (s.weight_keys.count(col.name)) check_weights(s, col.name, y, mask, raw.start);
        batch.labels[s.input][col.name] = std::move(y);
      } else {
        torch::Tensor y = torch::empty(shape, opts.dtype(torch::kInt64));
        int64_t* out = y.data_ptr<int64_t>();
        for (int64_t n = 0; n < n_records; ++n) out[n] = as_int(base + n * rs + col.offset, col.code);
        for (size_t n = 0; n < removed.size(); ++n)
          if (removed[n]) out[n] = is_signed_int(col.code) ? -1 : 0;
        if (s.weight_keys.count(col.name)) check_weights(s, col.name, y, mask, raw.start);
        batch.labels[s.input][col.name] = std::move(y);
      }
    }
    if (!s.classes.empty()) batch.labels[s.input]["flavour_label"] = relabel(s, base, B, raw.start, opts);
    if (!s.label_checks.empty()) check_label_values(s, batch.labels[s.input], mask_ptr, path_, raw.start);
  }
  apply_multi_targets(batch, options_.multi_targets);
  return batch;
}

// salt.data.transforms.GaussianNoise: value x N(mean, std), written back into the
// field at its own precision (salt multiplies the structured array's field and
// stores the result in it), then read as float. Padded slots stay 0. Draws are
// seeded by the run's seed, the epoch and the batch's first row, so runs repeat
// (salt's draws are unseeded).
void H5Reader::apply_noise(const Stream& s, torch::Tensor& x, int64_t epoch, int64_t start) const {
  const int64_t F = x.size(-1), n_records = x.numel() / std::max<int64_t>(F, 1);
  float* data = x.data_ptr<float>();
  for (std::size_t k = 0; k < options_.noise.size(); ++k) {
    const auto& spec = options_.noise[k];
    if (spec.input != s.input) continue;
    int64_t f = 0;
    while (f < F && s.inputs[static_cast<std::size_t>(f)].name != spec.variable) ++f;
    if (f == F) continue;  // config checks name only variables that are read
    const Code code = s.inputs[static_cast<std::size_t>(f)].code;
    toy::Rng rng(toy::splitmix64(options_.seed ^ toy::splitmix64(static_cast<uint64_t>(start) * 1315423911ull + k) ^
                                 toy::splitmix64(static_cast<uint64_t>(epoch) + 0x6e6f697365ull)));
    for (int64_t n = 0; n < n_records; ++n) {
      float& v = data[n * F + f];
      const double noisy = static_cast<double>(v) * rng.normal(spec.mean, spec.std);
      v = stored_as(noisy, code);
    }
  }
}

// The fields data.multi_target reads must be in the file; they become labels.
void H5Reader::check_multi_targets() {
  const auto& entries = options_.multi_targets;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    const std::string key = fmt::format("data.multi_target[{}]", i);
    if (!options_.variables.count(e.input_name) && e.input_name != options_.global_object)
      throw InputError(fmt::format("{}.input_name: '{}' is not an input in data.variables", key, e.input_name));
    auto it = options_.input_map.find(e.input_name);
    const h5::Dataset ds = file_.dataset(it == options_.input_map.end() ? e.input_name : it->second);
    std::vector<std::pair<const char*, std::string>> fields = {{"sel_label", e.sel_label}, {"source", e.source}};
    if (e.target) fields.emplace_back("target", *e.target);
    for (const auto& [what, field] : fields)
      if (!ds.layout().find(field))
        throw InputError(fmt::format("{}.{}: '{}' is missing from {}", key, what, field, ds.where()));
  }
  add_multi_target_labels(options_.labels, entries);
}

std::vector<std::string> H5Reader::class_names(const std::string& label) const {
  for (const auto& s : streams_) {
    if (s->input != options_.global_object) continue;
    YAML::Node attrs = s->ds->attributes();
    YAML::Node v = attrs[label];
    std::vector<std::string> out;
    if (v && v.IsSequence())
      for (const auto& e : v) out.push_back(e.as<std::string>());
    else if (v && v.IsScalar())
      out.push_back(v.as<std::string>());
    return out;
  }
  return {};
}

}  // namespace salt::data
