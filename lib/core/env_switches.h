// Every environment variable salt-cpp reads, declared once, as config keys are
// (config/bind.h): its name, what it takes, its value when unset, one line of
// help and the part of salt-cpp that reads it. `salt --help-env` prints the table
// with each variable's value now; docs/environment.md is generated from it; and a
// test (tests/cmake/env_switches_test.py) fails on a SALT_* name that lib/ reads
// without declaring it here. Values are parsed by the rule of core/env_switch.h.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace salt {

struct EnvSwitchSpec {
  const char* name;
  const char* values;    // what it takes, in words: "0 or 1", "native or emulated", "0 to 1000"
  const char* fallback;  // its meaning when unset
  const char* help;      // one line
  const char* owner;     // the folder of lib/ that reads it
};

// In the order `salt --help-env` prints them: the steps', the threads', data
// parallel, where files are.
const std::vector<EnvSwitchSpec>& env_switches();

// The process's value of a declared variable, null when unset: the one reader of
// the environment for salt-cpp's own variables. An undeclared name is a
// programming error (std::logic_error).
const char* env_value(const char* name);

// The declared variables set now, with their values, in the table's order: what
// metadata.yaml's `environment` records of a run.
std::vector<std::pair<std::string, std::string>> env_switches_set();

// Any variable's value (null when unset), for the lookups that read several: a
// SALT_* one must be declared (env_value), others (OMP_NUM_THREADS, torchrun's
// RANK, Slurm's) are read as they are.
const char* process_env(const char* name);

// The table with each variable's value now ("unset" where it is), for --help-env.
std::string env_switches_help();
// The table as Markdown, for docs/environment.md.
std::string env_switches_markdown();

}  // namespace salt
