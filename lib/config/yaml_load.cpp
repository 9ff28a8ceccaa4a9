#include "config/yaml_load.h"

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "config/yaml_util.h"
#include "core/errors.h"
#include "core/nesting.h"

namespace salt::config {
namespace {

std::string where_in(const std::string& file, const YAML::Node& node) {
  return (file.empty() ? std::string("<yaml>") : file) + ":" + std::to_string(node.Mark().line + 1);
}

// Explicit tags: the core schema's say what a value is (`!!str 1` is the string "1",
// as in PyYAML); any other (`!!python/tuple`, `!!binary`, `!custom`) would be read
// as if it were not there, so it is refused.
std::string checked_tag(const YAML::Node& node, const std::string& path, const std::string& file) {
  static const std::string core = "tag:yaml.org,2002:";
  const auto& tag = node.Tag();
  if (tag.empty() || tag == "?" || tag == "!") return tag;
  if (tag == core + "str") return "!";  // quoted
  for (const char* kind : {"int", "float", "bool", "null", "seq", "map"})
    if (tag == core + kind) return "?";
  const auto shown = tag.rfind(core, 0) == 0 ? "!!" + tag.substr(core.size()) : tag;
  throw UsageError(where_in(file, node) + ": " + (path.empty() ? std::string() : "'" + path + "': ") + "YAML tag '" +
                   shown + "' is not supported: salt reads plain values (strings, numbers, lists, mappings)");
}

YAML::Node copy_scalar(const YAML::Node& node, const std::string& path, const std::string& file) {
  YAML::Node out(node.Scalar());
  out.SetTag(checked_tag(node, path, file));
  return out;
}

// A key's own line is where a user looks for it (a block value starts below it).
void record_key_line(const YAML::Node& key, const std::string& path, const std::string& file, Origins* origins) {
  if (origins && !file.empty()) (*origins)[path] = file + ":" + std::to_string(key.Mark().line + 1);
}

// Aliases make a YAML document a graph: `a: &x [*x]` is a cycle, and a few lines of
// nested aliases (the "billion laughs") expand to billions of nodes. Copying stops
// at limits no real config comes near (salt's and the zoo's largest: 491 nodes, 23
// keys in one mapping). yaml-cpp finds a key by walking its mapping, so everything
// that reads a mapping of n keys costs n^2: 300,000 keys took minutes before the
// node limit was reached, 1,000 take milliseconds.
struct CopyBudget {
  static constexpr int kMaxDepth = kMaxNesting;  // core/nesting.h: one limit for all nested data
  static constexpr std::size_t kMaxNodes = 50'000;
  static constexpr std::size_t kMaxKeys = 1'000;
  std::size_t nodes = 0;
};

YAML::Node copy_impl(const YAML::Node& node, const std::string& path, const std::string& file, Origins* origins,
                     CopyBudget& budget, int depth);

std::string too_many_keys(std::size_t keys, const std::string& path) {
  return "a mapping of " + std::to_string(keys) + " keys" + (path.empty() ? std::string() : " ('" + path + "')") +
         "; salt-cpp reads at most " + std::to_string(CopyBudget::kMaxKeys) +
         " keys in one mapping (no config comes near)";
}

// Copies `node`, recording the line of every value under `path` when `file` is set.
YAML::Node copy_recording(const YAML::Node& node, const std::string& path, const std::string& file,
                          Origins* origins) {
  CopyBudget budget;
  return copy_impl(node, path, file, origins, budget, 0);
}

// One more node at `depth`: within the budget, or refused. A tree with no file
// (merged, or copied from one) is TreeTooLarge, for its caller to place.
void count_node(CopyBudget& budget, int depth, const std::string& file, const YAML::Node& node) {
  if (depth <= CopyBudget::kMaxDepth && ++budget.nodes <= CopyBudget::kMaxNodes) return;
  const bool deep = depth > CopyBudget::kMaxDepth;
  if (file.empty())
    throw TreeTooLarge(deep ? "the config is nested over " + std::to_string(CopyBudget::kMaxDepth) + " levels deep"
                            : "the config has over " + std::to_string(CopyBudget::kMaxNodes) +
                                  " values; salt-cpp reads at most that many (no config comes near)");
  const std::string what =
      deep ? "nested too deeply" : "too large (over " + std::to_string(CopyBudget::kMaxNodes) + " values)";
  throw UsageError(file + ":" + std::to_string(node.Mark().line + 1) + ": the document is " + what +
                   " (a recursive or exponentially repeated alias?)");
}

YAML::Node copy_impl(const YAML::Node& node, const std::string& path, const std::string& file, Origins* origins,
                     CopyBudget& budget, int depth) {
  count_node(budget, depth, file, node);
  if (origins && !file.empty() && !path.empty())
    (*origins)[path] = file + ":" + std::to_string(node.Mark().line + 1);
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return copy_scalar(node, path, file);
    case YAML::NodeType::Sequence: {
      checked_tag(node, path, file);
      YAML::Node out(YAML::NodeType::Sequence);
      std::size_t i = 0;
      for (const auto& item : node) out.push_back(copy_impl(item, join_path(path, std::to_string(i++)), file, origins, budget, depth + 1));
      return out;
    }
    case YAML::NodeType::Map: {
      if (node.size() > CopyBudget::kMaxKeys) {
        if (file.empty()) throw TreeTooLarge("the config has " + too_many_keys(node.size(), path));  // merged
        throw UsageError(file + ":" + std::to_string(node.Mark().line + 1) + ": " + too_many_keys(node.size(), path));
      }
      checked_tag(node, path, file);
      YAML::Node out(YAML::NodeType::Map);
      // The maps merged in (`<<`), the first winning: PyYAML merges every `<<` of a
      // mapping, a later `<<` winning over an earlier one, and within `<<: [*a, *b]`
      // the earlier map winning.
      std::vector<YAML::Node> sources;
      std::map<std::string, int> key_lines;
      for (const auto& kv : node) {
        // A null key (`null:` or `~:`, MaskFormer's null object class) stays a null key,
        // not the empty string: PyYAML reads it back as None, which salt renames "null".
        const auto key = kv.first.IsNull() ? std::string("null") : kv.first.Scalar();
        if (key == "<<" && !is_quoted(kv.first)) {
          std::vector<YAML::Node> these;
          if (kv.second.IsSequence())
            for (const auto& src : kv.second) these.push_back(src);
          else
            these.push_back(kv.second);
          sources.insert(sources.begin(), these.begin(), these.end());
          continue;
        }
        // PyYAML keeps the last of two equal keys without a word: a second `trainer:`
        // block would replace the first whole.
        const auto [first, fresh] = key_lines.emplace(key, kv.first.Mark().line + 1);
        if (!fresh)
          throw UsageError(where_in(file, kv.first) + ": '" + join_path(path, key) + "' is given twice in one mapping (first at line " +
                           std::to_string(first->second) + "); YAML would keep the last silently: remove one");
        auto value = copy_impl(kv.second, join_path(path, key), file, origins, budget, depth + 1);
        set_entry(out, kv.first, value);
        record_key_line(kv.first, join_path(path, key), file, origins);
      }
      // `<<: *a` or `<<: [*a, *b]`: keys given explicitly win, then earlier maps win.
      if (!sources.empty()) {
        for (const auto& src : sources) {
          if (!src.IsMap()) {
            auto line = std::to_string(src.Mark().line + 1);
            throw UsageError((file.empty() ? std::string("<yaml>") : file) + ":" + line +
                             ": merge key '<<' needs a map or a list of maps");
          }
          for (const auto& kv : src) {
            const auto key = kv.first.Scalar();
            if (!has_key(out, key)) {
              auto value = copy_impl(kv.second, join_path(path, key), file, origins, budget, depth + 1);
              set_entry(out, kv.first, value);
              record_key_line(kv.first, join_path(path, key), file, origins);
            }
          }
        }
      }
      return out;
    }
    case YAML::NodeType::Null:
      return YAML::Node(YAML::NodeType::Null);
    case YAML::NodeType::Undefined:
    default:
      return YAML::Node(YAML::NodeType::Undefined);
  }
}

// PyYAML, salt's reader, takes UTF-8 text of printable characters only (its
// Reader's NON_PRINTABLE); yaml-cpp took any bytes. The first offender, by place.
void check_characters(const std::string& text, const std::string& where) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const int length = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    char32_t code = length == 1 ? b : length == 2 ? (b & 0x1F) : length == 3 ? (b & 0x0F) : (b & 0x07);
    bool valid = length > 0 && i + length <= text.size();
    for (int k = 1; valid && k < length; ++k) {
      const auto c = static_cast<unsigned char>(text[i + k]);
      valid = (c >> 6) == 0x2;
      code = (code << 6) | (c & 0x3F);
    }
    static constexpr char32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};  // shorter forms are overlong
    valid = valid && code >= kLeast[length] && code <= 0x10FFFF && !(code >= 0xD800 && code <= 0xDFFF);
    const auto place = where + ":" + std::to_string(line) + ":" + std::to_string(column);
    if (!valid)
      throw UsageError(fmt::format("{}: not UTF-8 (byte 0x{:02x}): salt reads config files as UTF-8; save the file "
                                   "in that encoding",
                                   place, b));
    const bool printable = code == 0x09 || code == 0x0A || code == 0x0D || (code >= 0x20 && code <= 0x7E) ||
                           code == 0x85 || (code >= 0xA0 && code <= 0xD7FF) || (code >= 0xE000 && code <= 0xFFFD) ||
                           code >= 0x10000;
    if (!printable)
      throw UsageError(fmt::format("{}: the control character U+{:04X}, which YAML (and salt's reader) does not "
                                   "allow in a config file",
                                   place, static_cast<uint32_t>(code)));
    if (code == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += static_cast<std::size_t>(length);
  }
}

LoadedYaml load_text(const std::string& text, const std::string& where) {
  check_characters(text, where);
  YAML::Node parsed;
  try {
    const auto documents = YAML::LoadAll(text);
    // PyYAML's safe_load, which salt reads configs with, refuses a second document.
    if (documents.size() > 1)
      throw UsageError(where + ":" + std::to_string(documents[1].Mark().line + 1) +
                       ": a second YAML document ('---'); a config file holds one, as salt's YAML reader "
                       "(PyYAML's safe_load) requires: give each as a config file of its own");
    if (!documents.empty()) parsed = documents.front();
  } catch (const YAML::ParserException& e) {
    throw UsageError(where + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                     ": invalid YAML: " + e.msg);
  }
  LoadedYaml loaded;
  if (!parsed || parsed.IsNull()) {
    loaded.root = YAML::Node(YAML::NodeType::Map);
    return loaded;
  }
  if (!parsed.IsMap())
    throw UsageError(where + ":" + std::to_string(parsed.Mark().line + 1) +
                     ": a config file must be a mapping of keys to values");
  loaded.root = copy_recording(parsed, "", where, &loaded.origins);
  return loaded;
}

}  // namespace

bool is_quoted(const YAML::Node& scalar) { return scalar.IsScalar() && scalar.Tag() == "!"; }

YAML::Node copy_tree(const YAML::Node& node) { return copy_recording(node, "", "", nullptr); }

namespace {
// A merged tree (no file): the merge that takes a mapping past the key limit is
// named by the caller, as for the node limit. `keys`: the path down to `node`, joined
// only for the error (this runs after every merged file and flag).
void count_tree(const YAML::Node& node, CopyBudget& budget, int depth, std::vector<std::string>& keys) {
  count_node(budget, depth, "", node);
  if (node.IsMap()) {
    if (node.size() > CopyBudget::kMaxKeys) {
      std::string path;
      for (const auto& k : keys) path = join_path(path, k);
      throw TreeTooLarge("the config has " + too_many_keys(node.size(), path));
    }
    for (const auto& kv : node) {
      keys.push_back(kv.first.Scalar());
      count_tree(kv.second, budget, depth + 1, keys);
      keys.pop_back();
    }
  } else if (node.IsSequence()) {
    std::size_t i = 0;
    for (const auto& item : node) {
      keys.push_back(std::to_string(i++));
      count_tree(item, budget, depth + 1, keys);
      keys.pop_back();
    }
  }
}
}  // namespace

void check_tree_size(const YAML::Node& tree) {
  CopyBudget budget;
  std::vector<std::string> keys;
  count_tree(tree, budget, 0, keys);
}

YAML::Node get_entry(const YAML::Node& map, const YAML::Node& key) {
  for (const auto& kv : map)
    if (key.IsNull() ? kv.first.IsNull() : !kv.first.IsNull() && kv.first.Scalar() == key.Scalar()) return kv.second;
  return YAML::Node(YAML::NodeType::Undefined);
}

void set_entry(YAML::Node& map, const YAML::Node& key, const YAML::Node& value) {
  if (!key.IsNull()) {
    map[key.Scalar()] = value;
    return;
  }
  for (auto kv : map)
    if (kv.first.IsNull()) {
      kv.second = value;  // writes through: this map's own entry
      return;
    }
  map[YAML::Node(YAML::NodeType::Null)] = value;
}

LoadedYaml load_yaml_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UsageError(path + ": no such config file");
  if (std::filesystem::is_directory(path, ec)) throw UsageError(path + ": is a directory, not a config file");
  if (!std::filesystem::is_regular_file(path, ec)) throw UsageError(path + ": not a regular file, not a config file");
  // Parsing alone takes about half a second per MiB; salt's largest config is 6 KiB.
  constexpr std::uintmax_t kMaxBytes = 1 << 20;
  if (const auto bytes = std::filesystem::file_size(path, ec); !ec && bytes > kMaxBytes)
    throw UsageError(path + ": a config file of " + std::to_string(bytes) + " bytes; salt-cpp reads at most 1 MiB");
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot read config file");
  std::stringstream ss;
  ss << in.rdbuf();
  return load_text(ss.str(), path);
}

LoadedYaml load_yaml_string(const std::string& text, const std::string& where) { return load_text(text, where); }

YAML::Node parse_cli_value(const std::string& text) {
  // An empty argument ('') is the empty string the shell passed, not YAML's null:
  // `--trainer.default_root_dir ''` must not silently mean the default. null is null.
  if (text.empty()) return YAML::Node(std::string());
  // Nobody writes a YAML comment or a folded line on a command line: a '#' after a
  // space (`logs #1`, `#run`) or a newline in a path is part of what the shell
  // passed. YAML would drop the one and fold the other, silently giving another
  // value (or null): such a plain scalar is taken as the text itself.
  bool comment = false;
  for (std::size_t i = 0; i < text.size(); ++i)
    comment = comment || (text[i] == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t'));
  const bool newline = text.find('\n') != std::string::npos || text.find('\r') != std::string::npos;
  try {
    auto node = YAML::Load(text);
    if ((comment || newline) && (!node.IsDefined() || node.IsNull() || (node.IsScalar() && node.Tag() != "!" &&
                                                                          node.Scalar() != text)))
      return YAML::Node(text);
    if (!node.IsDefined()) return YAML::Node(YAML::NodeType::Null);
    return copy_tree(node);
  } catch (const YAML::Exception&) {
    return YAML::Node(text);
  }
}

}  // namespace salt::config
