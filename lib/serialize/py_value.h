// A Python value as a pickle holds it: what Python's torch.save (and
// Lightning's checkpoints through it) writes, read without running any of its
// code. Objects of classes salt-cpp does not know stay opaque values (their
// class name, the arguments they were built from, their dict items and state)
// and are never executed. Containers are shared like Python's, so a pickle that
// refers to one list twice (its memo) sees one list.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace salt::serialize {

class PyValue {
 public:
  enum class Kind { kNone, kBool, kInt, kBigInt, kFloat, kStr, kBytes, kTuple, kList, kSet, kDict, kTensor, kGlobal, kObject };
  using Items = std::vector<PyValue>;
  using Entries = std::vector<std::pair<PyValue, PyValue>>;

  PyValue() = default;  // None
  static PyValue boolean(bool b);
  static PyValue integer(int64_t i);
  static PyValue big_integer(std::string little_endian_twos_complement);  // beyond int64
  static PyValue real(double f);
  static PyValue str(std::string s);
  static PyValue bytes(std::string b);
  static PyValue tuple(Items items);
  static PyValue list(Items items = {});
  static PyValue set(Items items);
  // A dict; `cls` names a dict subclass ("collections.OrderedDict"), empty for
  // dict.
  static PyValue dict(Entries entries = {}, std::string cls = "");
  static PyValue tensor(at::Tensor t);
  static PyValue global(std::string module, std::string name);
  // An instance of a class salt-cpp does not rebuild: cls (a global), its
  // constructor's arguments; dict items, list items and state are added later.
  static PyValue object(const PyValue &cls, Items args);

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_str() const { return kind_ == Kind::kStr; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_global(std::string_view module, std::string_view name) const;
  // dict, or an object of a dict subclass (Lightning's AttributeDict): has
  // entries.
  bool is_mapping() const;
  bool is_sequence() const { return kind_ == Kind::kTuple || kind_ == Kind::kList; }

  // Typed reads; the wrong kind throws std::invalid_argument naming both
  // (callers add the file and the key).
  bool as_bool() const;
  int64_t as_int() const;
  double as_number() const;  // int, float or bool
  const std::string &as_str() const;
  const std::string &as_bytes() const;
  const at::Tensor &as_tensor() const;
  // tuple, list, set: the items; object: its constructor's arguments.
  Items &items() const;
  // dict or dict-like object: the entries in insertion order (changed through
  // set_item and erase_item only, which keep the keys' index).
  const Entries &entries() const;
  // Objects: the state given by BUILD (None if none) and list items (APPEND).
  PyValue &state() const;
  Items &list_items() const;

  // Mapping lookups (nullptr if absent).
  const PyValue *find(std::string_view key) const;
  const PyValue *find(int64_t key) const;
  // global: "module.name"; object: its class; dict: "dict" or its subclass.
  std::string type_name() const;

  // Where this value nests containers deeper than `max_depth` levels (itself at
  // depth 0) or holds itself through plain data only (a dict, list, tuple or set
  // cycle, which pickle's memo allows): the path to the fault and what it is
  // ("a.b.0: nested deeper than 256 levels"), nothing when neither. A cycle through
  // an opaque object is Python's own (a bound method of its object) and passes:
  // nothing in salt-cpp walks into objects. Walks without recursion, each shared
  // container once.
  std::optional<std::string> nesting_fault(int max_depth) const;
  // Empties every container reachable from this value, so that a cyclic value
  // is freed (shared_ptr cycles never are) and nothing is left to destroy
  // recursively.
  void dismantle() const;

  // Mutators for the unpickler. set_item follows Python's dict: a key given
  // again keeps its place and takes the new value (the last of equal keys
  // wins).
  void set_item(PyValue key, PyValue value) const;
  void set_item(const std::string &key, PyValue value) const { set_item(str(key), std::move(value)); }
  void erase_item(std::string_view key) const;  // a str key, if present
  void append(PyValue value) const;

 private:
  struct Box {
    Items items;
    Entries entries;
    std::unordered_map<std::string, size_t> index;  // entries' place by dict_key(); str, int and bool keys
    Items list_items;
    std::shared_ptr<PyValue> state;
    std::string cls;  // dict subclass / object class, "module.name"
    // Frees the containers below without recursion: a pickle may nest a million
    // lists, each one a frame of a recursive destructor.
    ~Box();
    // The containers directly below (items, entries' keys and values, list
    // items, the state), each with a function giving its label in a path ("0",
    // "key").
    template <typename Visit>
    void for_each_child(Visit &&visit) const;
  };
  // How a key is found again: equal Python keys give equal strings (1 == True).
  static std::optional<std::string> dict_key(const PyValue &key);
  explicit PyValue(Kind kind) : kind_(kind) {}
  Box &box() const;

  Kind kind_ = Kind::kNone;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string text_;  // str, bytes, big int bytes, global module
  std::string name_;  // global name
  std::shared_ptr<Box> box_;
  at::Tensor tensor_;
};

const char *kind_name(PyValue::Kind kind);

// Shorthands for pickled trees written by hand (the checkpoint layouts):
// py::S("epoch"), py::I(3), py::F(0.5).
namespace py {
inline PyValue S(std::string s) { return PyValue::str(std::move(s)); }
inline PyValue I(int64_t i) { return PyValue::integer(i); }
inline PyValue F(double f) { return PyValue::real(f); }
}  // namespace py

}  // namespace salt::serialize
