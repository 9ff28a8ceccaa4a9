#include "core/env_switch.h"

#include <cstdlib>

#include "core/errors.h"

namespace salt {

bool env_switch(const std::string& name, const char* value, bool otherwise, const std::string& off,
                const std::string& on) {
  const std::string v = value ? value : "";
  if (v.empty()) return otherwise;
  if (v == "0") return false;
  if (v == "1") return true;
  throw UsageError(name + "=" + v + ": expected 0 (" + off + ") or 1 (" + on + ")");
}

bool env_switch(const std::string& name, bool otherwise, const std::string& off, const std::string& on) {
  return env_switch(name, std::getenv(name.c_str()), otherwise, off, on);
}

}  // namespace salt
