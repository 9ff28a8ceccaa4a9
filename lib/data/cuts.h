// Cut strings as the ftag package reads them (ftag.Cuts.from_list): salt's
// `data.selections` ("d0 < 3.5") and the flavour definitions of the labeller
// ("R10TruthLabel_R22v1 in (1,6,7)").
//
// A cut is "<variable> <operator> <value>". Operators: == != >= <= > <, `in` and
// `notin` (a list or tuple value), and %N== %N!= %N<= %N>= for N in 2..100 (the
// variable modulo N, Python's sign convention). Values are read like Python's
// literal_eval: ints stay ints, anything with a point or exponent is a float,
// True/False are 1/0, and nan/inf/+inf/-inf are accepted ("nan" only with == or
// !=, which then test for NaN).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace salt::data {

// An int or a float, as literal_eval returns them (an int compares exactly).
struct CutNumber {
  bool is_int = true;
  int64_t i = 0;
  double d = 0.0;
  static CutNumber of_int(int64_t v) { return {true, v, 0.0}; }
  static CutNumber of_float(double v) { return {false, 0, v}; }
  double as_double() const { return is_int ? static_cast<double>(i) : d; }
};

// The element type of the column a cut reads. numpy (NEP 50) compares a float
// column with a Python number in the column's own precision, so a cut "x <= 0.1"
// on float32 data compares with float32(0.1); the kind says which rounding to use.
enum class ColumnKind { Int, Half, Float, Double };

struct Cut {
  std::string text;      // as written
  std::string variable;
  std::string op;        // == != >= <= > < in notin (the comparison after any modulo)
  int64_t modulus = 0;   // %N operators: compare variable mod N; 0 = none
  std::vector<CutNumber> values;  // one value, or the list of in / notin

  // Whether a value of the column passes (NaN fails every test but !=, as in numpy).
  bool passes(CutNumber x, ColumnKind kind) const;
};

// Parses one cut; throws std::invalid_argument saying what is wrong with it.
Cut parse_cut(const std::string& text);

}  // namespace salt::data
