// The rule for switches read from the environment: on/off ones (SALT_SHORT_ATTENTION,
// SALT_SEGMENT_SUM_KERNEL, SALT_HOST_TWINS, SALT_COPY_STREAM, SALT_CUDA_GRAPHS), ones
// with named values (SALT_CPU_BF16: native or emulated) and whole numbers in a range
// (SALT_MAX_STEPS_AHEAD, OMP_NUM_THREADS). The same rule for every one, so that a
// mistyped value is refused instead of read as one or the other. Only the values are
// parsed here; training/step/step_options.cpp reads the variables, once.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace salt {

// A variable's value as the environment has it (null when unset): the process's
// getenv, or a map in tests.
using EnvLookup = std::function<const char*(const char* name)>;

// A value a switch takes and what it means ("emulated", "bf16-rounded inputs ...").
using EnvValue = std::pair<std::string, std::string>;

// A variable's text through `env`, none when it is unset or empty (how the
// launchers' variables, RANK or SLURM_NTASKS, are read).
std::optional<std::string> env_text(const EnvLookup& env, const std::string& name);

// `value` (the variable's, null when unset): unset or empty -> ""; one of `values`
// -> that value; anything else a UsageError naming `name`, the value and every
// value with its meaning: "SALT_X=yes: expected 0 (off) or 1 (on)".
std::string env_choice(const std::string& name, const char* value, const std::vector<EnvValue>& values);

// `value` (the variable's, null when unset): unset or empty -> `otherwise`; "0" ->
// off; "1" -> on; anything else a UsageError naming `name`, the value and what 0
// and 1 mean.
bool env_switch(const std::string& name, const char* value, bool otherwise, const std::string& off,
                const std::string& on);

// `value` (the variable's, null when unset): unset or empty -> nullopt; digits only
// (no sign, space or fraction) making a number from `least` to `most` -> it; anything
// else a UsageError "SALT_X=two: expected a whole number from 0 to 1000", followed by
// ` (<why>)` when `why` is given.
std::optional<long> env_whole_number(const std::string& name, const char* value, long least, long most,
                                     const std::string& why = "");

// `value` (the variable's, null when unset): unset or empty -> nullopt; a decimal
// number from `least` to `most` -> it; anything else a UsageError
// "SALT_X=1e9: expected <what> from 0.001 to 10000000".
std::optional<double> env_number(const std::string& name, const char* value, double least, double most,
                                 const std::string& what);

}  // namespace salt
