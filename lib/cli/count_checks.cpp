#include "cli/count_checks.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

namespace salt::cli {

namespace {

CLI::Validator in_range(long long min, long long max, const std::string& wanted) {
  return CLI::Validator(
      [min, max, wanted](std::string& text) -> std::string {
        const bool negative = !text.empty() && text[0] == '-';
        const std::string digits = negative ? text.substr(1) : text;
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
          return "must be " + wanted + ", not '" + text + "'";
        errno = 0;
        const long long value = std::strtoll(text.c_str(), nullptr, 10);
        if (errno == ERANGE || value < min || value > max) return "must be " + wanted + ", not " + text;
        return "";
      },
      wanted);
}

CLI::Validator at_least(long long min, const std::string& wanted) { return in_range(min, LLONG_MAX, wanted); }

}  // namespace

CLI::Validator positive_count() { return at_least(1, "a whole number >= 1"); }
CLI::Validator count_from(long long min, long long max) {
  return in_range(min, max, "a whole number from " + std::to_string(min) + " to " + std::to_string(max));
}
CLI::Validator non_negative_count() { return at_least(0, "a whole number >= 0"); }

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return "must be a whole number from 0 to 18446744073709551615, not '" + text + "'";
        errno = 0;
        (void)std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE) return "must be a whole number from 0 to 18446744073709551615, not " + text;
        return "";
      },
      "seed");
}

}  // namespace salt::cli
