// A small RAII layer over the HDF5 C library (1.10): handles, compound layouts,
// filters, attributes, and row-range reads/writes of compound datasets. No torch.
//
// Why raw records: the ATLAS preprocessing writes one compound dataset per object
// type. Reading a row range with the file's own compound type is a plain copy
// inside HDF5 (no per-field type conversion), so the time spent holding HDF5's
// global lock is only I/O + decompression; the conversion to float32 happens
// outside the library, in parallel (see h5_reader.h).
#pragma once
#include <hdf5.h>
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace salt::data::h5 {

// Owns one hid_t and closes it with the matching H5*close on destruction.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Id() { reset(); }
  Id(Id&& other) noexcept : id_(other.id_), closer_(other.closer_) { other.id_ = -1; }
  Id& operator=(Id&& other) noexcept;
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();
  // Gives up ownership without closing (for closes whose result must be checked).
  hid_t release() {
    hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// Held around HDF5 calls. Debian's libhdf5 is thread-safe (it serialises every call
// behind its own global lock) and then this guard is a no-op; with a non-thread-safe
// build it serialises our calls instead. Code outside lib/data that calls HDF5 while
// loader workers run should hold it too.
class Guard {
 public:
  Guard();
  ~Guard();
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  bool locked_ = false;
};

// Silences HDF5's automatic error-stack printing for the calling thread (the setting
// is per-thread in thread-safe builds). Every wrapper calls it; cheap after the first.
void quiet_errors();
// The innermost message of the calling thread's HDF5 error stack ("" if empty), as
// one line: a failed system call gives just its strerror text ("No space left on
// device"), not HDF5's multi-line dump of times, buffers and byte counts.
std::string last_error();

// --- element types --------------------------------------------------------------

enum class Kind { Float, Int, UInt, Bool, Other };

// One scalar field type. Bool is h5py's bool: an enum of int8 {FALSE=0, TRUE=1}.
struct FieldType {
  Kind kind = Kind::Other;
  int size = 0;  // bytes
  bool operator==(const FieldType& o) const { return kind == o.kind && size == o.size; }
  bool operator!=(const FieldType& o) const { return !(*this == o); }
  bool is_integer() const { return kind == Kind::Int || kind == Kind::UInt || kind == Kind::Bool; }
  std::string str() const;  // numpy-style: f2 f4 f8 i1 u1 ... bool
  static FieldType parse(const std::string& numpy_code);  // "f4", "i1", "bool", ...
};
inline constexpr FieldType kF2{Kind::Float, 2}, kF4{Kind::Float, 4}, kF8{Kind::Float, 8};
inline constexpr FieldType kI1{Kind::Int, 1}, kI2{Kind::Int, 2}, kI4{Kind::Int, 4}, kI8{Kind::Int, 8};
inline constexpr FieldType kU1{Kind::UInt, 1}, kU2{Kind::UInt, 2}, kU4{Kind::UInt, 4}, kU8{Kind::UInt, 8};
inline constexpr FieldType kBool{Kind::Bool, 1};

// A new HDF5 type for `t` in little-endian file layout (h5py's conventions:
// float16 as IEEE half, bool as enum int8 FALSE/TRUE).
Id make_type(FieldType t);

struct Field {
  std::string name;
  size_t offset = 0;
  FieldType type;
};

// Fields of a compound type as laid out in memory when read with that same type.
struct CompoundLayout {
  size_t record_size = 0;
  std::vector<Field> fields;
  const Field* find(const std::string& name) const;
  std::vector<std::string> names() const;
};
// `where` names the dataset and file for error messages.
CompoundLayout describe_compound(hid_t type, const std::string& where);

// Builds a packed compound type field by field (for writing files).
class CompoundBuilder {
 public:
  CompoundBuilder& add(const std::string& name, FieldType t);
  // Adds a member with an existing HDF5 type (e.g. copied from another file).
  CompoundBuilder& add(const std::string& name, hid_t type);
  Id build() const;
  CompoundLayout layout() const;

 private:
  void check_new(const std::string& name) const;  // InputError for a name already added
  struct Member {
    std::string name;
    FieldType t;
    hid_t copied = -1;  // H5Tcopy'd foreign type, or -1
    size_t size = 0;
  };
  std::vector<Member> members_;
  std::vector<std::shared_ptr<Id>> owned_;
};

// --- filters ----------------------------------------------------------------------

enum class Compression { None, Lzf, Gzip };
std::string to_string(Compression c);
Compression parse_compression(const std::string& s);  // none|lzf|gzip

inline constexpr H5Z_filter_t kLzfFilter = 32000;

// "LZF (HDF5 filter 32000)" etc.
std::string filter_name(H5Z_filter_t id);
// The Debian package that provides a filter plugin ("" for built-ins).
std::string filter_package(H5Z_filter_t id);
// True when HDF5 can apply the filter (loads plugins from HDF5_PLUGIN_PATH if needed).
bool filter_available(H5Z_filter_t id);
// Makes LZF writable: uses the installed plugin (h5py's own lzf_filter, so files are
// byte-identical to h5py's), else registers an in-process filter built on liblzf
// with the same format. Returns false if neither works.
bool ensure_lzf_for_writing();

// --- attributes -------------------------------------------------------------------

// All attributes of an object as YAML: strings (fixed or variable length) as
// strings, numbers as numbers, 1-D arrays as sequences. Unreadable ones are skipped.
YAML::Node read_attributes(hid_t obj);
void write_attr(hid_t obj, const std::string& name, const std::string& value);  // vlen utf-8
void write_attr(hid_t obj, const std::string& name, int64_t value);
void write_attr(hid_t obj, const std::string& name, double value);
void write_attr(hid_t obj, const std::string& name, const std::vector<std::string>& values);
// Copies every attribute of `from` to `to` byte for byte, in its own type.
void copy_attributes(hid_t from, hid_t to);

// --- files and datasets -------------------------------------------------------------

class Dataset;

class File {
 public:
  static File open_read(const std::filesystem::path& path);
  // Truncates. `shown` is the name error messages use (the final name when `path`
  // is a temp file that is renamed into place later); empty: `path`.
  static File create(const std::filesystem::path& path, const std::filesystem::path& shown = {});
  hid_t id() const { return id_.get(); }
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& shown() const { return shown_.empty() ? path_ : shown_; }
  bool has_dataset(const std::string& name) const;
  std::vector<std::string> names() const;  // top-level links
  Dataset dataset(const std::string& name) const;
  YAML::Node attributes() const { return read_attributes(id()); }
  // Both throw InputError "cannot write <shown>: <reason>" on failure (e.g. a full
  // disk: HDF5 writes cached chunks and metadata only here).
  void flush() const;
  // Closes the file, checking the result; a created file is also fsync'ed, so it is
  // on disk before the caller renames it into place. Order: flush() while the file's
  // Datasets are open (destroying one writes its cached chunks, unchecked), then
  // destroy them, then close() (HDF5 keeps the file open, unchecked, while one is).
  // Afterwards the File is empty, also when this throws.
  void close();

 private:
  Id id_;
  std::filesystem::path path_, shown_;
  bool writable_ = false;
};

struct StorageInfo {
  bool chunked = false;
  std::vector<hsize_t> chunk;
  std::vector<H5Z_filter_t> filters;
  std::vector<std::vector<unsigned>> filter_params;  // cd_values per filter
};

// Compressed chunks covering a row range, as stored in the file (read under HDF5's
// lock by Dataset::read_chunks, decoded without HDF5 by Dataset::decode_chunks).
struct RawChunks {
  struct Chunk {
    hsize_t row = 0, col = 0;  // chunk origin
    uint32_t filter_mask = 0;  // bit i set: filter i was skipped for this chunk
    bool missing = false;      // never written: fill value (zeros)
    std::vector<uint8_t> bytes;
  };
  int64_t start = 0, count = 0, cols = 0;
  std::vector<Chunk> chunks;
};

class Dataset {
 public:
  Dataset(Id id, std::string name, std::filesystem::path file);
  hid_t id() const { return id_.get(); }
  const std::string& name() const { return name_; }
  const std::filesystem::path& file() const { return file_; }
  std::string where() const;  // "dataset 'tracks' in <file>"
  const std::vector<hsize_t>& shape() const { return shape_; }
  int64_t rows() const { return shape_.empty() ? 0 : static_cast<int64_t>(shape_[0]); }
  int64_t cols() const { return shape_.size() > 1 ? static_cast<int64_t>(shape_[1]) : 1; }
  bool is_compound() const;
  const CompoundLayout& layout() const;  // throws InputError if not compound
  Id file_type() const;                  // a copy of the dataset's type
  StorageInfo storage() const;
  // Throws InputError naming the filter and the package to install when a filter
  // of this dataset cannot be applied here.
  void check_filters() const;
  YAML::Node attributes() const { return read_attributes(id()); }
  // Reads rows [start, start+count) and, for 2-D datasets, columns [0, cols) as
  // whole records in the file's own compound type (no conversion) into `out`,
  // which must hold count * cols * layout().record_size bytes.
  void read_records(int64_t start, int64_t count, int64_t cols, void* out) const;
  // Direct chunk access: decompression outside HDF5 (and so outside its global lock),
  // for chunked datasets of fixed-size fields whose filter pipeline is empty, LZF or
  // gzip alone. Files with other layouts go through read_records.
  bool direct_chunks_supported() const;
  RawChunks read_chunks(int64_t start, int64_t count, int64_t cols) const;  // HDF5: I/O only
  // Decodes into `out` (count * cols records), exactly what read_records would give.
  // Makes no HDF5 calls: safe to run in parallel. InputError on corrupt chunks.
  void decode_chunks(const RawChunks& raw, void* out) const;
  // Writes whole records (same layout) into rows [start, start+count), all columns.
  void write_records(int64_t start, int64_t count, const void* in) const;

 private:
  bool chunk_written(const hsize_t* offset) const;  // slow (walks the chunk index): error paths only

  Id id_;
  std::string name_;
  std::filesystem::path file_;
  std::vector<hsize_t> shape_;
  mutable std::unique_ptr<CompoundLayout> layout_;
  struct Direct {
    bool supported = false;
    hsize_t chunk_rows = 1, chunk_cols = 1;
    size_t record_size = 0;
    H5Z_filter_t filter = -1;  // -1: no filter
    // HDF5's Fletcher32 filter after it (the last in the pipeline): each stored chunk
    // ends in a checksum of the bytes before it, verified before decompressing.
    bool fletcher32 = false;
    unsigned fletcher32_bit = 0;  // its bit in a chunk's filter mask
  };
  mutable std::unique_ptr<Direct> direct_;  // set once by direct_chunks_supported()
};

struct DatasetSpec {
  std::vector<hsize_t> shape;  // (N,) or (N, L)
  std::vector<hsize_t> chunk;  // empty: h5py's automatic chunk guess
  Compression compression = Compression::Lzf;
  int gzip_level = 4;  // h5py's default
  // maxshape (None, ...): rows can be appended later (h5py then guesses the chunk
  // of a 0-row dataset, so the chunk does not depend on the rows written).
  bool resizable = false;
  // HDF5's Fletcher32 checksum of every stored chunk (after compression, as h5py's
  // fletcher32=True), verified on every read: LZF itself has none.
  bool fletcher32 = false;
};
// Creates a compound dataset like h5py's create_dataset(..., chunks=, compression=).
Dataset create_dataset(const File& file, const std::string& name, hid_t type, const DatasetSpec& spec,
                       size_t type_size);
// h5py's guess_chunk for a fixed shape (used when DatasetSpec::chunk is empty).
std::vector<hsize_t> guess_chunk(const std::vector<hsize_t>& shape, size_t type_size);

// HDF5's Fletcher32 checksum (H5_checksum_fletcher32), and whether `stored` (the
// chunk's last 4 bytes, little-endian) matches it for the bytes before them; HDF5
// also accepts the byte-swapped form files of HDF5 < 1.6.3 carry.
uint32_t fletcher32(const uint8_t* data, size_t len);
bool fletcher32_matches(const uint8_t* chunk, size_t bytes);

// float16 <-> float32 (IEEE half, round-to-nearest-even on the way down).
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

}  // namespace salt::data::h5
