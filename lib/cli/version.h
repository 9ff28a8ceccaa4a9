// `salt --version`: what this binary is and what it runs on.
#pragma once
#include <string>

namespace salt::cli {
std::string version_text();
}
