// Writing run artefacts so that a crash never leaves half a file behind.
#pragma once
#include <filesystem>
#include <string>

namespace salt::repro {

// Writes `content` to a temporary file next to `path`, flushes it to disk and
// renames it over `path`: readers see the old file or the whole new one, never
// a torn one. Throws salt::InputError naming the path on failure (and removes
// the temporary file).
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

}  // namespace salt::repro
