#include "serialize/unpickler.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <unordered_map>
#include <vector>

#include "core/nesting.h"
#include "serialize/tensor_rebuild.h"

namespace salt::serialize {
namespace {

using Items = PyValue::Items;

class Unpickler {
 public:
  Unpickler(std::string_view bytes, const PersistentLoad& load) : in_(bytes), load_(load) {}

  // The value the pickle builds, at most kMaxNesting containers deep and holding
  // no cycle: the readers after this one walk it recursively (core/nesting.h). On
  // any refusal, whatever was built is emptied, or a cycle would never be freed.
  PyValue run() {
    try {
      auto value = read();
      if (auto fault = value.nesting_fault(kMaxNesting)) throw PickleError(*fault);
      return value;
    } catch (...) {
      for (const auto& v : stack_) v.dismantle();
      for (const auto& [key, v] : memo_) v.dismantle();
      throw;
    }
  }

 private:
  PyValue read() {
    while (true) {
      const size_t at = pos_;
      const auto op = static_cast<uint8_t>(byte());
      try {
        if (op == '.') break;  // STOP
        step(op);
      } catch (const std::invalid_argument& e) {
        fail(at, std::string("opcode 0x") + hex(op) + ": " + e.what());
      } catch (const c10::Error& e) {  // a tensor op on a malformed tensor
        fail(at, std::string("opcode 0x") + hex(op) + ": " + e.what_without_backtrace());
      }
    }
    if (stack_.size() != 1 || !marks_.empty()) fail(pos_, "the pickle ends with a malformed stack");
    return stack_.back();
  }

  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw PickleError("pickle byte " + std::to_string(at) + ": " + what);
  }
  static std::string hex(uint8_t b) {
    const char* digits = "0123456789abcdef";
    return {digits[b >> 4], digits[b & 15]};
  }

  // --- reading the stream ---
  std::string_view take(uint64_t n) {
    if (n > in_.size() - pos_) fail(pos_, "truncated (needs " + std::to_string(n) + " more bytes)");
    auto out = in_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  char byte() { return take(1)[0]; }
  template <typename T>
  T little() {
    T v{};
    std::memcpy(&v, take(sizeof(T)).data(), sizeof(T));  // pickles are little-endian, so is this machine
    return v;
  }
  std::string_view line() {
    const auto end = in_.find('\n', pos_);
    if (end == std::string_view::npos) fail(pos_, "truncated (a text field has no end of line)");
    const auto length = end - pos_;
    return take(length + 1).substr(0, length);
  }

  // --- the stack ---
  PyValue pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back()))
      throw std::invalid_argument("the stack is empty");
    auto v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  PyValue& top() {
    if (stack_.empty()) throw std::invalid_argument("the stack is empty");
    return stack_.back();
  }
  Items pop_mark() {
    if (marks_.empty()) throw std::invalid_argument("no mark on the stack");
    const auto mark = marks_.back();
    marks_.pop_back();
    Items items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(mark)),
                std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return items;
  }
  void memo_put(uint64_t key) { memo_[key] = top(); }
  void memo_get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) throw std::invalid_argument("memo entry " + std::to_string(key) + " was never stored");
    stack_.push_back(it->second);
  }

  static PyValue long_from_bytes(std::string_view b) {
    if (b.size() > 8) {
      // Still an int64 if the high bytes only extend the sign.
      const char sign = (b.back() & 0x80) ? '\xff' : '\0';
      size_t used = b.size();
      while (used > 8 && b[used - 1] == sign) --used;
      if (used > 8 || ((b[7] & 0x80) != 0) != (sign != 0)) return PyValue::big_integer(std::string(b));
      b = b.substr(0, 8);
    }
    uint64_t u = 0;
    for (size_t i = 0; i < b.size(); ++i) u |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
    if (!b.empty() && b.size() < 8 && (b.back() & 0x80)) u |= ~uint64_t{0} << (8 * b.size());
    return PyValue::integer(static_cast<int64_t>(u));
  }
  static PyValue int_from_text(std::string_view t) {
    if (!t.empty() && t.back() == 'L') t.remove_suffix(1);
    if (t == "00") return PyValue::boolean(false);  // protocol 0 writes bools as I00 / I01
    if (t == "01") return PyValue::boolean(true);
    try {
      size_t used = 0;
      const auto v = std::stoll(std::string(t), &used);
      if (used != t.size()) throw std::invalid_argument("");
      return PyValue::integer(v);
    } catch (const std::exception&) {
      throw std::invalid_argument("'" + std::string(t) + "' is not an int salt-cpp reads");
    }
  }

  void push_global(std::string module, std::string name) {
    stack_.push_back(PyValue::global(std::move(module), std::move(name)));
  }
  // Python's callable(*args), for the callables rebuilt as values.
  PyValue call(const PyValue& fn, Items args) {
    if (auto tensor = rebuild_tensor(fn, args)) return PyValue::tensor(*tensor);
    if (fn.is_global("collections", "OrderedDict") || fn.is_global("builtins", "dict") ||
        fn.is_global("__builtin__", "dict")) {
      auto d = PyValue::dict({}, fn.is_global("collections", "OrderedDict") ? "collections.OrderedDict" : "");
      if (!args.empty())
        for (const auto& pair : args[0].items()) d.set_item(pair.items().at(0), pair.items().at(1));
      return d;
    }
    if (fn.is_global("builtins", "set") || fn.is_global("builtins", "frozenset") || fn.is_global("__builtin__", "set") ||
        fn.is_global("__builtin__", "frozenset"))
      return PyValue::set(args.empty() ? Items{} : args[0].items());
    if (fn.is_global("_codecs", "encode")) return latin1_bytes(args.at(0).as_str());
    if (fn.is_global("builtins", "bytearray") || fn.is_global("__builtin__", "bytearray"))
      return args.empty() ? PyValue::bytes("") : args[0].kind() == PyValue::Kind::kStr ? latin1_bytes(args[0].as_str()) : args[0];
    // LibTorch's pickler: type tags and typed lists are the values themselves.
    if (fn.is_global("torch.jit._pickle", "restore_type_tag")) return args.at(0);
    if (fn.kind() == PyValue::Kind::kGlobal && fn.type_name().rfind("torch.jit._pickle.build_", 0) == 0)
      return PyValue::list(args.at(0).items());
    if (fn.is_global("copyreg", "_reconstructor") || fn.is_global("copy_reg", "_reconstructor"))
      return PyValue::object(args.at(0), {});
    return PyValue::object(fn, std::move(args));
  }
  // Protocol 2 writes bytes as _codecs.encode(<latin-1 text as str>, 'latin1').
  static PyValue latin1_bytes(const std::string& utf8) {
    std::string out;
    for (size_t i = 0; i < utf8.size(); ++i) {
      const auto c = static_cast<uint8_t>(utf8[i]);
      if (c < 0x80) {
        out.push_back(static_cast<char>(c));
      } else if ((c & 0xE0) == 0xC0 && i + 1 < utf8.size()) {
        out.push_back(static_cast<char>(((c & 0x1F) << 6) | (static_cast<uint8_t>(utf8[++i]) & 0x3F)));
      } else {
        throw std::invalid_argument("bytes encoded as text outside latin-1");
      }
    }
    return PyValue::bytes(std::move(out));
  }
  void build(const PyValue& state) {
    auto& obj = top();
    if (obj.kind() == PyValue::Kind::kObject || obj.kind() == PyValue::Kind::kDict) {
      obj.state() = state;  // an OrderedDict's state is its _metadata (torch's state_dict)
    } else if (obj.kind() != PyValue::Kind::kTensor) {  // a Parameter's extra state changes nothing here
      throw std::invalid_argument("BUILD on a " + obj.type_name());
    }
  }
  void set_items(PyValue& target, Items items) {
    if (items.size() % 2) throw std::invalid_argument("an odd number of items for a dict");
    for (size_t i = 0; i < items.size(); i += 2) target.set_item(std::move(items[i]), std::move(items[i + 1]));
  }

  void step(uint8_t op);

  std::string_view in_;
  size_t pos_ = 0;
  const PersistentLoad& load_;
  std::vector<PyValue> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PyValue> memo_;
};

void Unpickler::step(uint8_t op) {
  switch (op) {
    case 0x80: {  // PROTO
      const auto version = static_cast<uint8_t>(byte());
      if (version > 5) throw std::invalid_argument("pickle protocol " + std::to_string(version) + " (5 is the newest)");
      break;
    }
    case 0x95: take(8); break;  // FRAME: a length hint
    case '(': marks_.push_back(stack_.size()); break;
    case '0': pop(); break;
    case '1': pop_mark(); break;
    case '2': stack_.push_back(top()); break;
    // --- scalars ---
    case 'N': stack_.emplace_back(); break;
    case 0x88: stack_.push_back(PyValue::boolean(true)); break;
    case 0x89: stack_.push_back(PyValue::boolean(false)); break;
    case 'J': stack_.push_back(PyValue::integer(little<int32_t>())); break;
    case 'K': stack_.push_back(PyValue::integer(static_cast<uint8_t>(byte()))); break;
    case 'M': stack_.push_back(PyValue::integer(little<uint16_t>())); break;
    case 0x8a: stack_.push_back(long_from_bytes(take(static_cast<uint8_t>(byte())))); break;
    case 0x8b: {
      const auto n = little<int32_t>();
      if (n < 0) throw std::invalid_argument("negative LONG4 length");
      stack_.push_back(long_from_bytes(take(static_cast<uint64_t>(n))));
      break;
    }
    case 'I': stack_.push_back(int_from_text(line())); break;
    case 'L': stack_.push_back(int_from_text(line())); break;
    case 'G': {
      uint64_t bits = 0;
      for (char c : take(8)) bits = (bits << 8) | static_cast<uint8_t>(c);  // big-endian
      double d;
      std::memcpy(&d, &bits, sizeof d);
      stack_.push_back(PyValue::real(d));
      break;
    }
    case 'F': {
      const std::string text(line());
      char* end = nullptr;
      const double d = std::strtod(text.c_str(), &end);
      if (end != text.c_str() + text.size()) throw std::invalid_argument("'" + text + "' is not a float");
      stack_.push_back(PyValue::real(d));
      break;
    }
    case 'X': stack_.push_back(PyValue::str(std::string(take(little<uint32_t>())))); break;
    case 0x8c: stack_.push_back(PyValue::str(std::string(take(static_cast<uint8_t>(byte()))))); break;
    case 0x8d: stack_.push_back(PyValue::str(std::string(take(little<uint64_t>())))); break;
    case 'B': stack_.push_back(PyValue::bytes(std::string(take(little<uint32_t>())))); break;
    case 'C': stack_.push_back(PyValue::bytes(std::string(take(static_cast<uint8_t>(byte()))))); break;
    case 0x8e: stack_.push_back(PyValue::bytes(std::string(take(little<uint64_t>())))); break;
    case 0x96: stack_.push_back(PyValue::bytes(std::string(take(little<uint64_t>())))); break;
    // Python 2 strings (bytes): protocol 0/1 text and binary forms.
    case 'T': stack_.push_back(PyValue::bytes(std::string(take(little<uint32_t>())))); break;
    case 'U': stack_.push_back(PyValue::bytes(std::string(take(static_cast<uint8_t>(byte()))))); break;
    // --- containers ---
    case ')': stack_.push_back(PyValue::tuple({})); break;
    case 0x85: stack_.push_back(PyValue::tuple({pop()})); break;
    case 0x86: {
      auto b = pop(), a = pop();
      stack_.push_back(PyValue::tuple({a, b}));
      break;
    }
    case 0x87: {
      auto c = pop(), b = pop(), a = pop();
      stack_.push_back(PyValue::tuple({a, b, c}));
      break;
    }
    case 't': stack_.push_back(PyValue::tuple(pop_mark())); break;
    case ']': stack_.push_back(PyValue::list()); break;
    case 'l': stack_.push_back(PyValue::list(pop_mark())); break;
    case '}': stack_.push_back(PyValue::dict()); break;
    case 'd': {
      auto d = PyValue::dict();
      set_items(d, pop_mark());
      stack_.push_back(d);
      break;
    }
    case 0x8f: stack_.push_back(PyValue::set({})); break;
    case 0x91: stack_.push_back(PyValue::set(pop_mark())); break;
    case 'a': {
      auto v = pop();
      top().append(std::move(v));
      break;
    }
    case 'e':
    case 0x90: {  // APPENDS, ADDITEMS
      auto items = pop_mark();
      for (auto& v : items) top().append(std::move(v));
      break;
    }
    case 's': {
      auto v = pop(), k = pop();
      top().set_item(std::move(k), std::move(v));
      break;
    }
    case 'u': {
      auto items = pop_mark();
      set_items(top(), std::move(items));
      break;
    }
    // --- memo ---
    case 'q': memo_put(static_cast<uint8_t>(byte())); break;
    case 'r': memo_put(little<uint32_t>()); break;
    case 'p': memo_put(static_cast<uint64_t>(int_from_text(line()).as_int())); break;
    case 0x94: memo_put(memo_.size()); break;
    case 'h': memo_get(static_cast<uint8_t>(byte())); break;
    case 'j': memo_get(little<uint32_t>()); break;
    case 'g': memo_get(static_cast<uint64_t>(int_from_text(line()).as_int())); break;
    // --- globals, calls, objects ---
    case 'c': {
      std::string module(line());
      push_global(module, std::string(line()));
      break;
    }
    case 0x93: {
      auto name = pop(), module = pop();
      push_global(module.as_str(), name.as_str());
      break;
    }
    case 'R': {
      auto args = pop(), fn = pop();
      stack_.push_back(call(fn, args.items()));
      break;
    }
    case 0x81: {  // NEWOBJ: cls.__new__(cls, *args)
      auto args = pop(), cls = pop();
      stack_.push_back(cls.is_global("collections", "OrderedDict") ? call(cls, {}) : PyValue::object(cls, args.items()));
      break;
    }
    case 0x92: {  // NEWOBJ_EX
      pop();  // kwargs
      auto args = pop(), cls = pop();
      stack_.push_back(PyValue::object(cls, args.items()));
      break;
    }
    case 'b': build(pop()); break;
    case 'Q': stack_.push_back(load_(pop())); break;
    case 'P': stack_.push_back(load_(PyValue::str(std::string(line())))); break;
    default:
      throw std::invalid_argument("not an opcode salt-cpp reads (extension registry, out-of-band buffer or "
                                  "protocol-0 text strings), or not a pickle at all");
  }
}

}  // namespace

PyValue unpickle(std::string_view bytes, const PersistentLoad& persistent_load) {
  return Unpickler(bytes, persistent_load).run();
}

}  // namespace salt::serialize
