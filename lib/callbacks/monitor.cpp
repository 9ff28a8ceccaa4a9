#include "callbacks/monitor.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "core/errors.h"
#include "core/path_join.h"

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

namespace {

// The widest field and the most digits a file-name template may ask for: beyond
// that a name no file system takes (255 bytes a part), and printf's own limits.
constexpr int kMaxFormatDigits = 100;

// [sign][0][width][.precision][type]: the part of Python's format spec templates use.
struct FormatSpec {
  std::string flags;  // "+", " " and/or "0"
  int width = 0;      // 0: none
  std::optional<int> precision;
  std::string type;  // "", or one of dfFeEgG%
};

// A run of digits as a width or precision, refused past kMaxFormatDigits (also
// before it could overflow: "099999999999999999999").
int read_digits(const std::string& spec, std::size_t& i, const char* what, const std::string& where) {
  int value = 0;
  for (; i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i])); ++i) {
    value = value * 10 + (spec[i] - '0');
    if (value > kMaxFormatDigits)
      throw UsageError(where + ": format spec '" + shown_in_message(spec, 60) + "' asks for a " + what + " over " +
                       std::to_string(kMaxFormatDigits));
  }
  return value;
}

FormatSpec parse_format_spec(const std::string& spec, bool integer, const std::string& where) {
  FormatSpec f;
  std::size_t i = 0;
  if (i < spec.size() && (spec[i] == '+' || spec[i] == ' ')) f.flags += spec[i++];
  else if (i < spec.size() && spec[i] == '-') ++i;  // Python's default: a sign for negatives only
  if (i < spec.size() && spec[i] == '0') f.flags += spec[i++];
  f.width = read_digits(spec, i, "width", where);
  if (i < spec.size() && spec[i] == '.') {
    const auto digits_at = ++i;
    f.precision = read_digits(spec, i, "precision", where);
    if (i == digits_at)
      throw UsageError(where + ": format spec '" + shown_in_message(spec, 60) + "' has a '.' without a precision");
  }
  f.type = spec.substr(i);
  if (f.type.size() > 1 || (f.type.size() == 1 && std::string("dfFeEgG%").find(f.type) == std::string::npos))
    throw UsageError(where + ": format spec '" + shown_in_message(spec, 60) +
                     "' is not one salt-cpp formats (use e.g. d, 03d, .2f, .3e)");
  if (f.type == "d" && !integer)
    throw UsageError(where + ": format spec '" + shown_in_message(spec, 60) +
                     "' is for integers, and the value is a float");
  return f;
}

// snprintf into a string of the length it needs (a width of 100 and 100 decimals
// of 3e38 are longer than any fixed buffer).
template <class T>
std::string printf_string(const std::string& format, T value, const std::string& where) {
  const int n = std::snprintf(nullptr, 0, format.c_str(), value);
  if (n < 0) throw UsageError(where + ": cannot format the value " + python_float_repr(static_cast<double>(value)));
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), format.c_str(), value);
  out.pop_back();
  return out;
}

}  // namespace

void check_format_spec(const std::string& spec, bool integer, const std::string& where) {
  parse_format_spec(spec, integer, where);
}

std::string python_format(double value, bool integer, const std::string& spec, const std::string& where) {
  const auto f = parse_format_spec(spec, integer, where);
  const std::string head = "%" + f.flags + (f.width ? std::to_string(f.width) : "");
  if (f.type == "d" || (f.type.empty() && integer && !f.precision))
    return printf_string(head + "lld", static_cast<long long>(value), where);
  if (f.type.empty() && !f.precision) {  // str(): repr, right-aligned in the width
    const auto r = python_float_repr(value);
    const auto w = static_cast<std::size_t>(f.width);
    return r.size() >= w ? r : std::string(w - r.size(), f.flags.find('0') != std::string::npos ? '0' : ' ') + r;
  }
  const std::string precision = "." + std::to_string(f.precision.value_or(6));
  if (f.type == "%") return printf_string(head + precision + "f%%", value * 100, where);
  return printf_string(head + precision + (f.type.empty() ? "g" : f.type), value, where);
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
