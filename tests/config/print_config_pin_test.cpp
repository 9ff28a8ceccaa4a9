// --print_config of the shipped configs is pinned byte for byte: the expected
// files (tests/config/print_config/) were written by salt-cpp before the schema
// moved into bound fields and self-registering components, so any change in
// keys, order, defaults or spelling shows up here. The run's working directory
// appears as @CWD@ (relative paths are made absolute against it).
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace salt::testing {
namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
  return text;
}

class PrintConfigPin : public ::testing::TestWithParam<std::pair<std::string, std::vector<std::string>>> {};

TEST_P(PrintConfigPin, IsByteIdentical) {
  const auto& [expected_file, configs] = GetParam();
  TempDir cwd;
  std::vector<std::string> args{"fit"};
  for (const auto& c : configs) {
    args.push_back("-c");
    args.push_back((source_dir() / "configs" / c).string());
  }
  args.push_back("--print_config");
  auto r = run_salt(args, cwd.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto expected = read_file(source_dir() / "tests" / "config" / "print_config" / expected_file);
  EXPECT_EQ(replace_all(r.out, cwd.path().string(), "@CWD@"), expected);
}

INSTANTIATE_TEST_SUITE_P(
    Shipped, PrintConfigPin,
    ::testing::Values(std::make_pair(std::string("GN2.yaml"), std::vector<std::string>{"GN2.yaml"}),
                      std::make_pair(std::string("dips.yaml"), std::vector<std::string>{"dips.yaml"}),
                      std::make_pair(std::string("DL1.yaml"), std::vector<std::string>{"DL1.yaml"}),
                      std::make_pair(std::string("GN2_cpu.yaml"), std::vector<std::string>{"GN2.yaml", "GN2_cpu.yaml"})),
    [](const auto& info) {
      auto name = info.param.first.substr(0, info.param.first.find('.'));
      for (auto& ch : name)
        if (ch == '-') ch = '_';
      return name;
    });

}  // namespace
}  // namespace salt::testing
