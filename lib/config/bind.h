// Bound fields: one declaration binds a config key to the member of a typed
// options struct (a TORCH_ARG accessor or a plain member), in the spirit of
// llama.cpp's `add_opt` and torch's TORCH_ARG. From that declaration come the
// schema field (type, help, support) whose default is *read from the struct*, and
// the reader that turns a validated YAML mapping into the struct. The default in
// `--help`, `--print_config` and docs/config-reference.md therefore cannot drift
// from the code.
//
//   Binding<DenseOptions> b(DenseOptions(0));
//   b.arg("hidden_dim_scale", SALT_MEMBER(hidden_dim_scale), "Hidden size multiplier.");
//   TypeP type = b.type();                          // the schema
//   DenseOptions d = b.read(validated, base);       // the typed value
//
// Torch-free on purpose: lib/config and its tests build without LibTorch.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/schema.h"
#include "config/yaml11_scalars.h"

// The member a key binds to, for TORCH_ARG options (`o.name()` returns T&) and
// for plain structs alike (use SALT_FIELD there).
#define SALT_MEMBER(name) [](auto& o) -> decltype(auto) { return (o.name()); }
#define SALT_FIELD(name) [](auto& o) -> decltype(auto) { return (o.name); }

namespace salt::config {

// How a C++ value type maps to the schema and back. Values come from validated
// YAML, so decode never sees a wrong type.
template <class T, class = void>
struct Codec;

template <>
struct Codec<bool> {
  static TypeP type() { return t_bool(); }
  static YAML::Node encode(bool v) { return YAML::Node(v); }
  static bool decode(const YAML::Node& n) {
    auto v = yaml11_bool(n.Scalar());
    return v ? *v : n.as<bool>();
  }
};

template <class T>
struct Codec<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static TypeP type() { return t_int(); }
  static YAML::Node encode(T v) { return YAML::Node(v); }
  static T decode(const YAML::Node& n) {
    auto v = yaml11_int(n.Scalar());  // validated trees are canonical; raw ones may say 1_000
    return v ? static_cast<T>(*v) : n.as<T>();
  }
};

template <class T>
struct Codec<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static TypeP type() { return t_float(); }
  static YAML::Node encode(T v) { return YAML::Node(static_cast<double>(v)); }
  static T decode(const YAML::Node& n) {
    auto v = yaml11_float(n.Scalar());
    return static_cast<T>(v ? *v : n.as<double>());
  }
};

template <>
struct Codec<std::string> {
  static TypeP type() { return t_str(); }
  static YAML::Node encode(const std::string& v) { return YAML::Node(v); }
  static std::string decode(const YAML::Node& n) { return n.Scalar(); }
};

// null <-> nullopt.
template <class T>
struct Codec<std::optional<T>> {
  static TypeP type() { return t_optional(Codec<T>::type()); }
  static YAML::Node encode(const std::optional<T>& v) {
    return v ? Codec<T>::encode(*v) : YAML::Node(YAML::NodeType::Null);
  }
  static std::optional<T> decode(const YAML::Node& n) {
    if (!n.IsDefined() || n.IsNull()) return std::nullopt;
    return Codec<T>::decode(n);
  }
};

// A list; a scalar reads as a one-element list (salt's listify, for `str | list[str]` keys).
template <class T>
struct Codec<std::vector<T>> {
  static TypeP type() { return t_list(Codec<T>::type()); }
  static YAML::Node encode(const std::vector<T>& v) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const auto& x : v) out.push_back(Codec<T>::encode(x));
    return out;
  }
  static std::vector<T> decode(const YAML::Node& n) {
    std::vector<T> out;
    if (n.IsScalar()) out.push_back(Codec<T>::decode(n));
    if (n.IsSequence())
      for (const auto& x : n) out.push_back(Codec<T>::decode(x));
    return out;
  }
};

template <class K, class V>
struct Codec<std::map<K, V>> {
  static TypeP type() { return t_dict(Codec<V>::type(), Codec<K>::type()); }
  static YAML::Node encode(const std::map<K, V>& m) {
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& [k, v] : m) out[Codec<K>::encode(k)] = Codec<V>::encode(v);
    return out;
  }
  static std::map<K, V> decode(const YAML::Node& n) {
    std::map<K, V> out;
    for (const auto& kv : n) out[Codec<K>::decode(kv.first)] = Codec<V>::decode(kv.second);
    return out;
  }
};

// A YAML node passes through untouched (a component node its builder reads).
template <>
struct Codec<YAML::Node> {
  static TypeP type() { return t_any(); }
  static YAML::Node encode(const YAML::Node& v) { return v; }
  static YAML::Node decode(const YAML::Node& n) { return n; }
};

// A validated component, {class_path: C, init_args: {...}}: what a builder
// (models::build_component, callbacks::make_callbacks) dispatches on.
struct ComponentNode {
  std::string class_path;
  YAML::Node init_args{YAML::NodeType::Map};
};

template <>
struct Codec<ComponentNode> {
  static TypeP type() { return t_any(); }
  static YAML::Node encode(const ComponentNode& c) {
    YAML::Node out(YAML::NodeType::Map);
    out["class_path"] = c.class_path;
    out["init_args"] = c.init_args;
    return out;
  }
  static ComponentNode decode(const YAML::Node& n) {
    ComponentNode c;
    if (n.IsScalar()) return c.class_path = n.Scalar(), c;  // the short form, before validation
    for (const auto& kv : n) {
      if (kv.first.Scalar() == "class_path") c.class_path = kv.second.Scalar();
      if (kv.first.Scalar() == "init_args" && kv.second.IsMap()) c.init_args.reset(kv.second);
    }
    return c;
  }
};

// Stores a decoded value. YAML::Node's operator= writes *through* a node shared
// with the prototype (it aliases), so nodes are rebound instead.
template <class T>
void assign(T& dst, T&& value) { dst = std::move(value); }
inline void assign(YAML::Node& dst, YAML::Node&& value) { dst.reset(value); }

// A struct's keys: the schema fields and, for each, how its validated value is
// stored into the struct. Fields keep declaration order (the order of
// --print_config and --help).
template <class S>
class Binding {
 public:
  using Reader = std::function<void(S&, const YAML::Node&)>;

  explicit Binding(S prototype) : prototype_(std::move(prototype)) {}

  // Key bound to the member `get` returns; its default is the prototype's value.
  // `type` overrides the type the member's C++ type implies (a choice, a bound).
  template <class Get>
  Binding& arg(std::string name, Get get, std::string help, TypeP type = nullptr) {
    using T = std::decay_t<decltype(get(std::declval<S&>()))>;
    S proto = prototype_;
    Field f{std::move(name), type ? std::move(type) : Codec<T>::type(), Codec<T>::encode(get(proto)), std::move(help)};
    return add(std::move(f), [get](S& s, const YAML::Node& n) { assign(get(s), Codec<T>::decode(n)); });
  }

  // Key bound to a member whose default the prototype holds, stored by a
  // hand-written reader (a value with conventions, e.g. Lightning's precision names).
  template <class Get>
  Binding& arg(std::string name, Get get, std::string help, TypeP type, Reader read) {
    using T = std::decay_t<decltype(get(std::declval<S&>()))>;
    S proto = prototype_;
    return add(Field{std::move(name), std::move(type), Codec<T>::encode(get(proto)), std::move(help)}, std::move(read));
  }

  // A key that must be given (the prototype's value is a placeholder).
  template <class Get>
  Binding& required(std::string name, Get get, std::string help, TypeP type = nullptr) {
    using T = std::decay_t<decltype(get(std::declval<S&>()))>;
    Field f = config::required(std::move(name), type ? std::move(type) : Codec<T>::type(), std::move(help));
    return add(std::move(f), [get](S& s, const YAML::Node& n) { assign(get(s), Codec<T>::decode(n)); });
  }

  // A key whose null default means "derived by the builder" (e.g. Dense's
  // input_size from data.variables): a given value overrides the member, null
  // leaves what the caller's base struct holds.
  template <class Get>
  Binding& derived(std::string name, Get get, std::string help, TypeP type = nullptr) {
    using T = std::decay_t<decltype(get(std::declval<S&>()))>;
    return add(field_null(std::move(name), t_optional(type ? std::move(type) : Codec<T>::type()), std::move(help)),
               [get](S& s, const YAML::Node& n) {
                 if (n.IsDefined() && !n.IsNull()) assign(get(s), Codec<T>::decode(n));
               });
  }

  // A nested struct whose key defaults to null (salt's `dense_kwargs: null`):
  // null keeps the member as it is, a mapping is read by `nested` on top of it.
  template <class Get, class N>
  Binding& optional_struct(std::string name, Get get, const Binding<N>& nested, std::string help) {
    return add(field_null(std::move(name), t_optional(nested.type()), std::move(help)),
               [get, nested](S& s, const YAML::Node& n) {
                 if (n.IsDefined() && n.IsMap()) get(s) = nested.read(n, get(s));
               });
  }

  // A nested struct that must be given.
  template <class Get, class N>
  Binding& required_struct(std::string name, Get get, const Binding<N>& nested, std::string help) {
    return add(config::required(std::move(name), nested.type(), std::move(help)),
               [get, nested](S& s, const YAML::Node& n) { get(s) = nested.read(n, get(s)); });
  }

  // A key salt accepts that has no member here: its field says why (ignored,
  // unsupported, or read elsewhere, e.g. by the builder from the raw mapping).
  Binding& unbound(Field f) { return add(std::move(f), nullptr); }

  // A key with a hand-written reader (a value that needs more than a cast).
  Binding& custom(Field f, Reader read) { return add(std::move(f), std::move(read)); }

  // The last key is accepted but has no effect (a warning says what happens
  // instead), or is accepted only at its default.
  Binding& ignored(const std::string& why) { return fields_.back().ignored(why), *this; }
  Binding& unsupported(const std::string& why) { return fields_.back().unsupported(why), *this; }
  // Why the last (unbound, fully supported) key needs no member: who reads it.
  Binding& read_elsewhere(const std::string& why) { return fields_.back().note = why, *this; }

  // Runs after every key is read: settings that depend on several keys
  // (Lightning's max_epochs: null means 1000 unless max_steps is set).
  Binding& finally(std::function<void(S&)> step) { return finish_.push_back(std::move(step)), *this; }

  TypeP type() const { return t_struct(fields_); }
  const std::vector<Field>& fields() const { return fields_; }
  const S& prototype() const { return prototype_; }
  bool is_bound(const std::string& key) const {
    for (std::size_t i = 0; i < fields_.size(); ++i)
      if (fields_[i].name == key) return readers_[i] != nullptr;
    return false;
  }

  // The struct a validated mapping describes, on top of `base` (by default the
  // prototype): every bound key present in `validated` is stored.
  S read(const YAML::Node& validated, S base) const {
    for (std::size_t i = 0; i < fields_.size(); ++i) {
      if (!readers_[i]) continue;
      for (const auto& kv : validated)
        if (kv.first.Scalar() == fields_[i].name) readers_[i](base, kv.second);
    }
    for (const auto& step : finish_) step(base);
    return base;
  }
  S read(const YAML::Node& validated) const { return read(validated, prototype_); }

 private:
  Binding& add(Field f, Reader read) {
    f.bound = read != nullptr;
    fields_.push_back(std::move(f));
    readers_.push_back(std::move(read));
    return *this;
  }

  S prototype_;
  std::vector<Field> fields_;
  std::vector<Reader> readers_;
  std::vector<std::function<void(S&)>> finish_;
};

// A reader for a nullable key (with `custom` or `arg`): a given value is stored in
// the member `get` returns, null keeps the member's default.
template <class S, class Get>
typename Binding<S>::Reader unless_null(Get get) {
  return [get](S& s, const YAML::Node& n) {
    using T = std::decay_t<decltype(get(s))>;
    if (n.IsDefined() && !n.IsNull()) assign(get(s), Codec<T>::decode(n));
  };
}

}  // namespace salt::config
