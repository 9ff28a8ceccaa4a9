// The JSON text of the ONNX metadata.
#include <gtest/gtest.h>

#include "deploy/json.h"

namespace salt::deploy {
namespace {

TEST(Json, YamlTreesAsJsonWithIndentOne) {
  auto node = YAML::Load("{a: 1, b: [true, null, 2.5e-3], c: {d: hi \"there\"}, e: [], f: '7'}");
  node["g"] = json_str("123");
  EXPECT_EQ(to_json(node),
            "{\n \"a\": 1,\n \"b\": [\n  true,\n  null,\n  2.5e-3\n ],\n \"c\": {\n  \"d\": \"hi \\\"there\\\"\"\n },\n"
            " \"e\": [],\n \"f\": \"7\",\n \"g\": \"123\"\n}");
}

TEST(Json, StringsThatAreNotJsonNumbersStayStrings) {
  auto node = YAML::Load("[.5, 1., 0x1F, +3, 1e5, -0, inf, yes]");
  EXPECT_EQ(to_json(node, 0), "[\n\".5\",\n\"1.\",\n\"0x1F\",\n\"+3\",\n1e5,\n-0,\n\"inf\",\n\"yes\"\n]");
}

}  // namespace
}  // namespace salt::deploy
