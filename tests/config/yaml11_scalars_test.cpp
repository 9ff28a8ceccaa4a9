// Typed scalars read as salt's PyYAML (YAML 1.1) + jsonargparse read them. The
// expected values were printed by /usr/bin/python3's yaml.safe_load and float().
#include <gtest/gtest.h>

#include <cmath>

#include "config/config_test_util.h"
#include "config/yaml11_scalars.h"

namespace salt::testing {
namespace {

using config::yaml11_bool;
using config::yaml11_float;
using config::yaml11_int;

TEST(Yaml11Scalars, IntegersAsPyYaml) {
  EXPECT_EQ(yaml11_int("38_000_000"), 38000000);
  EXPECT_EQ(yaml11_int("010"), 8);
  EXPECT_EQ(yaml11_int("0x1F"), 31);
  EXPECT_EQ(yaml11_int("0b101"), 5);
  EXPECT_EQ(yaml11_int("-1_0"), -10);
  EXPECT_EQ(yaml11_int("0"), 0);
  EXPECT_EQ(yaml11_int("+7"), 7);
  EXPECT_FALSE(yaml11_int("1e3"));
  EXPECT_FALSE(yaml11_int("_1"));
  EXPECT_FALSE(yaml11_int("08"));  // not octal, not decimal: a string to PyYAML
  EXPECT_FALSE(yaml11_int("99999999999999999999"));
  EXPECT_FALSE(yaml11_int(""));
}

TEST(Yaml11Scalars, FloatsAsJsonargparse) {
  EXPECT_DOUBLE_EQ(*yaml11_float("1e-5"), 1e-5);
  EXPECT_DOUBLE_EQ(*yaml11_float("1.0e-5"), 1e-5);
  EXPECT_DOUBLE_EQ(*yaml11_float("1_000.5"), 1000.5);
  EXPECT_DOUBLE_EQ(*yaml11_float(".5"), 0.5);
  EXPECT_TRUE(std::isinf(*yaml11_float(".inf")));
  EXPECT_LT(*yaml11_float("-.Inf"), 0);
  EXPECT_TRUE(std::isnan(*yaml11_float(".NaN")));
  EXPECT_FALSE(yaml11_float("1__0"));
  EXPECT_FALSE(yaml11_float("0x1p3"));
  EXPECT_FALSE(yaml11_float("abc"));
  EXPECT_FALSE(yaml11_float(""));
}

TEST(Yaml11Scalars, BooleansAsPyYaml) {
  EXPECT_EQ(yaml11_bool("yes"), true);
  EXPECT_EQ(yaml11_bool("On"), true);
  EXPECT_EQ(yaml11_bool("off"), false);
  EXPECT_EQ(yaml11_bool("FALSE"), false);
  EXPECT_FALSE(yaml11_bool("y"));  // a string to PyYAML
}

TEST(Yaml11Scalars, TypedKeysTakeSaltSpellings) {
  auto r = resolve_args({"-c", repo_config("GN2.yaml"), "--data.num_train=38_000_000", "--data.num_val=0x10",
                         "--model.lrs_config.initial=1_0e-8", "--model.lrs_config.weight_decay='1e-5'"});
  EXPECT_EQ(r.config["data"]["num_train"].Scalar(), "38000000");
  EXPECT_EQ(r.run.data.num_train, 38000000);
  EXPECT_EQ(r.run.data.num_val, 16);
  EXPECT_EQ(r.config["model"]["lrs_config"]["initial"].Scalar(), "1e-07");
  EXPECT_DOUBLE_EQ(r.run.model.lrs.initial, 1e-7);
  EXPECT_DOUBLE_EQ(r.run.model.lrs.weight_decay, 1e-5);
}

}  // namespace
}  // namespace salt::testing
