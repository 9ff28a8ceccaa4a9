#include "deploy/output_spec.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "config/tree_ops.h"
#include "core/errors.h"

namespace salt::deploy {

namespace {

bool valid_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

Combination parse_combination(const std::string& expr) {
  const std::string where = "--combine_outputs '" + expr + "'";
  auto items = config::split_at(expr, ',');
  if (items.size() < 2) throw UsageError(where + ": expected NAME,TERM[,TERM...] with TERM = [SCALE*]OUTPUT");
  Combination c;
  c.output = items[0];
  if (!valid_name(c.output)) throw UsageError(where + ": '" + c.output + "' is not a valid output name");
  for (size_t i = 1; i < items.size(); ++i) {
    const auto& term = items[i];
    auto star = term.find('*');
    double scale = 1.0;
    std::string name = term;
    if (star != std::string::npos) {
      const auto text = term.substr(0, star);
      name = term.substr(star + 1);
      size_t used = 0;
      try {
        scale = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (text.empty() || used != text.size() || !std::isfinite(scale))
        throw UsageError(where + ": '" + text + "' in '" + term + "' is not a number");
    }
    if (!valid_name(name)) throw UsageError(where + ": '" + term + "' does not name an output");
    c.terms.emplace_back(scale, name);
  }
  return c;
}

std::pair<std::string, std::string> parse_rename(const std::string& expr) {
  auto parts = config::split_at(expr, ':');
  if (parts.size() != 2 || !valid_name(parts[0]) || !valid_name(parts[1]))
    throw UsageError("--rename '" + expr + "': expected OLD:NEW (output names without the model prefix)");
  return {parts[0], parts[1]};
}

std::vector<std::string> rewrite_output_names(const std::vector<std::string>& outputs, const std::string& model_name,
                                              const std::vector<std::pair<std::string, std::string>>& renames,
                                              const std::vector<Combination>& combinations) {
  auto names = outputs;
  const auto prefix = model_name + "_";
  auto known = [&](const std::string& short_name) {
    return std::find(names.begin(), names.end(), prefix + short_name);
  };
  auto listing = [&] {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n.substr(std::min(n.size(), prefix.size()));
    return s;
  };
  for (const auto& [from, to] : renames) {
    auto it = known(from);
    if (it == names.end()) throw UsageError("--rename " + from + ":" + to + ": no output '" + from + "' (outputs: " + listing() + ")");
    *it = prefix + to;
  }
  for (const auto& c : combinations) {
    for (const auto& [_, term] : c.terms)
      if (known(term) == names.end())
        throw UsageError("--combine_outputs " + c.output + ": no output '" + term + "' (outputs: " + listing() + ")");
    names.push_back(prefix + c.output);
  }
  std::set<std::string> seen;
  for (const auto& n : names)
    if (!seen.insert(n).second) throw UsageError("to_onnx: two outputs named '" + n + "' after --rename/--combine_outputs");
  return names;
}

}  // namespace salt::deploy
