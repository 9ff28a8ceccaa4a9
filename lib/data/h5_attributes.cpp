// h5_file.h implementation, part 4: reading an object's attributes as YAML and
// writing string, integer, float and string-list attributes (h5py's conventions).
#include "data/h5_file.h"

#include <fmt/format.h>

#include "data/h5_internal.h"

namespace salt::data::h5 {

using detail::classify;
using detail::fail;
using detail::space_id;
using detail::type_id;

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

// Copies every attribute of `from` to `to` byte for byte, in its own type.
void copy_attributes(hid_t from, hid_t to) {
  auto copy_one = [](hid_t loc, const char* name, const H5A_info_t*, void* target) -> herr_t {
    Id attr(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose);
    if (!attr.valid()) return -1;
    Id type(H5Aget_type(attr.get()), H5Tclose), space(H5Aget_space(attr.get()), H5Sclose);
    const auto points = static_cast<size_t>(std::max<hssize_t>(1, H5Sget_simple_extent_npoints(space.get())));
    std::vector<uint8_t> buf(points * H5Tget_size(type.get()));
    if (H5Aread(attr.get(), type.get(), buf.data()) < 0) return -1;
    Id out(H5Acreate2(*static_cast<hid_t*>(target), name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    const herr_t written = out.valid() ? H5Awrite(out.get(), type.get(), buf.data()) : -1;
    if (H5Tdetect_class(type.get(), H5T_VLEN) > 0 || H5Tis_variable_str(type.get()) > 0)
      H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, buf.data());
    return written < 0 ? -1 : 0;
  };
  if (H5Aiterate2(from, H5_INDEX_NAME, H5_ITER_INC, nullptr, copy_one, &to) < 0)
    fail("cannot copy attributes");
}

}  // namespace salt::data::h5
