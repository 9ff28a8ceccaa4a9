#include "core/env_switch.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "core/errors.h"

namespace salt {

std::optional<std::string> env_text(const EnvLookup& env, const std::string& name) {
  const char* v = env(name.c_str());
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::string env_choice(const std::string& name, const char* value, const std::vector<EnvValue>& values) {
  const std::string v = value ? value : "";
  if (v.empty()) return v;
  std::string expected;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (v == values[i].first) return v;
    const char* before = i == 0 ? "" : i + 1 == values.size() ? " or " : ", ";
    expected += before + values[i].first + " (" + values[i].second + ")";
  }
  throw UsageError(name + "=" + v + ": expected " + expected);
}

bool env_switch(const std::string& name, const char* value, bool otherwise, const std::string& off,
                const std::string& on) {
  const auto chosen = env_choice(name, value, {{"0", off}, {"1", on}});
  return chosen.empty() ? otherwise : chosen == "1";
}

std::optional<long> env_whole_number(const std::string& name, const char* value, long least, long most,
                                     const std::string& why) {
  const std::string v = value ? value : "";
  if (v.empty()) return std::nullopt;
  // Few enough digits that the number fits; anything else is refused below.
  const bool whole = v.size() <= 9 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long number = whole ? std::stol(v) : least - 1;
  if (number >= least && number <= most) return number;
  throw UsageError(name + "=" + v + ": expected a whole number from " + std::to_string(least) + " to " +
                   std::to_string(most) + (why.empty() ? "" : " (" + why + ")"));
}

std::optional<double> env_number(const std::string& name, const char* value, double least, double most,
                                 const std::string& what) {
  const std::string v = value ? value : "";
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  const double number = std::strtod(v.c_str(), &end);
  // strtod skips leading space: refused, as for whole numbers (" 2" is a typo).
  const bool plain = v.front() != ' ' && v.front() != '\t';
  if (plain && end == v.c_str() + v.size() && number >= least && number <= most) return number;
  const auto text = [](double x) {
    std::ostringstream out;
    if (x == static_cast<double>(static_cast<long long>(x))) out << static_cast<long long>(x);
    else out << x;
    return out.str();
  };
  throw UsageError(name + "=" + v + ": expected " + what + " from " + text(least) + " to " + text(most));
}

}  // namespace salt
