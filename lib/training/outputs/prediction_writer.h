// salt.callbacks.PredictionWriter: the `salt test` output file. One dataset per
// input with tasks (constituents only with write_tracks): the input's own fields
// copied from the test file (or only extra_vars), then the predictions
// (<name>_pb ..., f4 or f2 with half_precision), then a bool `mask` (true =
// padded) for sequences. With write_objects, also the MaskFormer's outputs (below).
// Rows in file order. Written to a temp name, renamed by finish(); destroyed
// unfinished, it leaves nothing behind.
#pragma once
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "data/batch.h"
#include "models/tasks/task.h"

namespace salt::callbacks {

struct PredictionWriterOptions {
  std::filesystem::path test_file;
  std::filesystem::path output;
  std::string global_object = "jets";
  std::map<std::string, std::string> input_map;  // input -> dataset
  int64_t num_rows = 0;                          // rows to write (num_test)
  bool write_tracks = false;
  // MaskFormer (salt's write_objects): the objects' dataset under the file's name for
  // it (data.mf_config.object.name, e.g. truth_hadrons): the file's fields in the
  // slot order of the truth (salt's _select_objects), the object tasks' outputs, the
  // class probabilities and the target `class_label`; the constituents'
  // <model>_MaskIndex; and `object_masks` (N, M, L): truth_mask, mask_logits.
  bool write_objects = false;
  // Empty object slots as salt's _select_objects leaves them (where the file has
  // `valid`): zeros, but id_label -1 and class_label the null class's raw value.
  std::string object_id_label;
  std::string object_class_label;  // empty: none
  int64_t object_null_raw = -1;
  bool half_precision = false;
  YAML::Node extra_vars;  // input -> [fields]; absent = all fields
  // The model's task names in config order: salt writes each input's outputs task
  // by task in that order. Others (mask_index, object outputs) follow, by name.
  std::vector<std::string> task_order;
};

using Columns = std::map<std::string, std::map<std::string, models::PredictionColumns>>;

class PredictionWriter {
 public:
  explicit PredictionWriter(PredictionWriterOptions options);
  ~PredictionWriter();
  PredictionWriter(const PredictionWriter&) = delete;
  PredictionWriter& operator=(const PredictionWriter&) = delete;

  // Rows [batch.start, batch.start + batch.size) with their prediction columns.
  void write(const Batch& batch, const Columns& columns);
  // Closes the file (checked, fsync'ed) and moves it into place. InputError
  // "cannot write <output>: <reason>" on failure; the temp file is then removed.
  void finish();

  const std::filesystem::path& output() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace salt::callbacks
