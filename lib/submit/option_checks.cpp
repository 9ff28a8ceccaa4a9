#include "submit/option_checks.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>

#include "core/errors.h"

namespace salt::submit {
namespace {

bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

// "-p/--partition", "--constraint": how the help names the option.
std::string label(const CLI::Option& opt) {
  std::string out;
  for (const auto& s : opt.get_snames()) out += (out.empty() ? "-" : "/-") + s;
  for (const auto& l : opt.get_lnames()) out += (out.empty() ? "--" : "/--") + l;
  return out;
}

bool positive(const std::string& digits) { return digits.find_first_not_of('0') != std::string::npos; }

[[noreturn]] void bad_value(const std::string& option, const std::string& value, const std::string& expected) {
  throw UsageError(option + " '" + printable(value) + "': expected " + expected);
}

}  // namespace

std::string printable(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\n') {
      out += "\\n";
    } else if (is_control(c)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

void check_single_line(const std::string& option, const std::string& value) {
  if (std::any_of(value.begin(), value.end(), is_control))
    throw UsageError(option + " must be a single line without control characters");
}

void check_single_line(const CLI::App& app) {
  for (const auto* opt : app.get_options())
    for (const auto& value : opt->results()) check_single_line(label(*opt), value);
}

void check_slurm_memory(const std::string& option, const std::string& value) {
  static const std::regex re(R"(^([0-9]+)[KMGTkmgt]?$)");
  std::smatch m;
  if (value == "none") return;
  if (!std::regex_match(value, m, re) || !positive(m[1].str()))
    bad_value(option, value, "a positive integer with an optional K, M, G or T suffix, e.g. 100G (or 'none')");
}

void check_slurm_time(const std::string& option, const std::string& value) {
  // minutes, MM:SS, HH:MM:SS | D-HH, D-HH:MM, D-HH:MM:SS
  static const std::regex re(R"(^([0-9]+(:[0-9]+){0,2}|[0-9]+-[0-9]+(:[0-9]+){0,2}|(?:INFINITE|UNLIMITED))$)",
                             std::regex::icase);
  if (!std::regex_match(value, re))
    bad_value(option, value,
              "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS, e.g. 24:00:00 or 2-00:00:00");
}

void check_condor_memory(const std::string& option, const std::string& value) {
  static const std::regex re(R"(^([0-9]+) ?([KMGT]B?)?$)", std::regex::icase);
  std::smatch m;
  if (!std::regex_match(value, m, re) || !positive(m[1].str()))
    bad_value(option, value, "a positive number of MiB, or with a unit KB, MB, GB or TB, e.g. 80000 or '80 GB'");
}

SignalSpec parse_signal(const std::string& text) {
  // The signals bash can trap (not KILL, STOP) that sbatch knows by name.
  static const std::set<std::string> names{"HUP",  "INT",  "QUIT", "ABRT", "ALRM", "TERM", "USR1",
                                           "USR2", "URG",  "CONT", "TSTP", "TTIN", "TTOU", "XCPU"};
  static const std::regex re(R"(^(?:B:)?(?:SIG)?([A-Z0-9]+)@([0-9]+)$)", std::regex::icase);
  const std::string example = "e.g. SIGUSR1@90";
  std::smatch m;
  if (!std::regex_match(text, m, re))
    bad_value("-s/--signal", text, "SIGNAL@SECONDS, " + example);
  std::string name = m[1].str();
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  const bool number = name.find_first_not_of("0123456789") == std::string::npos;
  const int num = number && name.size() <= 2 ? std::stoi(name) : -1;
  if (number ? num < 1 || num > 64 || num == 9 || num == 19 : names.count(name) == 0)
    bad_value("-s/--signal", text,
              "a signal that bash can trap (USR1, USR2, TERM, INT, HUP, ... or its number) before '@', " + example);
  const auto seconds = m[2].str();
  if (!positive(seconds) || seconds.size() > 5 || std::stoi(seconds) > 65535)
    bad_value("-s/--signal", text, "1 to 65535 seconds after '@', " + example);
  if (number) name = std::to_string(num);  // "010" -> "10"
  return {name, std::stoi(seconds)};
}

}  // namespace salt::submit
