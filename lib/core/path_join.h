// Joining a name from a config onto a directory (a logger's name and version, a
// task's plot file, a checkpoint's file name): the result must stay below that
// directory, whatever the name holds. Every configured name that becomes part of a
// path goes through here.
#pragma once
#include <filesystem>
#include <string>

namespace salt {

// Configured text as an error message shows it: NULs as \0, and at most `limit`
// characters of it (then "...", and how many more there were), so that a message
// stays one readable line whatever the user wrote.
std::string shown_in_message(const std::string& text, std::size_t limit = 200);

// Whether `name`, joined onto any folder, stays below it: not absolute, no ".."
// part, no NUL (empty stays: it is the folder itself).
bool stays_below(const std::string& name);

// base / name, where `name` may hold several folders ("a/b") but is neither
// absolute nor climbs out with "..". An empty name gives `base`. Otherwise throws
// UsageError naming `what` (e.g. "TensorBoardLogger 'name'") and the value.
std::filesystem::path join_below(const std::filesystem::path& base, const std::string& name, const std::string& what);

}  // namespace salt
