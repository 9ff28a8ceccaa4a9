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

fs::path resolved_folders(const fs::path& path) {
  std::error_code ec;
  const auto absolute = fs::absolute(path, ec);
  if (ec) return {};
  const auto name = absolute.filename();
  // A path ending in "..", "." or "/" names a folder: resolved whole, as the system would.
  if (name.empty() || name == "." || name == "..") {
    const auto whole = fs::weakly_canonical(absolute, ec);
    return ec ? fs::path() : whole;
  }
  const auto folders = fs::weakly_canonical(absolute.parent_path(), ec);
  return ec ? fs::path() : folders / name;
}

fs::path resolved_below(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  const auto real_dir = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec) return {};
  auto real_path = resolved_folders(path);
  const auto rel = real_path.lexically_relative(real_dir);
  if (rel.empty() || rel == "." || *rel.begin() == "..") return {};
  return real_path;
}

bool really_below(const fs::path& path, const fs::path& dir) { return !resolved_below(path, dir).empty(); }

}  // namespace salt
