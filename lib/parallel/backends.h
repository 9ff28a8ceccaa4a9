// Which collective backends this build of salt-cpp has, for what must say so before
// any process group exists (`salt --version`, the launcher of `trainer.devices: [0, 0]`)
// and for the refusals of ProcessGroup::connect. No torch here.
#pragma once
#include <string>

namespace salt::parallel {

struct BuiltBackends {
  bool gloo = false;  // Gloo's own headers (gloo/algorithm.h) were found at build time
  bool nccl = false;  // LibTorch has NCCL and nccl.h was found at build time
};
// Defined in process_group.cpp, the one file that includes the c10d headers
// (dist/c10d_compat.h decides both).
BuiltBackends built_backends();

// The one line for a build without Gloo when `needs` (what asked for it) cannot do
// without: Gloo's headers were missing when salt-cpp was built, and how to build with them.
std::string no_gloo_message(const std::string& needs);

}  // namespace salt::parallel
