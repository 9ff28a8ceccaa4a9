// Reads batches of rows from a preprocessing (UPP) HDF5 file into salt::Batch.
//
// A read is split in two so that HDF5's global lock (every HDF5 call is serialised)
// is held as briefly as possible:
//   read_raw()  - HDF5 only: the compressed chunks covering a row range, as stored
//                 (H5Dread_chunk: I/O only, no decompression, no type conversion);
//   convert()   - no HDF5: decompresses the chunks (LZF/gzip), picks the requested
//                 fields out of the compound records, converts them to float32/int64,
//                 zeroes padded slots, checks finiteness.
// Loader workers call both, so decompression and conversion run in parallel across
// workers. Measured (bench_loader): LZF decompression is ~90% of the time a plain
// H5Dread takes, so doing it inside HDF5 would serialise the loader on one core.
// Datasets that are not chunked, or use other filters, fall back to H5Dread of whole
// records in read_raw (then only the conversion runs in parallel).
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/data_config.h"
#include "data/batch.h"
#include "data/h5_file.h"
#include "data/norm_dict.h"
#include "data/virtual_file.h"

namespace salt::data {

// input name -> ordered field names
using VarMap = std::map<std::string, std::vector<std::string>>;

struct ReaderOptions {
  VarMap variables;  // data.variables: model inputs per input name, in column order
  VarMap labels;     // labels per input name (from the model's tasks)
  std::map<std::string, std::string> input_map;  // input name -> dataset name; absent = same name
  std::map<std::string, int64_t> num_inputs;     // truncate constituents to this many slots
  // data.selections: constituent input -> ftag cut strings (data/cuts.h); a valid
  // slot failing any cut is masked out (pad mask true, inputs 0, labels -1/NaN).
  std::map<std::string, std::vector<std::string>> selections;
  // Tasks' sample_weight fields: input -> field -> config key. Read as labels (add
  // them there too); a missing field or a negative weight is an error naming the key.
  std::map<std::string, std::map<std::string, std::string>> sample_weights;
  // data.labeller_config: with classes (ftag flavour names; empty = off), the global
  // object's flavour_label is derived from truth variables (data/labeller.h).
  std::vector<std::string> labeller_classes;
  bool require_labels = true;
  // data.parameters (data/parameters.h): values of the `parameters` inputs while fitting,
  // or the test value everywhere in test_stage; draws seeded by `seed` and the batch.
  std::vector<config::ParameterSpec> parameters;
  // data.transforms (salt's GaussianNoise): variables multiplied by N(mean, std)
  // draws as they are read, seeded by `seed`, the epoch and the batch.
  std::vector<config::NoiseSpec> noise;
  bool test_stage = false;
  uint64_t seed = 42;
  // data.multi_target (data/multi_target.h): their labels are read, custom targets created.
  std::vector<config::MultiTarget> multi_targets;
  std::string global_object = "jets";
  bool non_finite_to_num = false;     // NaN/inf in valid slots -> 0 (salt's choice, see docs/data.md)
  bool ignore_finite_checks = false;  // keep non-finite values, warn once
  bool direct_chunks = true;          // false: always H5Dread (decompress under the lock)
  // Plausibility of the inputs against the norm dict (input -> mean/std in
  // data.variables order): LZF has no checksum, so a damaged chunk can decode to
  // garbage that only its size betrays. A valid slot's value more than warn_sigma
  // standard deviations from the mean is a warning naming file, dataset and row
  // (once per input); more than max_sigma, an error. 0 turns either off.
  std::map<std::string, NormParams> norm;
  double warn_sigma = 0;
  double max_sigma = 0;
  // Integer labels whose valid slots should hold only listed values (MaskFormer's
  // object classes): another value gets one warning per file naming it and where.
  struct LabelValues {
    std::string input, label;
    std::vector<int64_t> values;
    std::string listed_in;    // the config key that lists them
    std::string consequence;  // what happens to the others
    std::string unless_label;  // slots where this label is -1 hold nothing (MaskFormer's id_label)
  };
  std::vector<LabelValues> label_values;

  ReaderOptions& set_variables(VarMap v) { variables = std::move(v); return *this; }
  ReaderOptions& set_labels(VarMap v) { labels = std::move(v); return *this; }
  ReaderOptions& set_input_map(std::map<std::string, std::string> m) { input_map = std::move(m); return *this; }
  ReaderOptions& set_num_inputs(std::map<std::string, int64_t> m) { num_inputs = std::move(m); return *this; }
  ReaderOptions& set_sample_weights(std::map<std::string, std::map<std::string, std::string>> m) {
    sample_weights = std::move(m);
    return *this;
  }
  ReaderOptions& set_labeller(std::vector<std::string> classes, bool require) {
    labeller_classes = std::move(classes);
    require_labels = require;
    return *this;
  }
  ReaderOptions& set_parameters(std::vector<config::ParameterSpec> p, uint64_t s) {
    parameters = std::move(p);
    seed = s;
    return *this;
  }
  ReaderOptions& set_test_stage(bool b) { test_stage = b; return *this; }
  ReaderOptions& set_noise(std::vector<config::NoiseSpec> n) { noise = std::move(n); return *this; }
  ReaderOptions& set_multi_targets(std::vector<config::MultiTarget> m) { multi_targets = std::move(m); return *this; }
  ReaderOptions& set_selections(std::map<std::string, std::vector<std::string>> m) { selections = std::move(m); return *this; }
  ReaderOptions& set_global_object(std::string g) { global_object = std::move(g); return *this; }
  ReaderOptions& set_non_finite_to_num(bool b) { non_finite_to_num = b; return *this; }
  ReaderOptions& set_ignore_finite_checks(bool b) { ignore_finite_checks = b; return *this; }
  ReaderOptions& set_direct_chunks(bool b) { direct_chunks = b; return *this; }
  ReaderOptions& set_label_values(std::vector<LabelValues> v) { label_values = std::move(v); return *this; }
  ReaderOptions& set_plausibility(std::map<std::string, NormParams> n, double warn, double max) {
    norm = std::move(n);
    warn_sigma = warn;
    max_sigma = max;
    return *this;
  }
};

// One batch as read from the file, per input (indexed like the reader's streams):
// either whole records (H5Dread path) or still-compressed chunks (direct path).
struct RawBatch {
  int64_t start = 0;
  int64_t count = 0;
  int64_t epoch = 0;  // the loader's epoch (data.parameters draws anew each epoch)
  std::vector<std::unique_ptr<uint8_t[]>> records;  // null where `chunks` is used
  std::vector<h5::RawChunks> chunks;
};

class H5Reader {
 public:
  // `num` rows from the start of the file (-1 = all). `num_key` names the setting in
  // error messages (e.g. "num_train"). Validates everything up front: datasets, shapes,
  // fields and their types, filters, num, num_inputs and selections.
  H5Reader(const std::filesystem::path& path, ReaderOptions options, int64_t num = -1,
           const std::string& num_key = "num");
  ~H5Reader();
  H5Reader(const H5Reader&) = delete;
  H5Reader& operator=(const H5Reader&) = delete;

  const std::filesystem::path& path() const { return path_; }
  const ReaderOptions& options() const { return options_; }
  int64_t num_rows() const { return num_rows_; }             // rows in use
  int64_t available_rows() const { return available_rows_; }  // rows in the file
  // Slots per row of a constituent input after num_inputs truncation (1 for the global object).
  int64_t slots(const std::string& input) const;
  std::vector<std::string> inputs() const;  // inputs read, sorted

  RawBatch read_raw(int64_t start, int64_t count) const;  // holds HDF5's lock
  Batch convert(RawBatch&& raw, bool pin_memory = false) const;  // no HDF5 calls
  Batch read(int64_t start, int64_t count, bool pin_memory = false, int64_t epoch = 0) const {
    RawBatch raw = read_raw(start, count);
    raw.epoch = epoch;
    return convert(std::move(raw), pin_memory);
  }

  // The `label` attribute of the global object's dataset (UPP writes flavour_label =
  // class names); empty if absent.
  std::vector<std::string> class_names(const std::string& label = "flavour_label") const;
  // Root attributes of the file (unique_jets, jet_counts, dsids, config, ...).
  YAML::Node file_attributes() const { return file_.attributes(); }
  const h5::File& file() const { return file_; }
  // The files behind path(): itself, then the members of its virtual datasets.
  const std::vector<std::filesystem::path>& files() const { return files_; }
  // The global object's virtual members with their jets; empty for an ordinary file.
  const std::vector<VirtualMember>& members() const { return members_; }

  struct Stream;  // one dataset being read (defined in the .cpp)

 private:
  void check_multi_targets();
  void note_members(const Stream& s, bool global);
  void apply_noise(const Stream& s, torch::Tensor& x, int64_t epoch, int64_t start) const;

  std::filesystem::path path_;
  ReaderOptions options_;
  h5::File file_;
  std::vector<std::unique_ptr<Stream>> streams_;
  int64_t num_rows_ = 0;
  int64_t available_rows_ = 0;
  std::vector<std::filesystem::path> files_;
  std::vector<VirtualMember> members_;
};

// 1234567 -> "1,234,567" (for messages)
std::string with_commas(int64_t n);

}  // namespace salt::data
