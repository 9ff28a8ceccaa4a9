// Quoting for the generated bash scripts: every path and flag the user typed
// goes through here, so spaces, quotes and $ in them stay literal.
#pragma once
#include <string>
#include <vector>

namespace salt::submit {

// As is when it holds only safe characters, else in single quotes.
std::string shell_quote(const std::string& word);
std::string shell_join(const std::vector<std::string>& words);

}  // namespace salt::submit
