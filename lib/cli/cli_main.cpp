#include "cli/cli_main.h"

#include <iostream>

#include "cli/version.h"
#include "core/errors.h"

namespace salt::cli {

int main(int argc, char** argv) {
  try {
    std::cout << version_text();
    return 0;
  } catch (const UserError& e) {
    std::cerr << "salt: error: " << e.what() << "\n";
    return e.exit_code();
  }
}

}  // namespace salt::cli
