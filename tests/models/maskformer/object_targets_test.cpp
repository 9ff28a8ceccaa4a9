// The MaskFormer's targets from labels and data.mf_config, checked by hand: slot
// order (pv class first, then real objects in file order, then empty slots),
// truncation and padding to num_objects, class mapping (unknown raw values are
// null), masks from the constituents' parent ids (never on padded constituents).
#include "models/maskformer/object_targets.h"

#include <gtest/gtest.h>

#include <cmath>

#include "support/one_line_error.h"

namespace salt::models {
namespace {

config::MaskformerConfig mf() {
  config::MaskformerConfig c;
  c.object.name = "truth_hadrons";
  c.object.id_label = "barcode";
  c.object.class_label = "flavour";
  c.object.object_classes = {{"b", {5}, 0, 1.0}, {"c", {4, 44}, 1, 1.0}, {"null", {-1}, 2, 1.0}};
  c.constituent.name = "tracks";
  c.constituent.id_label = "parent";
  return c;
}

Labels labels() {
  Labels l;
  l["objects"]["barcode"] = torch::tensor({{-1, 7, 9, 3}, {4, 5, -1, -1}}, torch::kInt64);
  l["objects"]["flavour"] = torch::tensor({{-1, 4, 5, 99}, {44, 5, -1, -1}}, torch::kInt64);
  l["objects"]["pt"] = torch::tensor({{NAN, 10.f, 20.f, 30.f}, {1.f, 2.f, NAN, NAN}});
  l["tracks"]["parent"] = torch::tensor({{9, 7, 7, 3, 9}, {5, 5, 4, -1, 0}}, torch::kInt64);
  return l;
}

TEST(ObjectTargets, PvClassFirstThenFileOrderTruncated) {
  TensorMap pads{{"tracks", torch::tensor({{false, false, false, false, true}, {false, false, false, true, true}})}};
  const auto t = object_targets(labels(), pads, mf(), 3);
  // jet 0: slot 2 (b, the pv class) first, then 1 (c) and 3 (raw 99: null); slot 0 is empty.
  EXPECT_TRUE(torch::equal(t.object_class, torch::tensor({{0, 1, 2}, {0, 1, 2}}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(t.labels.at("barcode"), torch::tensor({{9, 7, 3}, {5, 4, -1}}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(t.labels.at("flavour"), t.object_class));  // salt relabels class_label
  const auto pt = t.labels.at("pt");
  EXPECT_FLOAT_EQ(pt[0][0].item<float>(), 20.f);
  EXPECT_FLOAT_EQ(pt[0][1].item<float>(), 10.f);
  EXPECT_FLOAT_EQ(pt[1][1].item<float>(), 1.f);
  EXPECT_TRUE(std::isnan(pt[1][2].item<float>()));
  const auto want = torch::tensor({{{1, 0, 0, 0, 0}, {0, 1, 1, 0, 0}, {0, 0, 0, 1, 0}},
                                   {{1, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 0, 0}}}).to(torch::kBool);
  EXPECT_TRUE(torch::equal(t.masks, want)) << t.masks;
}

TEST(ObjectTargets, PaddedToNumObjectsAndObjectsValidRespected) {
  auto c = mf();
  c.object.pv_class = std::nullopt;  // file order only
  TensorMap pads{{"objects", torch::tensor({{false, true, false, false}, {false, false, true, true}})}};
  const auto t = object_targets(labels(), pads, c, 6);
  ASSERT_EQ(t.object_class.size(1), 6);
  // jet 0: slot 1 is marked invalid by the objects' `valid`: real are 2, 3.
  EXPECT_TRUE(torch::equal(t.object_class[0], torch::tensor({0, 2, 2, 2, 2, 2}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(t.labels.at("barcode")[0], torch::tensor({9, 3, -1, -1, -1, -1}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(t.object_class[1], torch::tensor({1, 0, 2, 2, 2, 2}, torch::kInt64)));
  EXPECT_EQ(t.masks.sum().item<int64_t>(), 2 + 1 + 2 + 1);  // jet 0: 9 -> 2, 3 -> 1; jet 1: 4 -> 1, 5 -> 2
}

TEST(ObjectTargets, CutsSortingAndTheLxyRelabellingAsSaltSelects) {
  auto c = mf();
  c.object.cuts = {{"Lxy", std::nullopt, 100.0}};
  c.object.sort_by = "pt";
  Labels l = labels();
  l["objects"]["flavour"] = torch::tensor({{-1, 4, 5, 44}, {44, 5, -1, -1}}, torch::kInt64);
  l["objects"]["Lxy"] = torch::tensor({{NAN, 50.f, 300.f, 10.f}, {200.f, NAN, NAN, NAN}});
  auto t = object_targets(l, {}, c, 3);
  // jet 0: the b (pv class) is exempt from the cut and first; the c's by pt, largest first.
  // jet 1: the c fails Lxy <= 100 and is dropped; the b passes with a NaN Lxy (exempt).
  EXPECT_TRUE(torch::equal(t.labels.at("barcode"), torch::tensor({{9, 3, 7}, {5, -1, -1}}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(t.object_class, torch::tensor({{0, 1, 1}, {0, 2, 2}}, torch::kInt64)));
  EXPECT_EQ(t.masks[1].sum().item<int64_t>(), 2);  // the dropped c (id 4) has no mask
  c.object.sort_descending = false;
  t = object_targets(l, {}, c, 3);
  EXPECT_TRUE(torch::equal(t.labels.at("barcode")[0], torch::tensor({9, 7, 3}, torch::kInt64)));
  // max_lxy_mm relabels kept objects beyond it as null; their slots stay.
  c.object.cuts.clear();
  c.object.sort_by.reset();
  c.object.max_lxy_mm = 40.0;
  t = object_targets(l, {}, c, 3);
  EXPECT_TRUE(torch::equal(t.labels.at("barcode")[0], torch::tensor({9, 7, 3}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(t.object_class[0], torch::tensor({2, 2, 1}, torch::kInt64)));
  EXPECT_EQ(c.object.selection_fields(), std::vector<std::string>{"Lxy"});
}

TEST(ObjectTargets, AMissingLabelIsOneLine) {
  auto l = labels();
  l["tracks"].erase("parent");
  const auto msg = testing::one_line_error_of([&] { object_targets(l, {}, mf(), 3); });
  EXPECT_NE(msg.find("'parent' of 'tracks'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace salt::models
