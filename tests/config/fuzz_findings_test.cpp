// Inputs scripts/fuzz.sh found (tests/fuzz/config_fuzz.cpp), each replayed here:
// they used to escape as an internal error and are now a one-line UsageError.
#include <gtest/gtest.h>

#include "config/config_test_util.h"
#include "support/one_line_error.h"

namespace salt::testing {

// fuzz_config, crash-723eb996: a section that is a scalar, then a key below it on
// the command line (yaml-cpp's BadSubscript: "operator[] call on a scalar").
TEST(FuzzFindings, KeyBelowAScalarSection) {
  TempDir dir;
  write_file(dir / "scalar.yaml", "name: x\ndata: oops\n");
  for (const char* key : {"--data.batch_size", "--data.variables.jets"}) {
    const auto e = one_line_error_of<UsageError>([&] { resolve_args({"-c", (dir / "scalar.yaml").string(), key, "100"}); });
    EXPECT_NE(e.find("'data' is a single value, not a mapping"), std::string::npos) << key << ": " << e;
  }
}

}  // namespace salt::testing
