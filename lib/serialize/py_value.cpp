#include "serialize/py_value.h"

#include <stdexcept>

namespace salt::serialize {

const char* kind_name(PyValue::Kind kind) {
  switch (kind) {
    case PyValue::Kind::kNone: return "None";
    case PyValue::Kind::kBool: return "bool";
    case PyValue::Kind::kInt: return "int";
    case PyValue::Kind::kBigInt: return "int (beyond 64 bits)";
    case PyValue::Kind::kFloat: return "float";
    case PyValue::Kind::kStr: return "str";
    case PyValue::Kind::kBytes: return "bytes";
    case PyValue::Kind::kTuple: return "tuple";
    case PyValue::Kind::kList: return "list";
    case PyValue::Kind::kSet: return "set";
    case PyValue::Kind::kDict: return "dict";
    case PyValue::Kind::kTensor: return "tensor";
    case PyValue::Kind::kGlobal: return "global";
    case PyValue::Kind::kObject: return "object";
  }
  return "?";
}

namespace {
[[noreturn]] void wrong(const PyValue& v, const char* expected) {
  throw std::invalid_argument(std::string("expected ") + expected + ", found " + v.type_name());
}
}  // namespace

PyValue PyValue::boolean(bool b) {
  PyValue v(Kind::kBool);
  v.bool_ = b;
  return v;
}

PyValue PyValue::integer(int64_t i) {
  PyValue v(Kind::kInt);
  v.int_ = i;
  return v;
}

PyValue PyValue::big_integer(std::string bytes) {
  PyValue v(Kind::kBigInt);
  v.text_ = std::move(bytes);
  return v;
}

PyValue PyValue::real(double f) {
  PyValue v(Kind::kFloat);
  v.float_ = f;
  return v;
}

PyValue PyValue::str(std::string s) {
  PyValue v(Kind::kStr);
  v.text_ = std::move(s);
  return v;
}

PyValue PyValue::bytes(std::string b) {
  PyValue v(Kind::kBytes);
  v.text_ = std::move(b);
  return v;
}

namespace {
PyValue with_items(PyValue v, PyValue::Items items) {
  v.items() = std::move(items);
  return v;
}
}  // namespace

PyValue PyValue::tuple(Items items) { return with_items(PyValue(Kind::kTuple), std::move(items)); }
PyValue PyValue::list(Items items) { return with_items(PyValue(Kind::kList), std::move(items)); }
PyValue PyValue::set(Items items) { return with_items(PyValue(Kind::kSet), std::move(items)); }

PyValue PyValue::dict(Entries entries, std::string cls) {
  PyValue v(Kind::kDict);
  v.box().entries = std::move(entries);
  v.box().cls = std::move(cls);
  return v;
}

PyValue PyValue::tensor(at::Tensor t) {
  PyValue v(Kind::kTensor);
  v.tensor_ = std::move(t);
  return v;
}

PyValue PyValue::global(std::string module, std::string name) {
  PyValue v(Kind::kGlobal);
  v.text_ = std::move(module);
  v.name_ = std::move(name);
  return v;
}

PyValue PyValue::object(const PyValue& cls, Items args) {
  PyValue v(Kind::kObject);
  v.box().items = std::move(args);
  v.box().cls = cls.kind() == Kind::kGlobal ? cls.text_ + "." + cls.name_ : cls.type_name();
  return v;
}

PyValue::Box& PyValue::box() const {
  if (!box_) const_cast<PyValue*>(this)->box_ = std::make_shared<Box>();
  return *box_;
}

bool PyValue::is_global(std::string_view module, std::string_view name) const {
  return kind_ == Kind::kGlobal && text_ == module && name_ == name;
}

bool PyValue::is_mapping() const {
  return kind_ == Kind::kDict || (kind_ == Kind::kObject && !box().entries.empty());
}

bool PyValue::as_bool() const {
  if (kind_ != Kind::kBool) wrong(*this, "a bool");
  return bool_;
}

int64_t PyValue::as_int() const {
  if (kind_ == Kind::kBool) return bool_ ? 1 : 0;
  if (kind_ != Kind::kInt) wrong(*this, "an int");
  return int_;
}

double PyValue::as_number() const {
  if (kind_ == Kind::kFloat) return float_;
  if (kind_ == Kind::kInt || kind_ == Kind::kBool) return static_cast<double>(as_int());
  wrong(*this, "a number");
}

const std::string& PyValue::as_str() const {
  if (kind_ != Kind::kStr) wrong(*this, "a str");
  return text_;
}

const std::string& PyValue::as_bytes() const {
  if (kind_ != Kind::kBytes) wrong(*this, "bytes");
  return text_;
}

const at::Tensor& PyValue::as_tensor() const {
  if (kind_ != Kind::kTensor) wrong(*this, "a tensor");
  return tensor_;
}

PyValue::Items& PyValue::items() const {
  if (kind_ != Kind::kTuple && kind_ != Kind::kList && kind_ != Kind::kSet && kind_ != Kind::kObject)
    wrong(*this, "a tuple or list");
  return box().items;
}

PyValue::Entries& PyValue::entries() const {
  if (kind_ != Kind::kDict && kind_ != Kind::kObject) wrong(*this, "a dict");
  return box().entries;
}

PyValue& PyValue::state() const {
  if (kind_ != Kind::kObject && kind_ != Kind::kDict) wrong(*this, "an object");
  if (!box().state) box().state = std::make_shared<PyValue>();
  return *box().state;
}

PyValue::Items& PyValue::list_items() const {
  if (kind_ != Kind::kObject) wrong(*this, "an object");
  return box().list_items;
}

const PyValue* PyValue::find(std::string_view key) const {
  if (!is_mapping()) wrong(*this, "a dict");
  const auto& e = box().entries;  // the last of equal keys wins, as in Python's dict
  for (auto it = e.rbegin(); it != e.rend(); ++it)
    if (it->first.kind_ == Kind::kStr && it->first.text_ == key) return &it->second;
  return nullptr;
}

const PyValue* PyValue::find(int64_t key) const {
  if (!is_mapping()) wrong(*this, "a dict");
  const auto& e = box().entries;
  for (auto it = e.rbegin(); it != e.rend(); ++it)
    if (it->first.kind_ == Kind::kInt && it->first.int_ == key) return &it->second;
  return nullptr;
}

std::string PyValue::type_name() const {
  switch (kind_) {
    case Kind::kGlobal: return text_ + "." + name_;
    case Kind::kObject: return box().cls + " object";
    case Kind::kDict: return box().cls.empty() ? "dict" : box().cls;
    default: return kind_name(kind_);
  }
}

void PyValue::set_item(PyValue key, PyValue value) const {
  if (kind_ != Kind::kDict && kind_ != Kind::kObject) wrong(*this, "a dict");
  box().entries.emplace_back(std::move(key), std::move(value));
}

void PyValue::append(PyValue value) const {
  if (kind_ == Kind::kList || kind_ == Kind::kSet) {
    box().items.push_back(std::move(value));
    return;
  }
  if (kind_ != Kind::kObject) wrong(*this, "a list");
  box().list_items.push_back(std::move(value));
}

}  // namespace salt::serialize
