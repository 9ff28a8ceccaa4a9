#include "training/outputs/prediction_writer.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "data/h5_file.h"
#include "models/salt_wrapper.h"

namespace salt::callbacks {
namespace fs = std::filesystem;
namespace h5 = data::h5;

namespace {

// ftag's H5Writer writes its version as the file's writer_version; salt pins
// atlas-ftag-tools 0.3.3, whose layout (dtypes, maxshape, chunks) this follows.
constexpr const char* kFtagWriterVersion = "v0.3.3";

// One output dataset: where its fields come from and where they go.
struct Output {
  std::string input;    // input name
  std::string dataset;  // dataset name in both files
  bool sequence = false;
  bool has_mask = false;  // a `mask` field (constituents; the objects have class_label instead)
  int64_t width = 1;  // slots per row in the output
  int64_t source_width = 1;  // slots per row in the test file
  bool by_slot = false;      // the objects: output slot s holds the file's slot source_slots[s]
  struct Sentinel {          // an empty object slot's field that is not 0
    size_t offset;
    h5::FieldType type;
    int64_t value;
  };
  std::vector<Sentinel> sentinels;
  std::unique_ptr<h5::Dataset> source;
  size_t source_record = 0;
  struct Copy {
    size_t from, to, size;
    h5::FieldType from_type, to_type;  // floats are converted to the output's precision
  };
  std::vector<Copy> copies;
  struct Pred {
    std::string task;
    std::size_t column;
    size_t offset;
    bool integer;
  };
  std::vector<Pred> preds;
  size_t mask_offset = 0;
  size_t record = 0;
  std::unique_ptr<h5::Dataset> target;
};

// One field of a test-file record into the output record, floats converted.
void copy_field(const Output::Copy& c, const uint8_t* src, uint8_t* dst) {
  if (c.from_type == c.to_type) {
    std::memcpy(dst + c.to, src + c.from, c.size);
    return;
  }
  double v = 0;
  if (c.from_type.size == 2) {
    uint16_t h;
    std::memcpy(&h, src + c.from, 2);
    v = h5::half_to_float(h);
  } else if (c.from_type.size == 4) {
    float f;
    std::memcpy(&f, src + c.from, 4);
    v = f;
  } else {
    std::memcpy(&v, src + c.from, 8);
  }
  if (c.to_type.size == 2) {
    const uint16_t h = h5::float_to_half(static_cast<float>(v));
    std::memcpy(dst + c.to, &h, 2);
  } else {
    const float f = static_cast<float>(v);
    std::memcpy(dst + c.to, &f, 4);
  }
}

// An integer (or float) value into a field of the output record.
void put_number(uint8_t* dst, const h5::FieldType& type, int64_t value) {
  if (type.kind == h5::Kind::Float) {
    if (type.size == 2) {
      const uint16_t h = h5::float_to_half(static_cast<float>(value));
      std::memcpy(dst, &h, 2);
    } else if (type.size == 4) {
      const float f = static_cast<float>(value);
      std::memcpy(dst, &f, 4);
    } else {
      const double d = static_cast<double>(value);
      std::memcpy(dst, &d, 8);
    }
    return;
  }
  // Little-endian two's complement: the low bytes of the value.
  std::memcpy(dst, &value, static_cast<size_t>(type.size));
}

}  // namespace

struct PredictionWriter::Impl {
  PredictionWriterOptions options;
  fs::path temp;
  std::unique_ptr<h5::File> source_file, target_file;
  std::vector<Output> outputs;
  bool created = false, finished = false;

  std::string dataset_of(const std::string& input) const {
    auto it = options.input_map.find(input);
    return it == options.input_map.end() ? input : it->second;
  }

  std::set<std::string> masked_inputs;  // inputs with a pad mask in the batches
  bool batch_has_mask(const std::string& input) const { return masked_inputs.count(input) > 0; }

  void create(const Batch& batch, const Columns& columns) {
    for (const auto& [input, _] : batch.pad_masks) masked_inputs.insert(input);
    source_file = std::make_unique<h5::File>(h5::File::open_read(options.test_file));
    target_file = std::make_unique<h5::File>(h5::File::create(temp, options.output));
    // ftag's H5Writer marks its files with its version; salt pins atlas-ftag-tools 0.3.3.
    h5::write_attr(target_file->id(), "writer_version", std::string(kFtagWriterVersion));
    for (const auto& [input, all_tasks] : columns) {
      auto tasks = written_tasks(input, all_tasks);
      if (tasks.empty()) continue;
      Output out;
      out.input = input;
      out.dataset = input == "object_masks" ? input : dataset_of(input);
      out.sequence = input != options.global_object;
      const auto shape = open_source(out, tasks, columns);
      const auto fields = copied_fields(out);
      auto type = build_record(out, fields, tasks);
      h5::DatasetSpec spec;
      spec.shape = shape;
      spec.resizable = true;  // as ftag's H5Writer: maxshape (None, ...)
      if (shape.size() > 1) {  // and its chunks: 100 rows of whole slots
        spec.chunk = shape;
        spec.chunk[0] = 100;
      }
      out.target = std::make_unique<h5::Dataset>(h5::create_dataset(*target_file, out.dataset, type.get(), spec, out.record));
      outputs.push_back(std::move(out));
    }
    created = true;
  }

  // The tasks of `input` that go into the file; none when the input is not written.
  std::map<std::string, models::PredictionColumns> written_tasks(
      const std::string& input, const std::map<std::string, models::PredictionColumns>& all_tasks) const {
    const bool sequence = input != options.global_object;
    const bool objects = input == "objects" || input == "object_masks";
    std::map<std::string, models::PredictionColumns> tasks;
    for (const auto& [task, cols] : all_tasks)
      if ((task != "mask_index" || options.write_objects) && task != models::SaltWrapperImpl::kObjectSourceSlots)
        tasks[task] = cols;
    const bool only_mask_index = tasks.size() == 1 && tasks.count("mask_index");
    if (objects ? !options.write_objects : sequence && !options.write_tracks && !only_mask_index) return {};
    return tasks;
  }

  // Opens the input's dataset in the test file (none for object_masks) and sets the
  // widths; returns the output dataset's shape.
  std::vector<hsize_t> open_source(Output& out, const std::map<std::string, models::PredictionColumns>& tasks,
                                   const Columns& columns) {
    std::vector<hsize_t> shape{static_cast<hsize_t>(options.num_rows)};
    const char* probs = models::SaltWrapperImpl::kObjectClassProbs;
    if (out.input == "object_masks") {  // no source: (N, M, L) of predictions only
      const int64_t m = columns.at("objects").at(probs).values.size(1);
      out.width = tasks.begin()->second.values.size(1);
      shape.push_back(static_cast<hsize_t>(m));
      shape.push_back(static_cast<hsize_t>(out.width / m));
      return shape;
    }
    out.source = std::make_unique<h5::Dataset>(source_file->dataset(dataset_of(out.input)));
    out.source_width = out.width = out.sequence ? out.source->cols() : 1;
    out.source_record = out.source->layout().record_size;
    if (out.input == "objects") {  // the model's object slots, filled from the file's by the truth's order
      out.width = tasks.at(probs).values.size(1);
      out.by_slot = columns.at("objects").count(models::SaltWrapperImpl::kObjectSourceSlots) > 0;
    }
    if (out.sequence) shape.push_back(static_cast<hsize_t>(out.width));
    return shape;
  }

  // The test file's fields copied into the output: extra_vars, else all.
  std::vector<std::string> copied_fields(const Output& out) const {
    if (!out.source) return {};
    auto extra = options.extra_vars ? options.extra_vars[out.input] : YAML::Node();
    if (!extra || !extra.IsSequence() || extra.size() == 0) return out.source->layout().names();
    std::vector<std::string> fields;
    for (const auto& f : extra) fields.push_back(f.as<std::string>());
    return fields;
  }

  // The tasks in options.task_order, then the rest by name.
  std::vector<const std::pair<const std::string, models::PredictionColumns>*> in_task_order(
      const std::map<std::string, models::PredictionColumns>& tasks) const {
    std::vector<const std::pair<const std::string, models::PredictionColumns>*> out;
    for (const auto& name : options.task_order)
      if (auto it = tasks.find(name); it != tasks.end() && std::find(out.begin(), out.end(), &*it) == out.end())
        out.push_back(&*it);
    for (const auto& entry : tasks)
      if (std::find(options.task_order.begin(), options.task_order.end(), entry.first) == options.task_order.end())
        out.push_back(&entry);
    return out;
  }

  // The output record: the copied fields, the predictions, then `mask`; fills the
  // offsets in `out` and returns the HDF5 type.
  h5::Id build_record(Output& out, const std::vector<std::string>& fields,
                      const std::map<std::string, models::PredictionColumns>& tasks) {
    const h5::CompoundLayout no_fields;
    const auto& layout = out.source ? out.source->layout() : no_fields;
    const auto float_type = options.half_precision ? h5::kF2 : h5::kF4;
    h5::CompoundBuilder builder;
    h5::Id file_type;
    if (out.source) file_type = out.source->file_type();
    std::vector<h5::Id> member_types;
    for (const auto& name : fields) {
      const auto* field = layout.find(name);
      if (!field) throw InputError("PredictionWriter extra_vars: '" + name + "' is not a field of " + out.source->where());
      h5::Guard guard;
      int index = H5Tget_member_index(file_type.get(), name.c_str());
      member_types.emplace_back(H5Tget_member_type(file_type.get(), static_cast<unsigned>(index)), H5Tclose);
      // As ftag's H5Writer: every float field in the output's precision (f4, or f2 with half_precision).
      if (field->type.kind == h5::Kind::Float)
        builder.add(name, float_type);
      else
        builder.add(name, member_types.back().get());
    }
    const auto order = in_task_order(tasks);
    for (const auto* entry : order) {
      const bool integer = !entry->second.values.is_floating_point();
      for (const auto& name : entry->second.names) builder.add(name, integer ? h5::kI8 : float_type);
    }
    // objects: class_label, no mask
    out.has_mask = out.sequence && out.source && out.input != "objects" && batch_has_mask(out.input);
    if (out.has_mask) builder.add("mask", h5::kBool);
    auto out_layout = builder.layout();
    out.record = out_layout.record_size;
    for (const auto& name : fields) {
      const auto* from = layout.find(name);
      const auto* to = out_layout.find(name);
      out.copies.push_back({from->offset, to->offset, static_cast<size_t>(from->type.size), from->type, to->type});
    }
    for (const auto* entry : order) {
      const auto& cols = entry->second;
      for (std::size_t c = 0; c < cols.names.size(); ++c)
        out.preds.push_back({entry->first, c, out_layout.find(cols.names[c])->offset, !cols.values.is_floating_point()});
    }
    if (out.has_mask) out.mask_offset = out_layout.find("mask")->offset;
    if (out.input == "objects") add_sentinels(out, fields, out_layout);
    return builder.build();
  }

  // salt's _select_objects marks an empty object slot, where the file has `valid`:
  // the id label -1, the class label the null class's raw value (the rest zero).
  void add_sentinels(Output& out, const std::vector<std::string>& fields, const h5::CompoundLayout& out_layout) const {
    auto copied = [&](const std::string& name) { return std::find(fields.begin(), fields.end(), name) != fields.end(); };
    if (!copied("valid")) return;
    auto sentinel = [&](const std::string& name, int64_t value) {
      if (const auto* f = out_layout.find(name); f && copied(name)) out.sentinels.push_back({f->offset, f->type, value});
    };
    sentinel(options.object_id_label, -1);
    if (!options.object_class_label.empty()) sentinel(options.object_class_label, options.object_null_raw);
  }

  void write(const Batch& batch, const Columns& columns) {
    if (!created) create(batch, columns);
    const int64_t rows = batch.size;
    for (auto& out : outputs) {
      std::vector<uint8_t> in(static_cast<size_t>(rows * out.source_width) * out.source_record);
      if (out.source) out.source->read_records(batch.start, rows, out.source_width, in.data());
      torch::Tensor slots;  // [rows, width]: the file slot of each output slot, -1 none
      if (out.by_slot)
        slots = columns.at(out.input).at(models::SaltWrapperImpl::kObjectSourceSlots).values.to(torch::kInt64)
                    .reshape({rows, -1}).contiguous();
      std::vector<uint8_t> buf(static_cast<size_t>(rows * out.width) * out.record, 0);
      const auto& tasks = columns.at(out.input);
      // Predictions as contiguous CPU arrays: [rows, L, N] (L = 1 for the global object).
      std::map<std::string, torch::Tensor> values;
      for (const auto& [task, cols] : tasks) {
        auto v = cols.values.detach().to(torch::kCPU);
        v = v.is_floating_point() ? v.to(torch::kFloat32) : v.to(torch::kInt64);
        if (!out.sequence) v = v.unsqueeze(1);
        values[task] = v.contiguous();
      }
      torch::Tensor mask;
      if (out.has_mask) mask = batch.pad_masks.at(out.input).to(torch::kCPU).to(torch::kBool).contiguous();
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t s = 0; s < out.width; ++s) {
          // Without the truth's order, the objects' slots are the file's, in its order.
          const int64_t from = out.by_slot ? (s < slots.size(1) ? slots.data_ptr<int64_t>()[r * slots.size(1) + s] : -1)
                                           : (s < out.source_width ? s : -1);
          uint8_t* dst = buf.data() + static_cast<size_t>(r * out.width + s) * out.record;
          if (from >= 0) {
            const uint8_t* src = in.data() + static_cast<size_t>(r * out.source_width + from) * out.source_record;
            for (const auto& c : out.copies) copy_field(c, src, dst);
          } else {
            for (const auto& f : out.sentinels) put_number(dst + f.offset, f.type, f.value);
          }
          for (const auto& p : out.preds) {
            const auto& v = values.at(p.task);
            const int64_t len = v.size(1), n = v.size(2);
            if (s >= len) continue;  // truncated by num_inputs: zero, as salt pads
            const int64_t idx = (r * len + s) * n + static_cast<int64_t>(p.column);
            if (p.integer) {
              int64_t x = v.data_ptr<int64_t>()[idx];
              std::memcpy(dst + p.offset, &x, 8);
            } else if (options.half_precision) {
              uint16_t x = h5::float_to_half(v.data_ptr<float>()[idx]);
              std::memcpy(dst + p.offset, &x, 2);
            } else {
              float x = v.data_ptr<float>()[idx];
              std::memcpy(dst + p.offset, &x, 4);
            }
          }
          if (out.has_mask) {
            uint8_t padded = s >= mask.size(1) ? 1 : (mask.data_ptr<bool>()[r * mask.size(1) + s] ? 1 : 0);
            dst[out.mask_offset] = padded;
          }
        }
      }
      out.target->write_records(batch.start, rows, buf.data());
    }
  }
};

PredictionWriter::PredictionWriter(PredictionWriterOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  fs::create_directories(impl_->options.output.parent_path());
  impl_->temp = temp_name_for(impl_->options.output);
}

PredictionWriter::~PredictionWriter() {
  if (!impl_->finished) {
    impl_->outputs.clear();
    impl_->target_file.reset();
    std::error_code ec;
    fs::remove(impl_->temp, ec);
  }
}

void PredictionWriter::write(const Batch& batch, const Columns& columns) { impl_->write(batch, columns); }

void PredictionWriter::finish() {
  if (!impl_->created) throw InputError("no predictions were written to " + impl_->options.output.string());
  // Checked flush, close and fsync: a full disk fails here (HDF5 writes cached chunks
  // late), and then the destructor removes the temp file instead of a rename. The
  // flush comes while the datasets are open: closing one writes its cached chunks
  // unchecked (~Id), and the file only closes once they are gone.
  impl_->target_file->flush();
  impl_->outputs.clear();
  impl_->source_file.reset();
  impl_->target_file->close();
  std::error_code ec;
  fs::rename(impl_->temp, impl_->options.output, ec);
  if (ec) throw InputError("cannot write " + impl_->options.output.string() + ": " + ec.message());
  impl_->finished = true;
}

const fs::path& PredictionWriter::output() const { return impl_->options.output; }

}  // namespace salt::callbacks
