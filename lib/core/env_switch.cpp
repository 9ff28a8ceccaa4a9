#include "core/env_switch.h"

#include <cstdlib>

#include "core/errors.h"

namespace salt {

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

bool env_switch(const std::string& name, bool otherwise, const std::string& off, const std::string& on) {
  return env_switch(name, std::getenv(name.c_str()), otherwise, off, on);
}

}  // namespace salt
