// The text of the one error line main() prints (lib/cli/cli_main.cpp). Errors
// quote user input (a flag, a key, a value, bytes of a binary "config", a path), so
// what is shown is bounded: a 10,000-character command-line key was echoed whole.
#pragma once
#include <cstddef>
#include <string>

namespace salt {

// A word (a run without spaces: a key, a value, a path) longer than this is shown
// as its first and last half around an ellipsis.
constexpr std::size_t kMaxErrorWord = 200;
// The whole line likewise, for input with spaces in it.
constexpr std::size_t kMaxErrorLine = 1000;

// `text` on one line: newlines shown as \n and \r, tabs as spaces, other control
// characters as '?'; then capped as above ("abc…xyz"), never splitting a UTF-8
// character.
std::string error_line(const std::string& text);

}  // namespace salt
