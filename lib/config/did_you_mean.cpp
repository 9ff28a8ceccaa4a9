#include "config/did_you_mean.h"

#include <algorithm>
#include <cctype>

namespace salt::config {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t subst = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const auto& c : candidates) {
    auto d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  // A third of the word's length, at least 2: catches typos, not unrelated words.
  std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_distance <= limit ? best : "";
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  auto best = closest_match(word, candidates);
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

}  // namespace salt::config
