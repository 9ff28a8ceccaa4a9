// Joining a name from a config onto a directory (a logger's name and version, a
// task's plot file): the result must stay below that directory, whatever the
// name holds. Every configured name that becomes part of a path goes through here.
#pragma once
#include <filesystem>
#include <string>

namespace salt {

// base / name, where `name` may hold several folders ("a/b") but is neither
// absolute nor climbs out with "..". An empty name gives `base`. Otherwise throws
// UsageError naming `what` (e.g. "TensorBoardLogger 'name'") and the value.
std::filesystem::path join_below(const std::filesystem::path& base, const std::string& name, const std::string& what);

}  // namespace salt
