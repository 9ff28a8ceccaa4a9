// The helpers' command lines before CLI11 sees them: salt's helpers (argparse)
// accept multi-letter short options (-cn, -gt, -cpt, -ex, -ti, -sls) that CLI11
// cannot declare, and free-form passthroughs `--slurm.key=value` (extra #SBATCH
// lines) and `--config.key=value` (extra `salt fit` flags) that no parser knows.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace salt::submit {

struct Passthrough {
  std::string key;                   // e.g. "mail-user" or "trainer.max_epochs"
  std::optional<std::string> value;  // nullopt: a bare flag (--slurm.exclusive)
  std::string token;                 // as typed, for error messages
};

struct SplitArgs {
  std::vector<std::string> args;     // for CLI11, multi-letter short options renamed
  std::vector<Passthrough> batch;    // --<batch_prefix>.key[=value]
  std::vector<Passthrough> config;   // --config.key[=value]
};

// `aliases` maps a multi-letter short option to its long name ("-cn" -> "--constraint");
// "-cn=x" works too. `batch_prefix` is "slurm" or "condor". Throws UsageError for
// an empty passthrough key ("--slurm.=3") and a control character in a key or value.
SplitArgs split_args(const std::vector<std::string>& args, const std::map<std::string, std::string>& aliases,
                     const std::string& batch_prefix);

// A passthrough to `salt fit`: --key=value, or --key for a bare flag.
std::string salt_flag(const Passthrough& p);

// Whether -h/--help is among the arguments left for CLI11.
bool wants_help(const std::vector<std::string>& args);

// Parses `args` with `app` (CLI11 takes them in reverse order); a parse error
// becomes one UsageError line naming `command` and its --help, and so does a
// control character in any option's value (it would add lines to the job files).
void parse_with(CLI::App& app, const std::vector<std::string>& args, const std::string& command);

}  // namespace salt::submit
