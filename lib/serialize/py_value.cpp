#include "serialize/py_value.h"

#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>

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
  v.box().cls = std::move(cls);
  for (auto& [key, value] : entries) v.set_item(std::move(key), std::move(value));
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

const PyValue::Entries& PyValue::entries() const {
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

namespace {
const PyValue* find_indexed(const std::unordered_map<std::string, size_t>& index, const PyValue::Entries& entries,
                            const std::string& key) {
  const auto it = index.find(key);
  return it == index.end() ? nullptr : &entries[it->second].second;
}
}  // namespace

const PyValue* PyValue::find(std::string_view key) const {
  if (!is_mapping()) wrong(*this, "a dict");
  return find_indexed(box().index, box().entries, "s" + std::string(key));
}

const PyValue* PyValue::find(int64_t key) const {
  if (!is_mapping()) wrong(*this, "a dict");
  return find_indexed(box().index, box().entries, "i" + std::to_string(key));
}

std::optional<std::string> PyValue::dict_key(const PyValue& key) {
  switch (key.kind_) {
    case Kind::kStr: return "s" + key.text_;
    case Kind::kInt: return "i" + std::to_string(key.int_);
    case Kind::kBool: return std::string(key.bool_ ? "i1" : "i0");  // Python: True == 1
    case Kind::kNone: return std::string("n");
    case Kind::kFloat:  // Python: 1.0 == 1
      if (key.float_ == std::trunc(key.float_) && std::abs(key.float_) < 9.2e18)
        return "i" + std::to_string(static_cast<int64_t>(key.float_));
      return std::nullopt;
    default: return std::nullopt;  // tuples, bytes, ...: kept in order, not merged
  }
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
  auto& b = box();
  if (auto k = dict_key(key)) {
    const auto [it, added] = b.index.emplace(std::move(*k), b.entries.size());
    if (!added) {
      b.entries[it->second].second = std::move(value);
      return;
    }
  }
  b.entries.emplace_back(std::move(key), std::move(value));
}

void PyValue::erase_item(std::string_view key) const {
  if (kind_ != Kind::kDict && kind_ != Kind::kObject) wrong(*this, "a dict");
  auto& b = box();
  const auto it = b.index.find("s" + std::string(key));
  if (it == b.index.end()) return;
  b.entries.erase(b.entries.begin() + static_cast<std::ptrdiff_t>(it->second));
  b.index.clear();  // the places after it moved
  for (size_t i = 0; i < b.entries.size(); ++i)
    if (auto k = dict_key(b.entries[i].first)) b.index.emplace(std::move(*k), i);
}

void PyValue::append(PyValue value) const {
  if (kind_ == Kind::kList || kind_ == Kind::kSet) {
    box().items.push_back(std::move(value));
    return;
  }
  if (kind_ != Kind::kObject) wrong(*this, "a list");
  box().list_items.push_back(std::move(value));
}

// --- nesting: the walks that must not recurse ---

template <typename Visit>
void PyValue::Box::for_each_child(Visit&& visit) const {
  // The label is made only for a child that is a container (a state_dict's
  // hundreds of tensors need none).
  auto fixed = [](const char* text) { return [text] { return std::string(text); }; };
  for (size_t i = 0; i < items.size(); ++i) visit(items[i], [i] { return std::to_string(i); });
  for (const auto& entry : entries) {
    const auto& key = entry.first;
    visit(key, fixed("<key>"));
    visit(entry.second, [&key] {
      return key.kind_ == Kind::kStr ? key.text_ : key.kind_ == Kind::kInt ? std::to_string(key.int_) : "<value>";
    });
  }
  for (size_t i = 0; i < list_items.size(); ++i) visit(list_items[i], [i] { return std::to_string(i); });
  if (state) visit(*state, fixed("<state>"));
}

PyValue::Box::~Box() {
  // Take the children's containers before this one goes, then theirs before each
  // of them goes: every destructor that runs below finds its children taken.
  std::vector<std::shared_ptr<Box>> orphans;
  auto adopt = [&](Box& box) {
    auto take = [&](PyValue& v) {
      if (v.box_) orphans.push_back(std::move(v.box_));
    };
    for (auto& v : box.items) take(v);
    for (auto& [key, value] : box.entries) take(key), take(value);
    for (auto& v : box.list_items) take(v);
    if (box.state && box.state.use_count() == 1) take(*box.state);
  };
  adopt(*this);
  while (!orphans.empty()) {
    auto box = std::move(orphans.back());
    orphans.pop_back();
    if (box.use_count() == 1) adopt(*box);  // the last owner: its children go with it
  }
}

namespace {

// A path for an error message: the first labels, then an ellipsis (a fault may lie
// 100,000 levels down, and a label is user text).
std::string render_path(const std::vector<std::string>& labels) {
  constexpr size_t kMaxChars = 120, kMaxLabel = 40;
  std::string out;
  for (const auto& label : labels) {
    const auto part = label.size() > kMaxLabel ? label.substr(0, kMaxLabel) + "…" : label;
    if (out.size() + part.size() > kMaxChars) return out + ".…";
    out += (out.empty() ? "" : ".") + part;
  }
  return out.empty() ? "the top level" : out;
}

}  // namespace

std::optional<std::string> PyValue::nesting_fault(int max_depth) const {
  if (!box_) return std::nullopt;
  // Depth-first, one frame per container on the path; a container met again on the
  // path is a cycle, one finished before is known by the depth below it (its height).
  struct Frame {
    const Box* box;
    bool object;  // an opaque object's box (a class instance, a bound method)
    std::vector<std::pair<const PyValue*, std::string>> children;
    size_t next = 0;
    int height = 0;
  };
  std::unordered_map<const Box*, size_t> on_path;  // box -> its frame
  std::unordered_map<const Box*, int> height_of;  // finished containers
  std::vector<Frame> path;
  std::vector<std::string> labels;
  auto enter = [&](const PyValue& value) {
    Frame f{value.box_.get(), value.kind_ == Kind::kObject, {}, 0, 0};
    f.box->for_each_child([&](const PyValue& child, auto&& label) {
      if (child.box_) f.children.emplace_back(&child, label());
    });
    on_path.emplace(f.box, path.size());
    path.push_back(std::move(f));
  };
  // A cycle through an opaque object is Python's own (a scheduler's bound method
  // refers back to the scheduler, in every salt checkpoint's lr_schedulers); salt-cpp
  // never walks into objects, so only a cycle of plain data (dicts, lists, tuples,
  // sets) is refused.
  auto through_an_object = [&](size_t from, const PyValue& child) {
    if (child.kind_ == Kind::kObject) return true;
    for (size_t i = from; i < path.size(); ++i)
      if (path[i].object) return true;
    return false;
  };
  auto too_deep = [&] { return render_path(labels) + ": nested deeper than " + std::to_string(max_depth) + " levels"; };
  enter(*this);
  while (!path.empty()) {
    auto& f = path.back();
    if (f.next == f.children.size()) {  // finished: its parent learns its height
      const int h = f.height;
      height_of[f.box] = h;
      on_path.erase(f.box);
      path.pop_back();
      if (!labels.empty()) labels.pop_back();
      if (!path.empty()) path.back().height = std::max(path.back().height, h + 1);
      continue;
    }
    const auto& [child, label] = f.children[f.next++];
    const Box* box = child->box_.get();
    labels.push_back(label);
    if (auto cycle = on_path.find(box); cycle != on_path.end()) {
      if (!through_an_object(cycle->second, *child))
        return render_path(labels) + ": contains itself (a container that holds itself)";
      labels.pop_back();
      continue;
    }
    const int depth = static_cast<int>(path.size());  // the child's depth
    if (auto known = height_of.find(box); known != height_of.end()) {
      if (depth + known->second > max_depth) return too_deep();
      f.height = std::max(f.height, known->second + 1);
      labels.pop_back();
      continue;
    }
    if (depth > max_depth) return too_deep();
    enter(*child);
  }
  return std::nullopt;
}

void PyValue::dismantle() const {
  if (!box_) return;
  // Hold every reachable container first, so that emptying one destroys none.
  std::vector<std::shared_ptr<Box>> reachable{box_};
  std::unordered_set<const Box*> seen{box_.get()};
  for (size_t i = 0; i < reachable.size(); ++i)
    reachable[i]->for_each_child([&](const PyValue& child, auto&&) {
      if (child.box_ && seen.insert(child.box_.get()).second) reachable.push_back(child.box_);
    });
  for (const auto& box : reachable) {
    box->items.clear();
    box->entries.clear();
    box->index.clear();
    box->list_items.clear();
    box->state.reset();
  }
}

}  // namespace salt::serialize
