#include "callbacks/monitor.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/errors.h"

namespace salt::callbacks {

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, std::fabs(value), std::chars_format::scientific).ptr;
  const std::string sci(buf, end);  // shortest digits: d.ddde+XX
  const auto e_at = sci.find('e');
  std::string digits = sci.substr(0, e_at);
  if (digits.size() > 1) digits.erase(1, 1);  // drop the point
  const int exponent = std::stoi(sci.substr(e_at + 1));
  const int n = static_cast<int>(digits.size());
  std::string out = std::signbit(value) ? "-" : "";
  if (exponent >= -4 && exponent < 16) {  // Python switches to exponent notation outside this range
    const int point = exponent + 1;       // digits before the decimal point
    if (point <= 0) out += "0." + std::string(-point, '0') + digits;
    else if (point >= n) out += digits + std::string(point - n, '0') + ".0";
    else out += digits.substr(0, point) + "." + digits.substr(point);
    return out;
  }
  out += digits.substr(0, 1);
  if (n > 1) out += "." + digits.substr(1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp;
}

std::string python_str_repr(const std::string& s) {
  const bool double_quotes = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == '\\' || c == quote) out += '\\';
    out += c;
  }
  return out + quote;
}

std::string python_kwargs_repr(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string out = "{";
  for (const auto& [key, value] : items) out += (out.size() > 1 ? ", " : "") + python_str_repr(key) + ": " + value;
  return out + "}";
}

std::string fixed(double value, int decimals) {
  if (!std::isfinite(value)) return python_float_repr(value);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string python_format(double value, bool integer, const std::string& spec, const std::string& where) {
  // [sign][0][width][.precision][type]: the part of Python's format spec templates use.
  std::size_t i = 0;
  std::string flags;
  if (i < spec.size() && (spec[i] == '+' || spec[i] == ' ')) flags += spec[i++];
  else if (i < spec.size() && spec[i] == '-') ++i;  // Python's default: a sign for negatives only
  if (i < spec.size() && spec[i] == '0') flags += spec[i++];
  std::string width, precision;
  while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) width += spec[i++];
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) precision += spec[i++];
    if (precision.empty()) throw UsageError(where + ": format spec '" + spec + "' has a '.' without a precision");
  }
  const std::string type = spec.substr(i);
  if (type.size() > 1 || (type.size() == 1 && std::string("dfFeEgG%").find(type) == std::string::npos))
    throw UsageError(where + ": format spec '" + spec + "' is not one salt-cpp formats (use e.g. d, 03d, .2f, .3e)");
  char buf[128];
  const std::string head = "%" + flags + width;
  if (type == "d" || (type.empty() && integer && precision.empty())) {
    if (!integer) throw UsageError(where + ": format spec '" + spec + "' is for integers, and the value is a float");
    std::snprintf(buf, sizeof buf, (head + "lld").c_str(), static_cast<long long>(value));
    return buf;
  }
  if (type.empty() && precision.empty()) {  // str(): repr, right-aligned in the width
    const auto r = python_float_repr(value);
    const auto w = width.empty() ? 0 : std::stoul(width);
    return r.size() >= w ? r : std::string(w - r.size(), flags.find('0') != std::string::npos ? '0' : ' ') + r;
  }
  if (type == "%") {
    std::snprintf(buf, sizeof buf, (head + "." + (precision.empty() ? "6" : precision) + "f%%").c_str(), value * 100);
    return buf;
  }
  const std::string conversion = type.empty() ? "g" : type;
  std::snprintf(buf, sizeof buf, (head + "." + (precision.empty() ? "6" : precision) + conversion).c_str(), value);
  return buf;
}

std::string join_keys(const std::map<std::string, double>& metrics) {
  std::string out;
  for (const auto& [k, v] : metrics) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "none yet" : out;
}

const serialize::PyValue& required_entry(const serialize::PyValue& state, const std::string& key) {
  const auto* v = state.is_mapping() ? state.find(key) : nullptr;
  if (!v) throw std::invalid_argument("the callback state has no '" + key + "'");
  return *v;
}

double score_of(const serialize::PyValue& value) {
  if (value.is_tensor()) return value.as_tensor().item<double>();
  return value.as_number();
}

bool validates_once_per_epoch(const config::TrainerConfig& trainer) {
  const auto& v = trainer.val_check_interval;
  return v.kind == config::BatchLimit::Kind::kAll || (v.kind == config::BatchLimit::Kind::kFraction && v.value == 1.0);
}

}  // namespace salt::callbacks
