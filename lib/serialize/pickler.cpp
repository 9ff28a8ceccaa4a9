#include "serialize/pickler.h"

#include <ATen/ATen.h>

#include <cstring>
#include <stdexcept>

namespace salt::serialize {
namespace {

class Pickler {
 public:
  explicit Pickler(const PersistentId& persistent_id) : persistent_id_(persistent_id) {}

  std::string run(const PyValue& v) {
    out_ += "\x80\x02";  // PROTO 2, torch.save's default
    write(v);
    out_ += '.';
    return std::move(out_);
  }

 private:
  template <typename T>
  void little(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void op(char c) { out_ += c; }
  void global(const char* module, const std::string& name) {
    op('c');
    out_ += module;
    out_ += '\n';
    out_ += name;
    out_ += '\n';
  }

  void write_int(int64_t i) {
    if (i >= 0 && i < 256) {
      op('K');
      out_ += static_cast<char>(i);
    } else if (i >= 0 && i < 65536) {
      op('M');
      little(static_cast<uint16_t>(i));
    } else if (i >= INT32_MIN && i <= INT32_MAX) {
      op('J');
      little(static_cast<int32_t>(i));
    } else {
      op('\x8a');  // LONG1: 8 little-endian two's-complement bytes
      out_ += '\x08';
      little(i);
    }
  }
  void write_float(double d) {
    op('G');
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    for (int shift = 56; shift >= 0; shift -= 8) out_ += static_cast<char>((bits >> shift) & 0xFF);
  }
  void write_str(const std::string& s) {
    op('X');
    little(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void write_tuple(const PyValue::Items& items) {
    if (items.empty()) return op(')');
    op('(');
    for (const auto& v : items) write(v);
    op('t');
  }
  // Python's batching: SETITEMS / APPENDS per 1000 items.
  void write_entries(const PyValue::Entries& entries) {
    for (size_t start = 0; start < entries.size(); start += 1000) {
      op('(');
      for (size_t i = start; i < std::min(entries.size(), start + 1000); ++i) {
        write(entries[i].first);
        write(entries[i].second);
      }
      op('u');
    }
  }
  void write_list(const PyValue::Items& items) {
    op(']');
    for (size_t start = 0; start < items.size(); start += 1000) {
      op('(');
      for (size_t i = start; i < std::min(items.size(), start + 1000); ++i) write(items[i]);
      op('e');
    }
  }
  void write_dict(const PyValue& d) {
    if (d.type_name() == "collections.OrderedDict") {
      global("collections", "OrderedDict");
      op(')');
      op('R');
    } else if (d.type_name() == "dict") {
      op('}');
    } else {
      throw std::invalid_argument("a " + d.type_name() + " has no weights-only form");
    }
    write_entries(d.entries());
  }
  // torch._utils._rebuild_tensor_v2(storage, 0, size, stride, False, OrderedDict())
  void write_tensor(const at::Tensor& t) {
    auto data = t.detach().to(at::kCPU).contiguous();
    global("torch._utils", "_rebuild_tensor_v2");
    op('(');
    write(persistent_id_(data));
    op('Q');
    write_int(0);
    PyValue::Items size, stride;
    for (auto s : data.sizes()) size.push_back(PyValue::integer(s));
    for (auto s : data.strides()) stride.push_back(PyValue::integer(s));
    write_tuple(size);
    write_tuple(stride);
    op('\x89');
    global("collections", "OrderedDict");
    op(')');
    op('R');
    op('t');
    op('R');
  }

  void write(const PyValue& v) {
    switch (v.kind()) {
      case PyValue::Kind::kNone: return op('N');
      case PyValue::Kind::kBool: return op(v.as_bool() ? '\x88' : '\x89');
      case PyValue::Kind::kInt: return write_int(v.as_int());
      case PyValue::Kind::kFloat: return write_float(v.as_number());
      case PyValue::Kind::kStr: return write_str(v.as_str());
      case PyValue::Kind::kTuple: return write_tuple(v.items());
      case PyValue::Kind::kList: return write_list(v.items());
      case PyValue::Kind::kDict: return write_dict(v);
      case PyValue::Kind::kTensor: return write_tensor(v.as_tensor());
      case PyValue::Kind::kGlobal: {
        const auto name = v.type_name();
        const auto dot = name.rfind('.');
        return global(name.substr(0, dot).c_str(), name.substr(dot + 1));
      }
      default: throw std::invalid_argument(std::string("a ") + v.type_name() + " has no weights-only form");
    }
  }

  const PersistentId& persistent_id_;
  std::string out_;
};

}  // namespace

std::string pickle(const PyValue& value, const PersistentId& persistent_id) {
  return Pickler(persistent_id).run(value);
}

}  // namespace salt::serialize
