// Entry point of the `salt` command line: dispatches subcommands, turns every
// salt::UserError into one line on stderr and its exit code.
#pragma once

namespace salt::cli {
int main(int argc, char** argv);
}
