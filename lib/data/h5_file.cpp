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
#include <numeric>

#include "core/errors.h"

namespace salt::data::h5 {

namespace fs = std::filesystem;

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
  if (found.sys_errno > 0) return std::strerror(found.sys_errno);
  std::string msg;
  for (char c : found.innermost) {  // one line
    if (c == '\n' || c == '\r') c = ' ';
    if (!(c == ' ' && !msg.empty() && msg.back() == ' ')) msg += c;
  }
  while (!msg.empty() && msg.back() == ' ') msg.pop_back();
  return msg;
}

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::string detail = last_error();
  H5Eclear2(H5E_DEFAULT);
  throw InputError(detail.empty() ? what : what + ": " + detail);
}

Id type_id(hid_t t) { return Id(t, H5Tclose); }
Id space_id(hid_t s) { return Id(s, H5Sclose); }
Id plist_id(hid_t p) { return Id(p, H5Pclose); }

std::string member_name(hid_t type, unsigned i) {
  char* raw = H5Tget_member_name(type, i);
  std::string name = raw ? raw : "";
  if (raw) H5free_memory(raw);
  return name;
}

FieldType classify(hid_t t) {
  H5T_class_t cls = H5Tget_class(t);
  int size = static_cast<int>(H5Tget_size(t));
  bool little = H5Tget_order(t) != H5T_ORDER_BE;
  switch (cls) {
    case H5T_FLOAT: {
      if (!little) return {};
      if (size == 2) {
        size_t spos, epos, esize, mpos, msize;
        H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize);
        if (spos == 15 && epos == 10 && esize == 5 && mpos == 0 && msize == 10 && H5Tget_ebias(t) == 15)
          return kF2;
        return {};
      }
      if (size == 4 || size == 8) return {Kind::Float, size};
      return {};
    }
    case H5T_INTEGER:
    case H5T_BITFIELD: {
      if (!little && size > 1) return {};
      if (size != 1 && size != 2 && size != 4 && size != 8) return {};
      bool is_signed = cls == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_2;
      return {is_signed ? Kind::Int : Kind::UInt, size};
    }
    case H5T_ENUM: {
      Id super = type_id(H5Tget_super(t));
      FieldType base = classify(super.get());
      if (!base.is_integer()) return {};
      if (base.size == 1 && H5Tget_nmembers(t) == 2) {
        std::string a = member_name(t, 0), b = member_name(t, 1);
        if ((a == "FALSE" && b == "TRUE") || (a == "TRUE" && b == "FALSE")) return kBool;
      }
      return base;  // other enums: their integer values
    }
    default:
      return {};
  }
}

}  // namespace

// --- element types ---------------------------------------------------------------------

std::string FieldType::str() const {
  switch (kind) {
    case Kind::Float: return fmt::format("f{}", size);
    case Kind::Int: return fmt::format("i{}", size);
    case Kind::UInt: return fmt::format("u{}", size);
    case Kind::Bool: return "bool";
    default: return "unsupported";
  }
}

FieldType FieldType::parse(const std::string& s) {
  if (s == "bool") return kBool;
  if (s.size() == 2) {
    int size = s[1] - '0';
    if (size == 1 || size == 2 || size == 4 || size == 8) {
      if (s[0] == 'f' && size >= 2) return {Kind::Float, size};
      if (s[0] == 'i') return {Kind::Int, size};
      if (s[0] == 'u') return {Kind::UInt, size};
    }
  }
  throw InputError(fmt::format("Unknown field type '{}' (expected f2/f4/f8/i1/i2/i4/i8/u1/u2/u4/u8/bool)", s));
}

Id make_type(FieldType t) {
  Guard guard;
  hid_t base = -1;
  switch (t.kind) {
    case Kind::Float:
      if (t.size == 2) {
        // h5py's float16: IEEE single narrowed to sign 15, exponent 10..14, mantissa 0..9.
        Id half = type_id(H5Tcopy(H5T_IEEE_F32LE));
        H5Tset_fields(half.get(), 15, 10, 5, 0, 10);
        H5Tset_size(half.get(), 2);
        H5Tset_ebias(half.get(), 15);
        return half;
      }
      base = t.size == 4 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
      break;
    case Kind::Int:
      base = t.size == 1 ? H5T_STD_I8LE : t.size == 2 ? H5T_STD_I16LE : t.size == 4 ? H5T_STD_I32LE : H5T_STD_I64LE;
      break;
    case Kind::UInt:
      base = t.size == 1 ? H5T_STD_U8LE : t.size == 2 ? H5T_STD_U16LE : t.size == 4 ? H5T_STD_U32LE : H5T_STD_U64LE;
      break;
    case Kind::Bool: {
      // h5py stores numpy bools as an int8 enum {FALSE: 0, TRUE: 1}.
      Id e = type_id(H5Tenum_create(H5T_NATIVE_INT8));
      int8_t no = 0, yes = 1;
      H5Tenum_insert(e.get(), "FALSE", &no);
      H5Tenum_insert(e.get(), "TRUE", &yes);
      return e;
    }
    default:
      throw InputError("make_type: unsupported field type");
  }
  return type_id(H5Tcopy(base));
}

const Field* CompoundLayout::find(const std::string& name) const {
  for (const auto& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

std::vector<std::string> CompoundLayout::names() const {
  std::vector<std::string> out;
  for (const auto& f : fields) out.push_back(f.name);
  return out;
}

CompoundLayout describe_compound(hid_t type, const std::string& where) {
  Guard guard;
  if (H5Tget_class(type) != H5T_COMPOUND) throw InputError(fmt::format("{} is not a compound (structured) dataset", where));
  CompoundLayout out;
  out.record_size = H5Tget_size(type);
  int n = H5Tget_nmembers(type);
  for (int i = 0; i < n; ++i) {
    Field f;
    f.name = member_name(type, static_cast<unsigned>(i));
    f.offset = H5Tget_member_offset(type, static_cast<unsigned>(i));
    Id mt = type_id(H5Tget_member_type(type, static_cast<unsigned>(i)));
    f.type = classify(mt.get());
    out.fields.push_back(std::move(f));
  }
  return out;
}

CompoundBuilder& CompoundBuilder::add(const std::string& name, FieldType t) {
  members_.push_back({name, t, -1, static_cast<size_t>(t.size)});
  return *this;
}

CompoundBuilder& CompoundBuilder::add(const std::string& name, hid_t type) {
  Guard guard;
  auto owned = std::make_shared<Id>(type_id(H5Tcopy(type)));
  owned_.push_back(owned);
  members_.push_back({name, classify(type), owned->get(), H5Tget_size(type)});
  return *this;
}

Id CompoundBuilder::build() const {
  Guard guard;
  size_t total = 0;
  for (const auto& m : members_) total += m.size;
  Id t = type_id(H5Tcreate(H5T_COMPOUND, total));
  size_t off = 0;
  for (const auto& m : members_) {
    if (m.copied >= 0) {
      H5Tinsert(t.get(), m.name.c_str(), off, m.copied);
    } else {
      Id mt = make_type(m.t);
      H5Tinsert(t.get(), m.name.c_str(), off, mt.get());
    }
    off += m.size;
  }
  return t;
}

CompoundLayout CompoundBuilder::layout() const {
  CompoundLayout out;
  for (const auto& m : members_) {
    out.fields.push_back({m.name, out.record_size, m.t});
    out.record_size += m.size;
  }
  return out;
}

// --- filters -----------------------------------------------------------------------------

std::string to_string(Compression c) {
  switch (c) {
    case Compression::None: return "none";
    case Compression::Lzf: return "lzf";
    case Compression::Gzip: return "gzip";
  }
  return "?";
}

Compression parse_compression(const std::string& s) {
  if (s == "none" || s.empty()) return Compression::None;
  if (s == "lzf") return Compression::Lzf;
  if (s == "gzip") return Compression::Gzip;
  throw InputError(fmt::format("Unknown compression '{}' (choose none, lzf or gzip)", s));
}

std::string filter_name(H5Z_filter_t id) {
  switch (id) {
    case H5Z_FILTER_DEFLATE: return "gzip (HDF5 filter 1)";
    case H5Z_FILTER_SHUFFLE: return "shuffle (HDF5 filter 2)";
    case H5Z_FILTER_FLETCHER32: return "fletcher32 (HDF5 filter 3)";
    case H5Z_FILTER_SZIP: return "szip (HDF5 filter 4)";
    case 32000: return "LZF (HDF5 filter 32000)";
    case 32001: return "Blosc (HDF5 filter 32001)";
    case 32004: return "LZ4 (HDF5 filter 32004)";
    case 32008: return "Bitshuffle (HDF5 filter 32008)";
    case 32015: return "Zstandard (HDF5 filter 32015)";
    default: return fmt::format("HDF5 filter {}", id);
  }
}

std::string filter_package(H5Z_filter_t id) {
  if (id == 32000) return "hdf5-plugin-lzf";
  if (id == 32001 || id == 32004 || id == 32008 || id == 32015) return "hdf5-filter-plugin";
  if (id == H5Z_FILTER_SZIP) return "libaec0 (HDF5 built with szip)";
  return "";
}

bool filter_available(H5Z_filter_t id) {
  Guard guard;
  // H5Zfilter_avail also tries to load a plugin from HDF5_PLUGIN_PATH.
  htri_t avail = H5Zfilter_avail(id);
  H5Eclear2(H5E_DEFAULT);
  if (avail <= 0) return false;
  unsigned config = 0;
  if (H5Zget_filter_info(id, &config) < 0) return false;
  return (config & H5Z_FILTER_CONFIG_DECODE_ENABLED) != 0;
}

namespace {

// The LZF filter format of h5py (lzf_filter.c, filter version 4): cd_values =
// {4, LZF library version 0x0105, chunk size in bytes}; each chunk is one raw lzf
// stream. Compression that fails to shrink a chunk returns 0, and since the filter
// is optional HDF5 then stores that chunk uncompressed (flagged in its filter mask).
constexpr unsigned kLzfFilterVersion = 4;
constexpr unsigned kLzfLibVersion = 0x0105;

herr_t lzf_set_local(hid_t dcpl, hid_t type, hid_t) {
  unsigned flags = 0;
  size_t nelements = 8;
  unsigned values[8] = {};
  if (H5Pget_filter_by_id2(dcpl, kLzfFilter, &flags, &nelements, values, 0, nullptr, nullptr) < 0) return -1;
  if (nelements < 3) nelements = 3;
  values[0] = kLzfFilterVersion;
  values[1] = kLzfLibVersion;
  hsize_t dims[32];
  int ndims = H5Pget_chunk(dcpl, 32, dims);
  if (ndims < 0) return -1;
  size_t bytes = H5Tget_size(type);
  for (int i = 0; i < ndims; ++i) bytes *= dims[i];
  values[2] = static_cast<unsigned>(bytes);
  return H5Pmodify_filter(dcpl, kLzfFilter, flags, nelements, values) < 0 ? -1 : 1;
}

size_t lzf_filter_fn(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t* buf_size,
                     void** buf) {
  if (!(flags & H5Z_FLAG_REVERSE)) {
    size_t out_size = *buf_size;
    void* out = std::malloc(out_size);
    if (!out) return 0;
    unsigned status = lzf_compress(*buf, static_cast<unsigned>(nbytes), out, static_cast<unsigned>(out_size));
    if (status == 0) {
      std::free(out);
      return 0;  // did not shrink: the optional filter is skipped for this chunk
    }
    std::free(*buf);
    *buf = out;
    *buf_size = out_size;
    return status;
  }
  size_t out_size = (cd_nelmts >= 3 && cd_values[2] != 0) ? cd_values[2] : *buf_size;
  for (;;) {
    void* out = std::malloc(out_size);
    if (!out) return 0;
    unsigned status = lzf_decompress(*buf, static_cast<unsigned>(nbytes), out, static_cast<unsigned>(out_size));
    if (status != 0) {
      std::free(*buf);
      *buf = out;
      *buf_size = out_size;
      return status;
    }
    std::free(out);
    if (errno != E2BIG) return 0;
    out_size += *buf_size;
  }
}

}  // namespace

bool ensure_lzf_for_writing() {
  if (filter_available(kLzfFilter)) return true;
  Guard guard;
  static const H5Z_class2_t lzf_class = {
      H5Z_CLASS_T_VERS, kLzfFilter, 1, 1, "lzf", nullptr, lzf_set_local, lzf_filter_fn,
  };
  if (H5Zregister(&lzf_class) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return true;
}

// --- attributes ------------------------------------------------------------------------------

namespace {

YAML::Node read_one_attribute(hid_t attr) {
  Id type = type_id(H5Aget_type(attr));
  Id space = space_id(H5Aget_space(attr));
  int rank = H5Sget_simple_extent_ndims(space.get());
  hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (rank > 1 || n < 0) return {};
  bool scalar = rank == 0;
  auto as_node = [&](auto values) {
    if (scalar && !values.empty()) return YAML::Node(values[0]);
    YAML::Node seq(YAML::NodeType::Sequence);
    for (const auto& v : values) seq.push_back(v);
    return seq;
  };
  H5T_class_t cls = H5Tget_class(type.get());
  if (cls == H5T_STRING) {
    std::vector<std::string> values;
    if (H5Tis_variable_str(type.get()) > 0) {
      Id mem = type_id(H5Tcopy(H5T_C_S1));
      H5Tset_size(mem.get(), H5T_VARIABLE);
      H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
      std::vector<char*> raw(static_cast<size_t>(n), nullptr);
      if (H5Aread(attr, mem.get(), raw.data()) < 0) return {};
      for (char* s : raw) values.emplace_back(s ? s : "");
      H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, raw.data());
    } else {
      size_t size = H5Tget_size(type.get());
      std::vector<char> raw(size * static_cast<size_t>(n) + 1, '\0');
      if (H5Aread(attr, type.get(), raw.data()) < 0) return {};
      for (hssize_t i = 0; i < n; ++i) {
        std::string s(raw.data() + i * size, size);
        s.erase(s.find_last_not_of('\0') + 1);
        values.push_back(s);
      }
    }
    return as_node(values);
  }
  if (cls == H5T_INTEGER) {
    std::vector<int64_t> values(static_cast<size_t>(n));
    if (H5Aread(attr, H5T_NATIVE_INT64, values.data()) < 0) return {};
    return as_node(values);
  }
  if (cls == H5T_FLOAT) {
    std::vector<double> values(static_cast<size_t>(n));
    if (H5Aread(attr, H5T_NATIVE_DOUBLE, values.data()) < 0) return {};
    return as_node(values);
  }
  if (cls == H5T_ENUM && classify(type.get()) == kBool) {
    std::vector<int8_t> raw(static_cast<size_t>(n));
    if (H5Aread(attr, type.get(), raw.data()) < 0) return {};
    std::vector<bool> values(raw.begin(), raw.end());
    if (scalar) return YAML::Node(static_cast<bool>(raw[0]));
    YAML::Node seq(YAML::NodeType::Sequence);
    for (bool v : values) seq.push_back(v);
    return seq;
  }
  return {};
}

void delete_attr_if_exists(hid_t obj, const std::string& name) {
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
}

void write_attr_raw(hid_t obj, const std::string& name, hid_t type, hid_t space, const void* data) {
  delete_attr_if_exists(obj, name);
  Id attr(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), type, data) < 0) fail(fmt::format("Cannot write attribute '{}'", name));
}

Id vlen_utf8() {
  Id t = type_id(H5Tcopy(H5T_C_S1));
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

}  // namespace

YAML::Node read_attributes(hid_t obj) {
  Guard guard;
  YAML::Node out(YAML::NodeType::Map);
  H5O_info_t info;
  if (H5Oget_info2(obj, &info, H5O_INFO_NUM_ATTRS) < 0) fail("Cannot list attributes");
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    Id attr(H5Aopen_by_idx(obj, ".", H5_INDEX_CRT_ORDER, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.valid()) {  // no creation-order index: fall back to name order
      H5Eclear2(H5E_DEFAULT);
      attr = Id(H5Aopen_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    }
    if (!attr.valid()) continue;
    ssize_t len = H5Aget_name(attr.get(), 0, nullptr);
    std::string name(static_cast<size_t>(len), '\0');
    H5Aget_name(attr.get(), name.size() + 1, name.data());
    YAML::Node value = read_one_attribute(attr.get());
    H5Eclear2(H5E_DEFAULT);
    if (value.IsDefined() && !value.IsNull()) out[name] = value;
  }
  return out;
}

void write_attr(hid_t obj, const std::string& name, const std::string& value) {
  Guard guard;
  Id type = vlen_utf8();
  Id space = space_id(H5Screate(H5S_SCALAR));
  const char* ptr = value.c_str();
  write_attr_raw(obj, name, type.get(), space.get(), &ptr);
}

void write_attr(hid_t obj, const std::string& name, int64_t value) {
  Guard guard;
  Id space = space_id(H5Screate(H5S_SCALAR));
  write_attr_raw(obj, name, H5T_STD_I64LE, space.get(), &value);
}

void write_attr(hid_t obj, const std::string& name, double value) {
  Guard guard;
  Id space = space_id(H5Screate(H5S_SCALAR));
  write_attr_raw(obj, name, H5T_IEEE_F64LE, space.get(), &value);
}

void write_attr(hid_t obj, const std::string& name, const std::vector<std::string>& values) {
  Guard guard;
  Id type = vlen_utf8();
  hsize_t n = values.size();
  Id space = space_id(H5Screate_simple(1, &n, nullptr));
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  write_attr_raw(obj, name, type.get(), space.get(), ptrs.data());
}

// --- files ---------------------------------------------------------------------------------------

File File::open_read(const fs::path& path) {
  Guard guard;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(fmt::format("File not found: {}", path.string()));
  if (fs::is_directory(path, ec)) throw InputError(fmt::format("Expected an HDF5 file but found a directory: {}", path.string()));
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
  if (info.chunked && fill != H5D_FILL_VALUE_USER_DEFINED && fixed_size && !shape_.empty() && shape_.size() <= 2 && info.filters.size() <= 1) {
    d->chunk_rows = info.chunk[0];
    d->chunk_cols = shape_.size() > 1 ? info.chunk[1] : 1;
    if (info.filters.empty()) {
      d->supported = true;
    } else if (info.filters[0] == kLzfFilter || info.filters[0] == H5Z_FILTER_DEFLATE) {
      d->filter = info.filters[0];
      d->supported = true;
    }
  }
  direct_ = std::move(d);
  return direct_->supported;
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
      haddr_t addr = HADDR_UNDEF;
      unsigned mask = 0;
      if (H5Dget_chunk_info_by_coord(id(), offset, &mask, &addr, &nbytes) < 0 || addr == HADDR_UNDEF || nbytes == 0) {
        H5Eclear2(H5E_DEFAULT);
        chunk.missing = true;
      } else {
        chunk.bytes.resize(nbytes);
        if (H5Dread_chunk(id(), H5P_DEFAULT, offset, &chunk.filter_mask, chunk.bytes.data()) < 0)
          fail(fmt::format("Failed to read the chunk at row {} of {}", r, where()));
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
    if (chunk.missing) {
      scratch.assign(chunk_bytes, 0);
      data = scratch.data();
    } else if (!filtered) {
      if (chunk.bytes.size() < chunk_bytes)
        throw InputError(fmt::format("Corrupt chunk at row {} of {}: {} bytes, expected {}", chunk.row, where(),
                                     chunk.bytes.size(), chunk_bytes));
      data = chunk.bytes.data();
    } else {
      scratch.resize(chunk_bytes);
      bool ok = false;
      if (d.filter == kLzfFilter) {
        ok = lzf_decompress(chunk.bytes.data(), static_cast<unsigned>(chunk.bytes.size()), scratch.data(),
                            static_cast<unsigned>(chunk_bytes)) == chunk_bytes;
      } else {
        uLongf len = static_cast<uLongf>(chunk_bytes);
        ok = uncompress(scratch.data(), &len, chunk.bytes.data(), static_cast<uLong>(chunk.bytes.size())) == Z_OK &&
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
  int rank = static_cast<int>(shape_.size());
  hsize_t off[2] = {static_cast<hsize_t>(start), 0};
  hsize_t cnt[2] = {static_cast<hsize_t>(count), rank > 1 ? shape_[1] : 1};
  H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, off, nullptr, cnt, nullptr);
  Id mspace = space_id(H5Screate_simple(rank, cnt, nullptr));
  if (H5Dwrite(id(), type.get(), mspace.get(), fspace.get(), H5P_DEFAULT, in) < 0)
    fail(fmt::format("Failed to write rows {}..{} of {}", start, start + count, where()));
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
  bool chunked = spec.compression != Compression::None || !spec.chunk.empty();
  if (chunked) {
    std::vector<hsize_t> chunk = spec.chunk.empty() ? guess_chunk(spec.shape, type_size) : spec.chunk;
    for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = std::max<hsize_t>(1, std::min(chunk[i], std::max<hsize_t>(1, spec.shape[i])));
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
  Id space = space_id(H5Screate_simple(static_cast<int>(spec.shape.size()), spec.shape.data(), nullptr));
  Id ds(H5Dcreate2(file.id(), name.c_str(), type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) fail(fmt::format("Cannot create dataset '{}' in {}", name, file.shown().string()));
  return Dataset(std::move(ds), name, file.shown());  // the name for messages only
}

// --- float16 --------------------------------------------------------------------------------------

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400u));
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent: correct
  return static_cast<uint16_t>(half);
}

}  // namespace salt::data::h5
