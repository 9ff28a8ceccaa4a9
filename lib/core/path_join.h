// Joining a name from a config onto a directory (a logger's name and version, a
// task's plot file, a checkpoint's file name): the result must stay below that
// directory, whatever the name holds. Every configured name that becomes part of a
// path goes through here, and so does every removal of a file a run wrote into a
// folder whose sub-folders may since have been replaced by symbolic links.
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

// Whether `path` really lies below the folder `dir`: its folders resolved through
// any symbolic links (a link inside `dir` may lead out of it), and `dir` resolved
// the same way (a `dir` that is itself a link is the user's choice of folder). The
// last part of `path` is taken as it is: removing a link removes the link only.
// Parts that do not exist yet are taken lexically, as they will be created.
bool really_below(const std::filesystem::path& path, const std::filesystem::path& dir);

// `path` with its folders resolved as really_below resolves them (its last part
// as it is): what a removal should name, so that a link swapped in afterwards
// cannot redirect it. Empty where the folders cannot be resolved.
std::filesystem::path resolved_folders(const std::filesystem::path& path);

// really_below's answer and what it resolved, in one resolution: `path` with its
// folders resolved when that lies below `dir`, else empty. A removal names the
// result, so the path it checked is the path it removes.
std::filesystem::path resolved_below(const std::filesystem::path& path, const std::filesystem::path& dir);

}  // namespace salt
