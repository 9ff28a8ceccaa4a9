#include "config/run_args.h"

#include <fmt/format.h>

#include <sstream>

#include "config/did_you_mean.h"
#include "config/schema.h"
#include "config/yaml11_scalars.h"
#include "core/errors.h"

namespace salt::config {
namespace {

// Throws "unknown key" for a dotted key whose first unknown part lies in a struct
// of the schema (keys under components and lists are left to validation).
void check_known_key(const std::string& tok, const std::string& key) {
  TypeP type = root_type();
  std::string path;
  for (size_t start = 0; type && type->kind == Type::Kind::kStruct;) {
    const auto dot = key.find('.', start);
    const auto part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    path = path.empty() ? part : path + "." + part;
    const Field* f = type->field(part);
    if (!f) {
      std::vector<std::string> names;
      for (const auto& field : type->fields) names.push_back(field.name);
      throw UsageError("command line '" + tok + "': '" + path + "': unknown key" + did_you_mean(part, names));
    }
    if (dot == std::string::npos) return;
    type = f->type;
    start = dot + 1;
  }
}

}  // namespace

namespace {

// Flags with their own spelling. `key` is the config key they set (its help text
// lives in the schema); flags without a key act on the command itself.
struct FlagSpec {
  const char* short_name;
  const char* long_name;
  const char* key;
  bool takes_value;
  const char* metavar;
  const char* help;  // only for flags without a key
};

constexpr FlagSpec kFlags[] = {
    {"-c", "--config", nullptr, true, "FILE", "Config file; merged where it appears, so order matters (repeatable)."},
    {"", "--print_config", nullptr, false, "", "Print the fully resolved config (all defaults explicit) and exit."},
    {"-h", "--help", nullptr, false, "", "Show this help and exit."},
    {"", "--seed_everything", "seed_everything", true, "INT|true", ""},
    {"", "--ckpt_path", "ckpt_path", true, "FILE", ""},
    {"", "--init_from", "init_from", true, "FILE", ""},
    {"-n", "--name", "name", true, "NAME", ""},
    {"-f", "--force", "force", false, "", ""},
    {"-t", "--tag", "tag", false, "", ""},
    {"", "--compile", "compile", false, "", ""},
    {"-oc", "--overwrite_config", "overwrite_config", false, "", ""},
    {"-ls", "--log_suffix", "log_suffix", true, "SUFFIX", ""},
};

const FlagSpec* find_flag(const std::string& name) {
  for (const auto& f : kFlags)
    if (name == f.long_name || (*f.short_name && name == f.short_name)) return &f;
  return nullptr;
}

std::vector<std::string> flag_names() {
  std::vector<std::string> names;
  for (const auto& f : kFlags) names.emplace_back(f.long_name);
  for (const auto& f : root_type()->fields) names.push_back("--" + f.name);
  return names;
}

}  // namespace

RunArgs parse_run_args(const std::string& command, const std::vector<std::string>& args) {
  // Each setting is merged into the tree by a walk of yaml-cpp's mappings (linear in
  // their keys): many thousands would take minutes. No real command line comes near.
  constexpr std::size_t kMaxArgs = 2'000;
  if (args.size() > kMaxArgs)
    throw UsageError("the command line has " + std::to_string(args.size()) + " arguments; salt-cpp takes at most " +
                     std::to_string(kMaxArgs) + " (put the settings in a config file)");
  RunArgs run;
  run.command = command;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& tok = args[i];
    auto eq = tok.find('=');
    std::string name = tok.substr(0, eq);
    bool has_inline = eq != std::string::npos;
    std::string inline_value = has_inline ? tok.substr(eq + 1) : "";

    auto take_value = [&](const std::string& what) -> std::string {
      if (has_inline) return inline_value;
      if (i + 1 >= args.size()) throw UsageError("command line '" + tok + "': " + what + " needs a value");
      return args[++i];
    };

    if (const auto* flag = find_flag(name)) {
      std::string flag_name = flag->long_name;
      if (flag_name == "--help") {
        run.help = true;
      } else if (flag_name == "--print_config") {
        run.print_config = true;  // salt's optional "=skip_null" etc. is accepted and has no effect
      } else if (flag_name == "--config") {
        auto file = take_value(name);
        run.ops.push_back({ConfigOp::Kind::kMergeFile, file, "", tok});
      } else if (flag->takes_value) {
        auto value = take_value(name);
        run.ops.push_back({ConfigOp::Kind::kSet, flag->key, value, has_inline ? tok : tok + " " + value});
      } else {
        run.ops.push_back({ConfigOp::Kind::kSet, flag->key, has_inline ? inline_value : "true", tok});
      }
      continue;
    }
    if (tok.rfind("--", 0) == 0 && tok.size() > 2) {
      std::string key = name.substr(2);
      bool append = !key.empty() && key.back() == '+';
      if (append) key.pop_back();
      if (key.empty()) throw UsageError("command line '" + tok + "': missing key");
      std::string value;
      std::string shown = tok;
      if (has_inline) {
        value = inline_value;
      } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
        value = args[++i];
        shown = tok + " " + value;
      } else {
        check_known_key(tok, key);  // a misspelt key is the likelier mistake: say that first
        throw UsageError("command line '" + tok + "': needs a value (--" + key + "=VALUE or --" + key + " VALUE)");
      }
      run.ops.push_back({append ? ConfigOp::Kind::kAppend : ConfigOp::Kind::kSet, key, value, shown});
      continue;
    }
    throw UsageError("command line '" + tok + "': unexpected argument" + did_you_mean(name, flag_names()) +
                     " (see 'salt " + command + " --help')");
  }
  return run;
}

namespace {

std::string default_text(const Field& f) {
  if (f.required()) return "required";
  // A float as Python prints it (0.05, not yaml-cpp's 0.050000000000000003).
  const auto& v = f.default_value;
  if (v.IsScalar() && v.Scalar().find_first_of(".eE") != std::string::npos)
    if (const auto x = yaml11_float(v.Scalar())) return fmt::format("default: {}", *x);
  YAML::Emitter out;
  out.SetNullFormat(YAML::LowerNull);
  out << YAML::Flow << f.default_value;
  return std::string("default: ") + out.c_str();
}

std::string support_text(const Field& f) {
  if (f.support == Support::kIgnored) return " [no effect: " + f.note + "]";
  if (f.support == Support::kUnsupported) return " [not supported: " + f.note + "]";
  return "";
}

void describe_fields(std::ostringstream& out, const Type& type, const std::string& prefix, int depth) {
  for (const auto& f : type.fields) {
    auto key = prefix.empty() ? f.name : prefix + "." + f.name;
    if (f.type->kind == Type::Kind::kStruct) {
      out << "\n  --" << key << ".*  (" << f.help << ")\n";
      describe_fields(out, *f.type, key, depth + 1);
      continue;
    }
    out << "  --" << key << " " << f.type->describe() << "  (" << default_text(f) << ")\n      " << f.help
        << support_text(f) << "\n";
  }
}

}  // namespace

std::string run_help(const std::string& command) {
  std::ostringstream out;
  out << "Usage: salt " << command << " [-c CONFIG]... [flags] [--KEY=VALUE | --KEY VALUE | --KEY+=VALUE]...\n\n"
      << "configs/base.yaml applies first; then flags, --config files and --KEY=VALUE overrides apply strictly\n"
      << "left to right. Maps merge, lists are replaced, --KEY+=VALUE appends to a list, values are parsed as\n"
      << "YAML (null, true, [1,2], 1e-5). Inside a component, init_args may be left out of a key\n"
      << "(--model.model.encoder.num_layers=2).\n\nFlags:\n";
  const auto& root = *root_type();
  for (const auto& f : kFlags) {
    std::string names = *f.short_name ? std::string(f.short_name) + ", " + f.long_name : std::string("    ") + f.long_name;
    if (f.takes_value) names += std::string(" ") + f.metavar;
    std::string help = f.help;
    if (f.key) {
      const auto* field = root.field(f.key);
      help = field->help + " (" + default_text(*field) + ")" + support_text(*field);
    }
    out << "  " << names << "\n      " << help << "\n";
  }
  out << "\nConfig keys (type, default, help):\n";
  for (const auto& f : root.fields) {
    if (f.type->kind == Type::Kind::kStruct) {
      out << "\n" << f.name << ": " << f.help << "\n";
      describe_fields(out, *f.type, f.name, 1);
    }
  }
  out << "\nComponents: a key of type component(X) takes {class_path: C, init_args: {...}} or just C,\n"
      << "where C is one of the class paths of category X below.\n";
  for (const auto& spec : components().all()) {
    out << "\n" << spec.class_path << "  [" << spec.category << "] " << spec.help;
    if (spec.support == Support::kIgnored) out << " [no effect: " << spec.note << "]";
    if (spec.support == Support::kUnsupported) out << " [not supported: " << spec.note << "]";
    if (spec.support == Support::kSubstituted) out << " [" << spec.note << "]";
    out << "\n";
    if (spec.init_args->kind == Type::Kind::kStruct) describe_fields(out, *spec.init_args, "init_args", 1);
    else out << "  init_args: any keys\n";
  }
  return out.str();
}

}  // namespace salt::config
