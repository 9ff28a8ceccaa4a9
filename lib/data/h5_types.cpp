// h5_file.h implementation, part 2: element types (FieldType, make_type,
// CompoundLayout, describe_compound, CompoundBuilder), detail::classify, and the
// float16 <-> float32 conversions.
#include "data/h5_file.h"

#include <fmt/format.h>

#include <cstring>

#include "core/errors.h"
#include "data/h5_internal.h"

namespace salt::data::h5 {

using detail::classify;
using detail::type_id;

namespace {

std::string member_name(hid_t type, unsigned i) {
  char* raw = H5Tget_member_name(type, i);
  std::string name = raw ? raw : "";
  if (raw) H5free_memory(raw);
  return name;
}

}  // namespace

namespace detail {

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

}  // namespace detail

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

// HDF5 refuses a second member of the same name without a word (H5Tinsert fails),
// and the record would keep the first one's bytes unwritten.
void CompoundBuilder::check_new(const std::string& name) const {
  for (const auto& m : members_)
    if (m.name == name) throw InputError("an HDF5 record would hold two fields named '" + name + "'");
}

CompoundBuilder& CompoundBuilder::add(const std::string& name, FieldType t) {
  check_new(name);
  members_.push_back({name, t, -1, static_cast<size_t>(t.size)});
  return *this;
}

CompoundBuilder& CompoundBuilder::add(const std::string& name, hid_t type) {
  check_new(name);
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
