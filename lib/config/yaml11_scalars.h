// Scalars as salt reads them: PyYAML resolves plain scalars by YAML 1.1 rules
// (`38_000_000` is an int, `yes`/`off` are booleans, `010` is octal), and
// jsonargparse then converts strings to the declared type (`1e-5` is a string to
// PyYAML, a float to a `float` argument). yaml-cpp follows neither, so typed keys
// are parsed here and written back in canonical form.
#pragma once
#include <optional>
#include <string>

namespace salt::config {

// A YAML 1.1 integer: [-+]? then decimal with `_` separators, 0b..., 0x... or a
// leading-0 octal. nullopt when the text is not one (or overflows).
std::optional<long long> yaml11_int(const std::string& text);

// A float as jsonargparse accepts for a `float` argument: anything Python's float()
// takes (1e-5, .5, 1_000.5, inf, nan) plus the YAML 1.1 spellings (.inf, -.Inf, .NaN).
std::optional<double> yaml11_float(const std::string& text);

// YAML 1.1 booleans: true/false, yes/no, on/off in the three casings PyYAML accepts.
std::optional<bool> yaml11_bool(const std::string& text);

}  // namespace salt::config
