// h5_file.h implementation, part 1: handles (Id), the HDF5 lock (Guard) and error
// messages, File and Dataset members, create_dataset and guess_chunk.
// Element types: h5_types.cpp; filters and LZF: h5_filters.cpp; attributes:
// h5_attributes.cpp; helpers shared among them: h5_internal.h.
#include "data/h5_file.h"

#include <fmt/format.h>
#include <liblzf/lzf.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "data/h5_internal.h"

namespace salt::data::h5 {

namespace fs = std::filesystem;

using detail::fail;
using detail::space_id;
using detail::type_id;

// --- handles, locking, errors ---------------------------------------------------------

Id& Id::operator=(Id&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    closer_ = other.closer_;
    other.id_ = -1;
  }
  return *this;
}

void Id::reset() {
  if (id_ >= 0 && closer_) closer_(id_);
  id_ = -1;
}

namespace {

bool library_threadsafe() {
  static const bool ts = [] {
    hbool_t flag = 0;
    H5is_library_threadsafe(&flag);
    return flag != 0;
  }();
  return ts;
}

std::recursive_mutex& fallback_mutex() {
  static std::recursive_mutex m;
  return m;
}

// HDF5 1.10 bug: when H5Fclose fails (a full disk while flushing), the file's ID stays
// in HDF5's table although the file structure behind it has been freed; the library's
// atexit cleanup (H5_term_library) then "closes" it again and segfaults after our
// error message. Every file is closed explicitly (RAII), so that cleanup is not needed:
// switch it off before anything can initialise the library (a static initialiser).
// H5dont_atexit does not itself initialise the library.
const bool kNoHdf5Atexit = [] {
  H5dont_atexit();
  return true;
}();

void process_init() {
  (void)kNoHdf5Atexit;
  static std::once_flag once;
  std::call_once(once, [] {
    // Like salt: file locking fails on Lustre/GPFS (errno 524) and buys nothing for
    // read-only training files. A user's explicit setting wins.
    setenv("HDF5_USE_FILE_LOCKING", "FALSE", 0);
    H5open();
  });
}

}  // namespace

Guard::Guard() {
  process_init();
  if (!library_threadsafe()) {
    fallback_mutex().lock();
    locked_ = true;
  }
  quiet_errors();
}

Guard::~Guard() {
  if (locked_) fallback_mutex().unlock();
}

void quiet_errors() {
  thread_local bool done = false;
  if (!done) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    done = true;
  }
}

std::string last_error() {
  struct Found {
    std::string innermost;
    int sys_errno = 0;
  } found;
  auto walk = [](unsigned n, const H5E_error2_t* err, void* data) -> herr_t {
    auto* out = static_cast<Found*>(data);
    if (!err->desc) return 0;
    if (n == 0) out->innermost = err->desc;  // innermost: where it was detected
    // A failed system call: HDF5 formats "..., errno = 28, error message = '...', buf = ..."
    // (and a ctime() with its newline); the errno says all the user needs.
    const char* e = std::strstr(err->desc, "errno = ");
    if (e && out->sys_errno == 0) out->sys_errno = std::atoi(e + 8);
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk, &found);
  if (found.sys_errno > 0) return write_error_text(found.sys_errno);
  std::string msg;
  for (char c : found.innermost) {  // one line
    if (c == '\n' || c == '\r') c = ' ';
    if (!(c == ' ' && !msg.empty() && msg.back() == ' ')) msg += c;
  }
  while (!msg.empty() && msg.back() == ' ') msg.pop_back();
  return msg;
}

namespace detail {

[[noreturn]] void fail(const std::string& what) {
  std::string detail = last_error();
  H5Eclear2(H5E_DEFAULT);
  throw InputError(detail.empty() ? what : what + ": " + detail);
}

}  // namespace detail

namespace {

Id plist_id(hid_t p) { return Id(p, H5Pclose); }

}  // namespace

// --- files ---------------------------------------------------------------------------------------

File File::open_read(const fs::path& path) {
  Guard guard;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(fmt::format("File not found: {}", path.string()));
  if (fs::is_directory(path, ec)) throw InputError(fmt::format("Expected an HDF5 file but found a directory: {}", path.string()));
  // A FIFO would block the open forever (no signal ends it), a device read without end.
  if (!fs::is_regular_file(path, ec))
    throw InputError(fmt::format("Expected an HDF5 file but {} is not a regular file (a device, FIFO or socket)",
                                 path.string()));
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(fmt::format("Not an HDF5 file: {}", path.string()));
  }
  File f;
  f.path_ = path;
  f.id_ = Id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f.id_.valid()) fail(fmt::format("Cannot open HDF5 file {}", path.string()));
  return f;
}

File File::create(const fs::path& path, const fs::path& shown) {
  Guard guard;
  File f;
  f.path_ = path;
  f.shown_ = shown;
  f.writable_ = true;
  f.id_ = Id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!f.id_.valid()) fail(fmt::format("cannot write {}", f.shown().string()));
  return f;
}

bool File::has_dataset(const std::string& name) const {
  Guard guard;
  if (name.empty() || H5Lexists(id(), name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  H5O_info_t info;
  if (H5Oget_info_by_name2(id(), name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return info.type == H5O_TYPE_DATASET;
}

std::vector<std::string> File::names() const {
  Guard guard;
  std::vector<std::string> out;
  auto cb = [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
    static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  };
  H5Literate(id(), H5_INDEX_NAME, H5_ITER_INC, nullptr, cb, &out);
  return out;
}

Dataset File::dataset(const std::string& name) const {
  Guard guard;
  if (!has_dataset(name)) {
    std::string avail;
    for (const auto& n : names()) avail += (avail.empty() ? "" : ", ") + n;
    bool exists = !name.empty() && H5Lexists(id(), name.c_str(), H5P_DEFAULT) > 0;
    H5Eclear2(H5E_DEFAULT);
    if (exists) throw InputError(fmt::format("The object '{}' in file {} is not a dataset", name, path_.string()));
    throw InputError(fmt::format("Input file {} does not contain the dataset '{}' (available: {})", path_.string(), name,
                                 avail));
  }
  Id ds(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) fail(fmt::format("Cannot open dataset '{}' in {}", name, path_.string()));
  return Dataset(std::move(ds), name, path_);
}

void File::flush() const {
  Guard guard;
  if (H5Fflush(id(), H5F_SCOPE_LOCAL) < 0) fail(fmt::format("cannot write {}", shown().string()));
}

void File::close() {
  if (!id_.valid()) return;
  {
    Guard guard;
    // released first: a failed H5Fclose must not be retried by ~Id (see kNoHdf5Atexit)
    if (H5Fclose(id_.release()) < 0) fail(fmt::format("cannot write {}", shown().string()));
  }
  if (!writable_) return;
  // HDF5 only write()s; get the data onto the disk before anyone renames the file.
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0 && ::fsync(fd) != 0) err = errno;
  if (fd >= 0) ::close(fd);
  if (err) throw InputError(fmt::format("cannot write {}: {}", shown().string(), std::strerror(err)));
}

// --- datasets -------------------------------------------------------------------------------------

Dataset::Dataset(Id id, std::string name, fs::path file)
    : id_(std::move(id)), name_(std::move(name)), file_(std::move(file)) {
  Guard guard;
  Id space = space_id(H5Dget_space(id_.get()));
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail("Cannot read shape of " + where());
  shape_.resize(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), shape_.data(), nullptr);
}

std::string Dataset::where() const { return fmt::format("dataset '{}' in {}", name_, file_.string()); }

bool Dataset::is_compound() const {
  Guard guard;
  Id t = type_id(H5Dget_type(id()));
  return H5Tget_class(t.get()) == H5T_COMPOUND;
}

const CompoundLayout& Dataset::layout() const {
  if (!layout_) {
    Id t = file_type();
    layout_ = std::make_unique<CompoundLayout>(describe_compound(t.get(), where()));
  }
  return *layout_;
}

Id Dataset::file_type() const {
  Guard guard;
  return type_id(H5Dget_type(id()));
}

StorageInfo Dataset::storage() const {
  Guard guard;
  StorageInfo info;
  Id dcpl = plist_id(H5Dget_create_plist(id()));
  if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
    info.chunked = true;
    info.chunk.resize(shape_.size());
    H5Pget_chunk(dcpl.get(), static_cast<int>(info.chunk.size()), info.chunk.data());
  }
  int n = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    size_t nelmts = 16;
    std::vector<unsigned> cd(16);
    char name[64];
    H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nelmts, cd.data(), sizeof name,
                                     name, &config);
    cd.resize(std::min<size_t>(nelmts, 16));
    info.filters.push_back(id);
    info.filter_params.push_back(cd);
  }
  return info;
}

void Dataset::check_filters() const {
  for (H5Z_filter_t id : storage().filters) {
    if (filter_available(id)) continue;
    std::string pkg = filter_package(id);
    throw InputError(fmt::format(
        "{} is compressed with {}, which this HDF5 installation cannot decode{}", where(), filter_name(id),
        pkg.empty() ? std::string()
                    : fmt::format(": install the Debian package {} (or point HDF5_PLUGIN_PATH at the plugin)", pkg)));
  }
}

void Dataset::read_records(int64_t start, int64_t count, int64_t cols, void* out) const {
  Guard guard;
  if (count <= 0) return;
  Id type = file_type();
  Id fspace = space_id(H5Dget_space(id()));
  hsize_t off[2] = {static_cast<hsize_t>(start), 0};
  hsize_t cnt[2] = {static_cast<hsize_t>(count), static_cast<hsize_t>(cols)};
  int rank = static_cast<int>(shape_.size());
  if (H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, off, nullptr, cnt, nullptr) < 0)
    fail(fmt::format("Cannot select rows {}..{} of {}", start, start + count, where()));
  Id mspace = space_id(H5Screate_simple(rank, cnt, nullptr));
  if (H5Dread(id(), type.get(), mspace.get(), fspace.get(), H5P_DEFAULT, out) < 0)
    fail(fmt::format("Failed to read rows {}..{} of {}", start, start + count, where()));
}

bool Dataset::direct_chunks_supported() const {
  if (direct_) return direct_->supported;
  Guard guard;
  auto d = std::make_unique<Direct>();
  Id type = file_type();
  StorageInfo info = storage();
  const bool fixed_size = H5Tdetect_class(type.get(), H5T_VLEN) <= 0 && H5Tis_variable_str(type.get()) <= 0 &&
                          H5Tdetect_class(type.get(), H5T_REFERENCE) <= 0;
  H5Eclear2(H5E_DEFAULT);
  d->record_size = H5Tget_size(type.get());
  // Unwritten chunks decode as zeros: only valid without a user-defined fill value.
  H5D_fill_value_t fill = H5D_FILL_VALUE_DEFAULT;
  {
    Id dcpl = plist_id(H5Dget_create_plist(id()));
    H5Pfill_value_defined(dcpl.get(), &fill);
  }
  std::vector<H5Z_filter_t> filters = info.filters;
  if (!filters.empty() && filters.back() == H5Z_FILTER_FLETCHER32) {  // applied last on writing: checked first
    d->fletcher32 = true;
    d->fletcher32_bit = static_cast<unsigned>(filters.size() - 1);
    filters.pop_back();
  }
  if (info.chunked && fill != H5D_FILL_VALUE_USER_DEFINED && fixed_size && !shape_.empty() && shape_.size() <= 2 &&
      filters.size() <= 1) {
    d->chunk_rows = info.chunk[0];
    d->chunk_cols = shape_.size() > 1 ? info.chunk[1] : 1;
    if (filters.empty()) {
      d->supported = true;
    } else if (filters[0] == kLzfFilter || filters[0] == H5Z_FILTER_DEFLATE) {
      d->filter = filters[0];
      d->supported = true;
    }
  }
  direct_ = std::move(d);
  return direct_->supported;
}

bool Dataset::chunk_written(const hsize_t* offset) const {
  unsigned mask = 0;
  haddr_t addr = HADDR_UNDEF;
  hsize_t nbytes = 0;
  const bool known = H5Dget_chunk_info_by_coord(id(), offset, &mask, &addr, &nbytes) >= 0;
  H5Eclear2(H5E_DEFAULT);
  return known && addr != HADDR_UNDEF && nbytes > 0;
}

RawChunks Dataset::read_chunks(int64_t start, int64_t count, int64_t cols) const {
  if (!direct_chunks_supported()) throw InputError("read_chunks: unsupported layout of " + where());
  Guard guard;
  RawChunks raw;
  raw.start = start;
  raw.count = count;
  raw.cols = cols;
  if (count <= 0 || cols <= 0) return raw;
  const Direct& d = *direct_;
  const hsize_t first_row = static_cast<hsize_t>(start) / d.chunk_rows * d.chunk_rows;
  const hsize_t end_row = static_cast<hsize_t>(start + count);
  for (hsize_t r = first_row; r < end_row; r += d.chunk_rows) {
    for (hsize_t c = 0; c < static_cast<hsize_t>(cols); c += d.chunk_cols) {
      RawChunks::Chunk chunk;
      chunk.row = r;
      chunk.col = c;
      hsize_t offset[2] = {r, c};
      hsize_t nbytes = 0;
      // Indexed lookups only: H5Dget_chunk_info_by_coord walks the whole chunk index
      // in HDF5 1.10 (3 ms per lookup at 100k chunks, so an epoch grew with the
      // square of the file size); it is asked only when a read fails, to tell a
      // chunk never written (read as the fill value) from a real error.
      if (H5Dget_chunk_storage_size(id(), offset, &nbytes) < 0 || nbytes == 0) {
        H5Eclear2(H5E_DEFAULT);
        chunk.missing = true;
      } else {
        chunk.bytes.resize(nbytes);
        if (H5Dread_chunk(id(), H5P_DEFAULT, offset, &chunk.filter_mask, chunk.bytes.data()) < 0) {
          if (!chunk_written(offset)) {
            H5Eclear2(H5E_DEFAULT);
            chunk.missing = true;
            chunk.bytes.clear();
          } else {
            fail(fmt::format("Failed to read the chunk at row {} of {}", r, where()));
          }
        }
      }
      raw.chunks.push_back(std::move(chunk));
    }
  }
  return raw;
}

void Dataset::decode_chunks(const RawChunks& raw, void* out_ptr) const {
  const Direct& d = *direct_;  // set by read_chunks
  const size_t rs = d.record_size;
  const size_t chunk_bytes = d.chunk_rows * d.chunk_cols * rs;
  auto* out = static_cast<uint8_t*>(out_ptr);
  std::vector<uint8_t> scratch;
  const hsize_t start = static_cast<hsize_t>(raw.start), end = start + static_cast<hsize_t>(raw.count);
  const hsize_t cols = static_cast<hsize_t>(raw.cols);
  for (const auto& chunk : raw.chunks) {
    const uint8_t* data = nullptr;
    const bool filtered = d.filter >= 0 && !(chunk.filter_mask & 1u);
    size_t stored = chunk.bytes.size();  // the chunk's bytes before its checksum
    if (!chunk.missing && d.fletcher32 && !(chunk.filter_mask & (1u << d.fletcher32_bit))) {
      if (!fletcher32_matches(chunk.bytes.data(), stored))
        throw InputError(fmt::format("Damaged chunk at row {} of {}: its Fletcher32 checksum does not match",
                                     chunk.row, where()));
      stored -= 4;
    }
    if (chunk.missing) {
      scratch.assign(chunk_bytes, 0);
      data = scratch.data();
    } else if (!filtered) {
      if (stored < chunk_bytes)
        throw InputError(fmt::format("Corrupt chunk at row {} of {}: {} bytes, expected {}", chunk.row, where(),
                                     stored, chunk_bytes));
      data = chunk.bytes.data();
    } else {
      scratch.resize(chunk_bytes);
      bool ok = false;
      if (d.filter == kLzfFilter) {
        ok = lzf_decompress(chunk.bytes.data(), static_cast<unsigned>(stored), scratch.data(),
                            static_cast<unsigned>(chunk_bytes)) == chunk_bytes;
      } else {
        uLongf len = static_cast<uLongf>(chunk_bytes);
        ok = uncompress(scratch.data(), &len, chunk.bytes.data(), static_cast<uLong>(stored)) == Z_OK &&
             len == chunk_bytes;
      }
      if (!ok)
        throw InputError(fmt::format("Cannot decompress the {} chunk at row {} of {}", filter_name(d.filter), chunk.row,
                                     where()));
      data = scratch.data();
    }
    // Copy the part of the chunk inside [start, end) x [0, cols).
    const hsize_t r0 = std::max(chunk.row, start), r1 = std::min(chunk.row + d.chunk_rows, end);
    const hsize_t c0 = chunk.col, c1 = std::min(chunk.col + d.chunk_cols, cols);
    if (c1 <= c0) continue;
    for (hsize_t r = r0; r < r1; ++r)
      std::memcpy(out + ((r - start) * cols + c0) * rs, data + ((r - chunk.row) * d.chunk_cols) * rs, (c1 - c0) * rs);
  }
}

void Dataset::write_records(int64_t start, int64_t count, const void* in) const {
  Guard guard;
  if (count <= 0) return;
  Id type = file_type();
  Id fspace = space_id(H5Dget_space(id()));
  // Whole rows of any rank: rows [start, start + count) and every slot of the other axes.
  const int rank = static_cast<int>(shape_.size());
  std::vector<hsize_t> off(shape_.size(), 0), cnt(shape_.begin(), shape_.end());
  off[0] = static_cast<hsize_t>(start);
  cnt[0] = static_cast<hsize_t>(count);
  H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, off.data(), nullptr, cnt.data(), nullptr);
  Id mspace = space_id(H5Screate_simple(rank, cnt.data(), nullptr));
  if (H5Dwrite(id(), type.get(), mspace.get(), fspace.get(), H5P_DEFAULT, in) < 0)
    fail(fmt::format("cannot write {}", file_.string()));  // as every write error: "cannot write <file>: <reason>"
}

std::vector<hsize_t> guess_chunk(const std::vector<hsize_t>& shape, size_t type_size) {
  // h5py's heuristic: aim for ~16 KiB scaled with the dataset size, within 8 KiB..1 MiB,
  // halving the axes in turn.
  constexpr double kBase = 16 * 1024, kMin = 8 * 1024, kMax = 1024 * 1024;
  std::vector<hsize_t> chunks;
  for (hsize_t x : shape) chunks.push_back(x == 0 ? 1024 : x);
  double dset_size = static_cast<double>(type_size);
  for (hsize_t c : chunks) dset_size *= static_cast<double>(c);
  double target = kBase * std::pow(2.0, std::log10(dset_size / (1024.0 * 1024.0)));
  target = std::clamp(target, kMin, kMax);
  for (size_t idx = 0;; ++idx) {
    double bytes = static_cast<double>(type_size);
    hsize_t elems = 1;
    for (hsize_t c : chunks) {
      bytes *= static_cast<double>(c);
      elems *= c;
    }
    if ((bytes < target || std::abs(bytes - target) / target < 0.5) && bytes < kMax) break;
    if (elems == 1) break;
    size_t axis = idx % chunks.size();
    chunks[axis] = static_cast<hsize_t>(std::ceil(static_cast<double>(chunks[axis]) / 2.0));
  }
  return chunks;
}

Dataset create_dataset(const File& file, const std::string& name, hid_t type, const DatasetSpec& spec,
                       size_t type_size) {
  Guard guard;
  Id dcpl = plist_id(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_obj_track_times(dcpl.get(), 0);  // h5py's default; also keeps files reproducible
  bool chunked = spec.compression != Compression::None || !spec.chunk.empty() || spec.resizable || spec.fletcher32;
  if (chunked) {
    auto guess_shape = spec.shape;
    if (spec.resizable && !guess_shape.empty()) guess_shape[0] = 0;  // h5py guesses 1024 for an unlimited axis
    std::vector<hsize_t> chunk = spec.chunk.empty() ? guess_chunk(guess_shape, type_size) : spec.chunk;
    for (size_t i = 0; i < chunk.size(); ++i)
      if (!(spec.resizable && i == 0)) chunk[i] = std::max<hsize_t>(1, std::min(chunk[i], std::max<hsize_t>(1, spec.shape[i])));
    H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
  }
  if (spec.compression == Compression::Gzip) {
    H5Pset_deflate(dcpl.get(), static_cast<unsigned>(spec.gzip_level));
  } else if (spec.compression == Compression::Lzf) {
    if (!ensure_lzf_for_writing())
      throw InputError("Cannot write LZF-compressed HDF5 files: install the Debian package hdf5-plugin-lzf");
    // Exactly what h5py does for compression="lzf": an optional filter without parameters
    // (the filter's set_local fills them in).
    if (H5Pset_filter(dcpl.get(), kLzfFilter, H5Z_FLAG_OPTIONAL, 0, nullptr) < 0)
      fail(fmt::format("Cannot enable LZF for dataset '{}' in {}", name, file.path().string()));
  }
  if (spec.fletcher32 && H5Pset_fletcher32(dcpl.get()) < 0)
    fail(fmt::format("Cannot add a Fletcher32 checksum to dataset '{}' in {}", name, file.path().string()));
  auto max_shape = spec.shape;
  if (spec.resizable && !max_shape.empty()) max_shape[0] = H5S_UNLIMITED;
  Id space = space_id(H5Screate_simple(static_cast<int>(spec.shape.size()), spec.shape.data(), max_shape.data()));
  Id ds(H5Dcreate2(file.id(), name.c_str(), type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) fail(fmt::format("Cannot create dataset '{}' in {}", name, file.shown().string()));
  return Dataset(std::move(ds), name, file.shown());  // the name for messages only
}

}  // namespace salt::data::h5
