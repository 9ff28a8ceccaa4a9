// On/off switches read from the environment (SALT_SHORT_ATTENTION,
// SALT_SEGMENT_SUM_KERNEL, SALT_HOST_TWINS, SALT_COPY_STREAM, SALT_CUDA_GRAPHS): the same rule for
// every one, so that a mistyped value is refused instead of read as one or the other.
#pragma once
#include <string>

namespace salt {

// `value` (the variable's, null when unset): unset or empty -> `otherwise`; "0" ->
// off; "1" -> on; anything else a UsageError naming `name`, the value and what 0
// and 1 mean.
bool env_switch(const std::string& name, const char* value, bool otherwise, const std::string& off,
                const std::string& on);

// The same for the variable `name` as the process has it.
bool env_switch(const std::string& name, bool otherwise, const std::string& off, const std::string& on);

}  // namespace salt
