// Checks of the submit helpers' option values. Each throws one UsageError line
// naming the option (and showing a valid value): no control characters anywhere
// (a newline would add lines to the job files), and the formats sbatch and
// condor_submit accept for memory, time limits and the requeue signal.
#pragma once
#include <string>

namespace CLI {
class App;
}

namespace salt::submit {

// `value` with control characters (< 0x20, DEL) written as \n, \xNN: for messages.
std::string printable(const std::string& value);

// "<option> must be a single line without control characters".
void check_single_line(const std::string& option, const std::string& value);

// check_single_line for every value `app` parsed, naming its option (-p/--partition).
void check_single_line(const CLI::App& app);

// Slurm --mem: a positive integer with an optional K, M, G or T suffix, or 'none'.
void check_slurm_memory(const std::string& option, const std::string& value);

// Slurm --time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (or UNLIMITED).
void check_slurm_time(const std::string& option, const std::string& value);

// HTCondor request_memory: a positive number of MiB, or with a unit K(B), M(B), G(B), T(B).
void check_condor_memory(const std::string& option, const std::string& value);

// Slurm --signal for --requeue: [B:][SIG]NAME@SECONDS or NUMBER@SECONDS; "SIGUSR1@90",
// "USR1@90", "B:usr1@90" -> {"USR1", 90}, "10@60" -> {"10", 60}. The signal must be
// one bash can trap, the seconds 1 to 65535 (sbatch's limit).
struct SignalSpec {
  std::string name;  // without SIG, upper case; or a number
  int seconds = 90;
};
SignalSpec parse_signal(const std::string& text);

}  // namespace salt::submit
