// What the Lightning callbacks that watch a metric share (EarlyStopping,
// ModelCheckpoint): the min/max comparison, Python's spelling of values in
// their messages, state keys and file names, and reading their saved state.
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "config/trainer_config.h"
#include "serialize/py_value.h"

namespace salt::callbacks {

// Lightning's mode: "min" (lower is better, torch.lt) or "max" (torch.gt).
class MonitorMode {
 public:
  explicit MonitorMode(std::string mode) : max_(mode == "max") {}
  bool operator()(double a, double b) const { return max_ ? a > b : a < b; }  // a strictly better than b
  float worst() const { return max_ ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity(); }
  const char* order() const { return max_ ? ">" : "<"; }
  bool is_max() const { return max_; }

 private:
  bool max_;
};

// Python's repr() of a float (shortest round trip: 0.1, 1e-05, 1.0) and of a str.
std::string python_float_repr(double value);
std::string python_str_repr(const std::string& s);
// repr() of a dict of already repr'd values: {'monitor': 'val/loss', 'mode': 'min'}
// (Lightning's state keys).
std::string python_kwargs_repr(const std::vector<std::pair<std::string, std::string>>& items);
// A value formatted as Python's format(value, spec) for the specs file-name
// templates use ("", "d", "03d", ".2f", ".3e", ...); `integer`: an int value.
// A spec Python would refuse for the value is a UsageError naming `where`.
// A width or precision over 100 is refused too (no file system takes such a name).
std::string python_format(double value, bool integer, const std::string& spec, const std::string& where);
// The same checks without formatting: for a template read from a config.
void check_format_spec(const std::string& spec, bool integer, const std::string& where);
std::string fixed(double value, int decimals);  // Python's f"{value:.Nf}"

std::string join_keys(const std::map<std::string, double>& metrics);

// A saved state's entry (std::invalid_argument naming the key if absent) and a
// score saved as a tensor or a number.
const serialize::PyValue& required_entry(const serialize::PyValue& state, const std::string& key);
double score_of(const serialize::PyValue& value);

// Whether validation runs once, at the end of each training epoch
// (val_check_interval 1.0); Lightning's callbacks then act at the train epoch's end.
bool validates_once_per_epoch(const config::TrainerConfig& trainer);

}  // namespace salt::callbacks
