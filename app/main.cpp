// The `salt` binary: everything lives in lib/ (salt_cli); this only hands over argv.
#include "cli/cli_main.h"

int main(int argc, char** argv) { return salt::cli::main(argc, argv); }
