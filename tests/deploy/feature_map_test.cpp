// salt's default ONNX feature map: the input names Athena uses.
#include <gtest/gtest.h>

#include "deploy/feature_map.h"

namespace salt::deploy {
namespace {

TEST(FeatureMap, Gn2AndGn3InputsAsSaltNamesThem) {
  auto map = default_feature_map("r22default", {"global", "jets", "tracks", "flows", "electrons", "hits", "parameters"}, "jets");
  ASSERT_EQ(map.size(), 5u);
  EXPECT_EQ(map[0].athena_in, "jet_var");
  EXPECT_EQ(map[0].athena_out, "jet_features");
  EXPECT_TRUE(map[0].is_global);
  EXPECT_EQ(map[1].athena_in, "tracks_r22default_sd0sort");
  EXPECT_EQ(map[1].athena_out, "track_features");
  EXPECT_EQ(map[1].num_name, "n_tracks");
  EXPECT_EQ(map[2].athena_in, "flows_r22default_sd0sort");
  EXPECT_EQ(map[2].athena_out, "flow_features");
  EXPECT_EQ(map[3].athena_in, "electrons_r22default");
  EXPECT_EQ(map[3].athena_out, "electron_features");
  EXPECT_EQ(map[3].num_name, "n_electrons");
  EXPECT_EQ(map[4].athena_in, "hits_var");
  EXPECT_EQ(map[4].athena_out, "hit_features");
}

TEST(FeatureMap, ClashingNamesOfLeptonTaggersAreKeptApart) {
  auto map = default_feature_map("r22default", {"electrons", "electron_tracks"}, "electrons");
  ASSERT_EQ(map.size(), 2u);
  EXPECT_EQ(map[0].athena_out, "electron_features");
  EXPECT_EQ(map[1].athena_in, "electron_r22default_sd0sort");  // salt's Athena collection name stays
  EXPECT_EQ(map[1].athena_out, "electron_track_features");
  EXPECT_EQ(map[1].num_name, "n_electron_tracks");
}

TEST(FeatureMap, SuffixedTrackInputsKeepTheirBaseName) {
  auto map = default_feature_map("dipsLoose202102", {"jets", "tracks_loose"}, "jets");
  EXPECT_EQ(map[1].athena_in, "tracks_dipsLoose202102_sd0sort");
  EXPECT_EQ(map[1].salt_name, "tracks_loose");
}

}  // namespace
}  // namespace salt::deploy
