// salt to_onnx's --combine_outputs / --rename parsing and the resulting output names.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "deploy/output_spec.h"
#include "support/one_line_error.h"

namespace salt::deploy {
namespace {

using testing::one_line_error_of;

TEST(OutputSpec, CombinationAsSaltParsesIt) {
  auto c = parse_combination("light,0.5*q,0.1*g,s");
  EXPECT_EQ(c.output, "light");
  ASSERT_EQ(c.terms.size(), 3u);
  EXPECT_DOUBLE_EQ(c.terms[0].first, 0.5);
  EXPECT_EQ(c.terms[0].second, "q");
  EXPECT_DOUBLE_EQ(c.terms[1].first, 0.1);
  EXPECT_DOUBLE_EQ(c.terms[2].first, 1.0);
  EXPECT_EQ(c.terms[2].second, "s");
}

TEST(OutputSpec, MalformedCombinationsAreOneLine) {
  for (const std::string bad : {"light", "light,", ",q", "light,x*q", "light,0.5*", "light,1e999*q", "li ght,q", "light,0.5*q*g"}) {
    auto msg = one_line_error_of<UsageError>([&] { parse_combination(bad); });
    EXPECT_NE(msg.find("--combine_outputs '" + bad + "'"), std::string::npos) << msg;
  }
}

TEST(OutputSpec, Rename) {
  EXPECT_EQ(parse_rename("pb:pbottom"), (std::pair<std::string, std::string>{"pb", "pbottom"}));
  for (const std::string bad : {"pb", "pb:", ":x", "a:b:c"})
    EXPECT_NE(one_line_error_of<UsageError>([&] { parse_rename(bad); }).find("--rename '" + bad + "'"), std::string::npos);
}

TEST(OutputSpec, RenamesInPlaceThenCombinationsAppended) {
  const std::vector<std::string> outs{"GN2_pb", "GN2_pc", "GN2_pu"};
  auto names = rewrite_output_names(outs, "GN2", {{"pc", "pcharm"}}, {parse_combination("bc,pb,pcharm")});
  EXPECT_EQ(names, (std::vector<std::string>{"GN2_pb", "GN2_pcharm", "GN2_pu", "GN2_bc"}));
}

TEST(OutputSpec, UnknownNamesAndClashesAreRefused) {
  const std::vector<std::string> outs{"GN2_pb", "GN2_pc", "GN2_pu"};
  auto msg = one_line_error_of<UsageError>([&] { rewrite_output_names(outs, "GN2", {{"ptau", "x"}}, {}); });
  EXPECT_NE(msg.find("no output 'ptau' (outputs: pb, pc, pu)"), std::string::npos) << msg;
  msg = one_line_error_of<UsageError>([&] { rewrite_output_names(outs, "GN2", {}, {parse_combination("x,pq")}); });
  EXPECT_NE(msg.find("no output 'pq'"), std::string::npos) << msg;
  msg = one_line_error_of<UsageError>([&] { rewrite_output_names(outs, "GN2", {{"pc", "pb"}}, {}); });
  EXPECT_NE(msg.find("two outputs named 'GN2_pb'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace salt::deploy
