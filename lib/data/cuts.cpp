#include "data/cuts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "data/h5_file.h"

namespace salt::data {
namespace {

using std::invalid_argument;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Python allows '_' between digits (1_000); literal_eval returns the same number.
std::string without_underscores(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '_') out += c;
  return out;
}

bool is_int_literal(const std::string& s) {
  size_t start = (s[0] == '+' || s[0] == '-') ? 1 : 0;
  if (start == s.size()) return false;
  return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(start), s.end(),
                     [](unsigned char c) { return std::isdigit(c); });
}

// One scalar of a cut value; throws invalid_argument if literal_eval would not give a number.
CutNumber parse_number(const std::string& raw) {
  const std::string s = without_underscores(trim(raw));
  const std::string l = lower(s);
  if (l == "nan") return CutNumber::of_float(std::nan(""));
  if (l == "inf" || l == "+inf") return CutNumber::of_float(std::numeric_limits<double>::infinity());
  if (l == "-inf") return CutNumber::of_float(-std::numeric_limits<double>::infinity());
  if (s == "True") return CutNumber::of_int(1);
  if (s == "False") return CutNumber::of_int(0);
  if (s.empty()) throw invalid_argument("an empty value");
  if (is_int_literal(s)) {
    try {
      return CutNumber::of_int(std::stoll(s));
    } catch (const std::out_of_range&) {
      throw invalid_argument("the value '" + raw + "' does not fit in 64 bits");
    }
  }
  // A float literal: digits, one point and an exponent only (no hex, no "infinity").
  const bool charset = std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isdigit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
  });
  size_t used = 0;
  double d = 0;
  try {
    if (charset) d = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (!charset || used != s.size()) throw invalid_argument("the value '" + raw + "' is not a number");
  return CutNumber::of_float(d);
}

// "(1,6,7)", "[1, 2]" or a scalar.
std::vector<CutNumber> parse_values(const std::string& s) {
  const bool list = !s.empty() && (s.front() == '(' || s.front() == '[');
  if (!list) return {parse_number(s)};
  const char close = s.front() == '(' ? ')' : ']';
  if (s.back() != close) throw invalid_argument("the list '" + s + "' is not closed");
  std::vector<CutNumber> out;
  std::stringstream items(s.substr(1, s.size() - 2));
  for (std::string item; std::getline(items, item, ',');) {
    if (trim(item).empty() && items.eof()) break;  // a trailing comma, as in (1,)
    out.push_back(parse_number(item));
  }
  if (out.empty()) throw invalid_argument("the list '" + s + "' is empty");
  return out;
}

// "%7==" -> modulus 7, op "=="; other operators unchanged.
void parse_operator(const std::string& token, Cut& cut) {
  static const std::vector<std::string> plain = {"==", "!=", ">=", "<=", ">", "<", "in", "notin"};
  if (std::find(plain.begin(), plain.end(), token) != plain.end()) {
    cut.op = token;
    return;
  }
  if (token.size() > 3 && token[0] == '%') {
    const std::string cmp = token.substr(token.size() - 2);
    const std::string n = token.substr(1, token.size() - 3);
    const bool known = cmp == "==" || cmp == "!=" || cmp == "<=" || cmp == ">=";
    if (known && is_int_literal(n) && n[0] != '+' && n[0] != '-') {
      const int64_t m = std::stoll(n);
      if (m >= 2 && m <= 100) {
        cut.modulus = m;
        cut.op = cmp;
        return;
      }
    }
  }
  throw invalid_argument("unknown operator '" + token + "' (known: ==, !=, >=, <=, >, <, in, notin, %N==, %N!=, %N<=, "
                         "%N>= with N in 2..100)");
}

// Python's x % m (the sign of m), for ints and floats.
CutNumber floor_mod(CutNumber x, int64_t m) {
  if (x.is_int) return CutNumber::of_int(((x.i % m) + m) % m);
  return CutNumber::of_float(x.d - static_cast<double>(m) * std::floor(x.d / static_cast<double>(m)));
}

// The cut value rounded to the column's precision (numpy's NEP 50 promotion).
double in_precision(double v, ColumnKind kind) {
  switch (kind) {
    case ColumnKind::Half: return h5::half_to_float(h5::float_to_half(static_cast<float>(v)));
    case ColumnKind::Float: return static_cast<float>(v);
    default: return v;
  }
}

template <class T>
bool compare(const std::string& op, T a, T b) {
  if (op == "==" || op == "in" || op == "notin") return a == b;
  if (op == "!=") return a != b;
  if (op == ">=") return a >= b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  return a < b;
}

bool matches(const std::string& op, CutNumber x, CutNumber v, ColumnKind kind) {
  if (x.is_int && v.is_int) return compare(op, x.i, v.i);
  // An int column against a float value promotes to float64; a float column keeps its precision.
  const double b = kind == ColumnKind::Int ? v.as_double() : in_precision(v.as_double(), kind);
  return compare(op, x.as_double(), b);
}

}  // namespace

Cut parse_cut(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) tokens.push_back(t);
  if (tokens.size() != 3)
    throw invalid_argument("expected '<variable> <operator> <value>' separated by spaces, e.g. 'd0 < 3.5'");
  Cut cut;
  cut.text = text;
  cut.variable = tokens[0];
  parse_operator(tokens[1], cut);
  cut.values = parse_values(tokens[2]);
  const bool membership = cut.op == "in" || cut.op == "notin";
  if (!membership && cut.values.size() != 1) throw invalid_argument("a list value needs the operator 'in' or 'notin'");
  const CutNumber& v = cut.values.front();
  if (!membership && !v.is_int && std::isnan(v.d) && ((cut.op != "==" && cut.op != "!=") || cut.modulus))
    throw invalid_argument("'nan' only makes sense with '==' or '!='");
  return cut;
}

bool Cut::passes(CutNumber x, ColumnKind kind) const {
  const CutNumber& v = values.front();
  if (values.size() == 1 && !v.is_int && std::isnan(v.d) && op != "in" && op != "notin") {
    const bool is_nan = !x.is_int && std::isnan(x.d);
    return op == "==" ? is_nan : !is_nan;  // ftag: "== nan" tests isnan
  }
  if (modulus) x = floor_mod(x, modulus);
  if (op == "in" || op == "notin") {
    const bool found =
        std::any_of(values.begin(), values.end(), [&](const CutNumber& e) { return matches("==", x, e, kind); });
    return op == "in" ? found : !found;
  }
  return matches(op, x, v, kind);
}

}  // namespace salt::data
