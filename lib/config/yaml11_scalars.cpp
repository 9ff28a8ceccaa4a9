#include "config/yaml11_scalars.h"

#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace salt::config {
namespace {

// Digits of `text` from `pos` in `base` with `_` separators dropped; empty when a
// character is not a digit of the base or no digit is present.
std::string digits_without_separators(const std::string& text, std::size_t pos, int base) {
  std::string out;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    if (c == '_') continue;
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : 99;
    if (d >= base) return {};
    out += c;
  }
  return out;
}

std::optional<long long> to_ll(const std::string& digits, int base, bool negative) {
  if (digits.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(digits.c_str(), &end, base);
  if (errno == ERANGE || *end != '\0') return std::nullopt;
  if (v > (negative ? 9223372036854775808ULL : 9223372036854775807ULL)) return std::nullopt;
  return negative ? static_cast<long long>(0 - v) : static_cast<long long>(v);
}

}  // namespace

std::optional<long long> yaml11_int(const std::string& text) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  if (i >= text.size() || text[i] == '_') return std::nullopt;
  if (text.compare(i, 2, "0b") == 0) return to_ll(digits_without_separators(text, i + 2, 2), 2, negative);
  if (text.compare(i, 2, "0x") == 0) return to_ll(digits_without_separators(text, i + 2, 16), 16, negative);
  if (text[i] == '0' && i + 1 < text.size()) return to_ll(digits_without_separators(text, i + 1, 8), 8, negative);
  return to_ll(digits_without_separators(text, i, 10), 10, negative);
}

std::optional<double> yaml11_float(const std::string& text) {
  static const std::array<std::pair<const char*, double>, 9> kSpecial = {{
      {".inf", HUGE_VAL}, {".Inf", HUGE_VAL}, {".INF", HUGE_VAL},
      {"-.inf", -HUGE_VAL}, {"-.Inf", -HUGE_VAL}, {"-.INF", -HUGE_VAL},
      {".nan", NAN}, {".NaN", NAN}, {".NAN", NAN}}};
  for (const auto& [spelling, value] : kSpecial)
    if (text == spelling || (!text.empty() && text[0] == '+' && text.substr(1) == spelling)) return value;
  // Python's float() allows `_` only between digits.
  std::string clean;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '_') { clean += text[i]; continue; }
    bool between = i > 0 && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
                   std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (!between) return std::nullopt;
  }
  if (clean.empty() || std::isspace(static_cast<unsigned char>(clean[0]))) return std::nullopt;
  // strtod also reads hex floats ("0x1p3"), which Python's float() refuses.
  if (clean.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return v;
}

std::optional<bool> yaml11_bool(const std::string& text) {
  for (const char* s : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
    if (text == s) return true;
  for (const char* s : {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
    if (text == s) return false;
  return std::nullopt;
}

}  // namespace salt::config
