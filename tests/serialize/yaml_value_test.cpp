// A config's YAML as Python values (checkpoints' hyper_parameters), typed as
// PyYAML's yaml.safe_load types them, and back.
#include <gtest/gtest.h>

#include "serialize/yaml_value.h"

namespace salt::serialize {
namespace {

// salt's label_map has int keys: LightningCLI re-parses the checkpoint's
// hyper_parameters for `salt test --ckpt_path`, and string keys left the labels
// unmapped there (salt's task compares labels == key).
TEST(YamlValue, MappingKeysAreTypedAsSafeLoadTypesThem) {
  const auto v = yaml_to_py(YAML::Load(R"({label_map: {0: 0, 4: 1, 5: 2}, "7": a, 0x10: b, true: c, ~: d, 1.5: e})"));
  const auto& map = *v.find("label_map");
  ASSERT_EQ(map.entries().size(), 3u);
  for (const auto& [k, value] : map.entries()) EXPECT_TRUE(k.is_int()) << k.type_name();
  EXPECT_EQ(map.find(int64_t{4})->as_int(), 1);
  EXPECT_EQ(v.find("7")->as_str(), "a");      // quoted: a string
  EXPECT_EQ(v.find(int64_t{16})->as_str(), "b");  // YAML 1.1 hex int
  std::vector<PyValue::Kind> kinds;
  for (const auto& [k, value] : v.entries()) kinds.push_back(k.kind());
  EXPECT_EQ(kinds, (std::vector<PyValue::Kind>{PyValue::Kind::kStr, PyValue::Kind::kStr, PyValue::Kind::kInt,
                                               PyValue::Kind::kBool, PyValue::Kind::kNone, PyValue::Kind::kStr}));
  // and back to YAML with the int keys unquoted
  EXPECT_EQ(py_to_yaml(map), "{0: 0, 4: 1, 5: 2}");
}

}  // namespace
}  // namespace salt::serialize
