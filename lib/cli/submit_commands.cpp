// `salt submit_slurm` and `salt submit_htcondor`: salt's batch helpers. Their
// argparse-style options (multi-letter short options, --slurm.* / --config.*
// passthroughs) are parsed in lib/submit; CLI11 only routes the tokens there.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "submit/submit_htcondor.h"
#include "submit/submit_slurm.h"

namespace salt::cli {

namespace {

CLI::App* add_passthrough_command(CLI::App& app, const std::string& name, const std::string& description) {
  auto* sub = app.add_subcommand(name, description);
  sub->set_help_flag();  // --help is handled by lib/submit, which knows the options
  sub->allow_extras();
  sub->prefix_command();
  return sub;
}

}  // namespace

void add_submit_commands(CLI::App& app) {
  auto* slurm = add_passthrough_command(app, "submit_slurm",
                                        "Validate a training config and submit `salt fit` to Slurm (sweeps, requeue).");
  slurm->callback([slurm] {
    auto options = submit::parse_slurm_options(slurm->remaining());
    if (options.help) {
      std::cout << submit::slurm_help();
      return;
    }
    submit::submit_slurm(options, std::cout);
  });
  auto* condor = add_passthrough_command(app, "submit_htcondor",
                                         "Validate a training config and submit `salt fit` to HTCondor.");
  condor->callback([condor] {
    auto options = submit::parse_condor_options(condor->remaining());
    if (options.help) {
      std::cout << submit::condor_help();
      return;
    }
    submit::submit_htcondor(options, std::cout);
  });
}

}  // namespace salt::cli
