#include "parallel/backends.h"

namespace salt::parallel {

std::string no_gloo_message(const std::string& needs) {
  // Every Linux LibTorch has Gloo in its library; what goes missing is its headers (a
  // pip LibTorch ships torch's ProcessGroupGloo.hpp but not the gloo/ it includes).
  return needs + " needs Gloo, and this salt-cpp was built without it: Gloo's headers (gloo/algorithm.h) were " +
         "missing when it was compiled (a pip LibTorch ships none). Build it again with " +
         "-DSALT_GLOO_INCLUDE_DIR=<folder holding gloo/> naming the headers of the Gloo that LibTorch was built " +
         "with (scripts/gloo_headers.sh lays them out; docs/distributed.md)";
}

}  // namespace salt::parallel
