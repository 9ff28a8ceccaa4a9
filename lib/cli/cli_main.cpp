#include "cli/cli_main.h"

#include <c10/util/Exception.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <new>
#include <iostream>

#include "cli/commands.h"
#include "cli/version.h"
#include "core/error_text.h"
#include "core/env_switches.h"
#include "core/errors.h"
#include "core/memory.h"
#include "core/memory_limit.h"
#include "core/omp_spin.h"
#include "core/signals.h"

namespace salt::cli {

namespace {

// fit/test/validate/predict take salt's free-form config flags, parsed by
// config::parse_run_args; CLI11 only routes to them.
void add_run_command(CLI::App& app, const std::string& name, const std::string& description,
                     std::vector<std::string>* rest, std::string* chosen) {
  auto* sub = app.add_subcommand(name, description);
  sub->set_help_flag();
  sub->allow_extras();
  sub->prefix_command();
  sub->callback([sub, rest, chosen, name] {
    *rest = sub->remaining();
    *chosen = name;
  });
}

// Error text can quote user input: one line, bounded (core/error_text.h).
std::string one_line(const std::string& text) { return error_line(text); }

// An allocation that failed (std::bad_alloc, or LibTorch's allocator naming the size).
int out_of_memory(const std::string& size) {
  const auto limit = memory_limit_text();
  std::cerr << "salt: error: out of memory" << (size.empty() ? "" : " (an allocation of " + size + " failed)") << limit
            << ": a size in the config or on the command line (a batch, a model width or count, a memory "
               "budget) asks for more than "
            << (limit.empty() ? "this machine has\n" : "the job may use: raise the limit (a batch system's memory "
                                                        "request) or lower the size\n");
  return 1;
}

// salt's to_onnx has a two-letter short flag, -mf, which CLI11 cannot name: it
// becomes --object_name before parsing, in both of argparse's spellings
// (`-mf hadron`, `-mf=hadron`).
std::vector<std::string> with_long_aliases(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (argc > 1 && args[1] == "to_onnx")
    for (auto& a : args) {
      if (a == "-mf") a = "--object_name";
      else if (a.rfind("-mf=", 0) == 0) a = "--object_name=" + a.substr(4);
    }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything is printed or written: a computing command may start again with
  // a short OpenMP spin (core/omp_spin.h).
  restart_with_short_spin_if_needed(argc, argv);
  // Restarted through /proc/self/exe (above, or as a data-parallel worker), the
  // process would be named "exe" in ps, top and killall: it is salt.
  prctl(PR_SET_NAME, "salt");
  // Past a file-size limit (ulimit -f, a job wrapper's) a write fails with EFBIG,
  // which the writer reports in one line and whose temporary file it removes;
  // SIGXFSZ's default would kill salt there and leave the half-written file.
  std::signal(SIGXFSZ, SIG_IGN);
  // A reader of salt's output that went away (`salt fit | head`, a closed tee) made
  // the next log line's SIGPIPE kill a training of hours mid-step: the console is a
  // view of the run, whose files are its record. Writes to it now fail quietly.
  std::signal(SIGPIPE, SIG_IGN);
  // Logs go to stderr: stdout carries results (--print_config, tables) only.
  spdlog::set_default_logger(spdlog::stderr_color_mt("salt"));
  spdlog::set_pattern("%^%l%$: %v");
  try {
    CLI::App app{"salt-cpp: train and evaluate jet flavour-tagging models (the C++ successor of salt)", "salt"};
    app.require_subcommand(0, 1);
    bool show_version = false, show_env = false, as_markdown = false;
    app.add_flag("-V,--version", show_version, "Print version, commit, LibTorch, CUDA and BLAS, then exit.");
    app.add_flag("--help-env", show_env,
                 "Print the environment variables salt-cpp reads, what each takes and its value now, then exit.");
    app.add_flag("--markdown", as_markdown, "With --help-env: as the Markdown table of docs/environment.md.");
    std::vector<std::string> rest;
    std::string run_command;
    add_run_command(app, "fit", "Train a model.", &rest, &run_command);
    add_run_command(app, "test", "Evaluate a checkpoint and write predictions.", &rest, &run_command);
    add_run_command(app, "validate", "Run validation on a checkpoint.", &rest, &run_command);
    add_run_command(app, "predict", "Write predictions (same as test).", &rest, &run_command);
    add_run_command(app, "mup",
                    "muP: build the base and delta proxies of a config with model.mup_config and write their base "
                    "shapes (<shape_path>/storeshapes) for `salt fit`.",
                    &rest, &run_command);
    app.add_subcommand("version", "Print version information.")->callback([&] { show_version = true; });
    add_tool_commands(app);

    auto args = with_long_aliases(argc, argv);
    std::vector<char*> arg_ptrs;
    for (auto& a : args) arg_ptrs.push_back(a.data());
    try {
      app.parse(static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
    } catch (const CLI::CallForHelp&) {
      std::cout << app.help();
      return 0;
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);
      std::cerr << "salt: error: " << one_line(e.what()) << " (see 'salt --help')\n";
      return 2;
    }
    if (show_version) {
      std::cout << version_text();
      return 0;
    }
    if (show_env) {
      std::cout << (as_markdown ? env_switches_markdown() : env_switches_help());
      return 0;
    }
    if (!run_command.empty()) return run_config_command(run_command, rest);
    if (app.get_subcommands().empty()) {
      std::cout << app.help();
      return 2;
    }
    return 0;
  } catch (const UserError& e) {
    std::cerr << "salt: error: " << one_line(e.what()) << "\n";
    return e.exit_code();
  } catch (const StopRequested& s) {
    std::cerr << "salt: stopped by signal " << s.signal << " (" << strsignal(s.signal)
              << "); completed outputs (checkpoints, files) are kept, temporary files removed\n";
    return 128 + s.signal;
  } catch (const c10::Error& e) {
    std::string size;
    if (allocation_failure(e.what_without_backtrace(), &size)) return out_of_memory(size);
    std::cerr << "salt: error: " << one_line(e.what_without_backtrace()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    return out_of_memory("");
  } catch (const std::filesystem::filesystem_error& e) {
    // The OS refused a path (a name too long, no permission, ...): the path and why,
    // not the library's "filesystem error: status: ..." as an internal error.
    std::string paths = e.path1().string();
    if (!e.path2().empty()) paths += " -> " + e.path2().string();
    std::cerr << "salt: error: " << one_line(paths + ": " + e.code().message()) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "salt: internal error: " << one_line(e.what()) << "\n";
    return 1;
  }
}

}  // namespace salt::cli
