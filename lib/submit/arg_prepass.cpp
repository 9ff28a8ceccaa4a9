#include "submit/arg_prepass.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "core/errors.h"
#include "submit/option_checks.h"

namespace salt::submit {
namespace {

// "--slurm.mem=4G" with prefix "slurm" -> {"mem", "4G"}; nullopt when not a passthrough.
std::optional<Passthrough> as_passthrough(const std::string& tok, const std::string& prefix) {
  const std::string head = "--" + prefix + ".";
  if (tok.rfind(head, 0) != 0) return std::nullopt;
  Passthrough p;
  p.token = tok;
  auto rest = tok.substr(head.size());
  auto eq = rest.find('=');
  p.key = rest.substr(0, eq);
  if (eq != std::string::npos) p.value = rest.substr(eq + 1);
  if (p.key.empty()) throw UsageError("command line '" + printable(tok) + "': missing key after '" + head + "'");
  check_single_line(head + "KEY", p.key);
  if (p.value) check_single_line(head + p.key, *p.value);
  return p;
}

}  // namespace

SplitArgs split_args(const std::vector<std::string>& args, const std::map<std::string, std::string>& aliases,
                     const std::string& batch_prefix) {
  SplitArgs out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& tok = args[i];
    if (tok == "--") {  // everything after it is positional: leave to CLI11
      out.args.insert(out.args.end(), args.begin() + static_cast<long>(i), args.end());
      break;
    }
    if (auto p = as_passthrough(tok, batch_prefix)) {
      out.batch.push_back(*p);
      continue;
    }
    if (auto p = as_passthrough(tok, "config")) {
      out.config.push_back(*p);
      continue;
    }
    auto eq = tok.find('=');
    auto it = aliases.find(tok.substr(0, eq));
    if (it != aliases.end()) {
      out.args.push_back(eq == std::string::npos ? it->second : it->second + tok.substr(eq));
      continue;
    }
    out.args.push_back(tok);
  }
  return out;
}

std::string salt_flag(const Passthrough& p) { return p.value ? "--" + p.key + "=" + *p.value : "--" + p.key; }

bool wants_help(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--help") != args.end() ||
         std::find(args.begin(), args.end(), "-h") != args.end();
}

void parse_with(CLI::App& app, const std::vector<std::string>& args, const std::string& command) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw UsageError(command + ": " + printable(e.what()) + " (see 'salt " + command + " --help')");
  }
  check_single_line(app);
}

}  // namespace salt::submit
