#include "parallel/slurm_nodelist.h"

#include <cctype>

#include "core/errors.h"

namespace salt::parallel {
namespace {

// Splits at commas that are not inside brackets.
std::vector<std::string> split_top_level(const std::string& list, const std::string& what) {
  std::vector<std::string> items;
  std::string current;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) throw InputError(what + " '" + list + "': ']' without '['");
    if (c == ',' && depth == 0) {
      items.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (depth != 0) throw InputError(what + " '" + list + "': '[' without ']'");
  items.push_back(current);
  return items;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// "01-04,07" -> 01 02 03 04 07, zero padding kept from the range's start.
std::vector<std::string> expand_ranges(const std::string& spec, const std::string& list, const std::string& what) {
  std::vector<std::string> out;
  for (const auto& part : split_top_level(spec, what)) {
    const auto dash = part.find('-');
    const std::string lo = part.substr(0, dash);
    const std::string hi = dash == std::string::npos ? lo : part.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > 9 || hi.size() > 9)
      throw InputError(what + " '" + list + "': '[" + spec + "]' is not a list of numbers and ranges");
    const long a = std::stol(lo), b = std::stol(hi);
    if (b < a) throw InputError(what + " '" + list + "': range '" + part + "' runs backwards");
    if (b - a > 100000) throw InputError(what + " '" + list + "': range '" + part + "' is implausibly large");
    for (long v = a; v <= b; ++v) {
      std::string digits = std::to_string(v);
      if (digits.size() < lo.size()) digits.insert(0, lo.size() - digits.size(), '0');
      out.push_back(digits);
    }
  }
  return out;
}

// One item, e.g. "rack[1-2]-n[01-02]": literal text and bracket groups, multiplied out.
std::vector<std::string> expand_item(const std::string& item, const std::string& list, const std::string& what) {
  std::vector<std::string> names{""};
  std::size_t i = 0;
  while (i < item.size()) {
    if (item[i] == '[') {
      const auto close = item.find(']', i);  // balanced: checked by split_top_level
      auto values = expand_ranges(item.substr(i + 1, close - i - 1), list, what);
      std::vector<std::string> next;
      for (const auto& prefix : names)
        for (const auto& v : values) next.push_back(prefix + v);
      names.swap(next);
      i = close + 1;
    } else {
      const auto open = item.find('[', i);
      const auto text = item.substr(i, open == std::string::npos ? std::string::npos : open - i);
      for (auto& n : names) n += text;
      i = open == std::string::npos ? item.size() : open;
    }
  }
  return names;
}

}  // namespace

std::vector<std::string> expand_nodelist(const std::string& list, const std::string& what) {
  std::vector<std::string> hosts;
  for (const auto& item : split_top_level(list, what)) {
    if (item.empty()) throw InputError(what + " '" + list + "': empty host name");
    for (auto& h : expand_item(item, list, what)) hosts.push_back(std::move(h));
  }
  return hosts;
}

std::string first_host(const std::string& list, const std::string& what) {
  const auto items = split_top_level(list, what);
  if (items.front().empty()) throw InputError(what + " '" + list + "' is empty");
  // Brackets still have to be well formed; the first expansion is the first host.
  return expand_item(items.front(), list, what).front();
}

}  // namespace salt::parallel
