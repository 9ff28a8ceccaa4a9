// "did you mean ...?" for misspelt keys, class paths and choices.
#pragma once
#include <string>
#include <vector>

namespace salt::config {

std::size_t edit_distance(const std::string& a, const std::string& b);

// The closest candidate if it is close enough to be a likely typo, else "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace salt::config
