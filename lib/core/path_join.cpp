#include "core/path_join.h"

#include "core/errors.h"

namespace salt {

namespace fs = std::filesystem;

std::string shown_in_message(const std::string& text, std::size_t limit) {
  std::string shown;  // a NUL would end the message's C string
  for (std::size_t i = 0; i < text.size() && i < limit; ++i)
    shown += text[i] == '\0' ? std::string("\\0") : std::string(1, text[i]);
  if (text.size() > limit) shown += "... (" + std::to_string(text.size() - limit) + " more characters)";
  return shown;
}

bool stays_below(const std::string& name) {
  if (name.find('\0') != std::string::npos) return false;
  const fs::path relative(name);
  if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory()) return false;
  for (const auto& part : relative)
    if (part == "..") return false;
  return true;
}

fs::path join_below(const fs::path& base, const std::string& name, const std::string& what) {
  if (name.empty()) return base;
  if (!stays_below(name))
    throw UsageError(what + " '" + shown_in_message(name) + "' must name a folder below " + base.string() +
                     " (not an absolute path, no '..')");
  return base / fs::path(name);
}

}  // namespace salt
