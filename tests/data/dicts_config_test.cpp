// norm_dict.yaml, class_dict.yaml and the data: config section.
#include <gtest/gtest.h>

#include "core/errors.h"
#include "data/class_dict.h"
#include "data/data_config.h"
#include "data/norm_dict.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "'" << (haystack) << "' lacks '" << (needle) << "'"

const char* kNorm = R"(jets:
  pt_btagJes: {mean: 100000.5, std: 50000.0}
  eta_btagJes:
    mean: 0.0
    std: 1.2
tracks:
  d0: {mean: 0.01, std: 0.2}
  bad_mean: {mean: .nan, std: 1.0}
  bad_std: {mean: 0.0, std: .inf}
  zero_std: {mean: 3.0, std: 0}
)";

TEST(NormDict, ParamsInVariableOrder) {
  salt::testing::TempDir dir;
  salt::testing::write_file(dir / "norm.yaml", kNorm);
  NormDict d = read_norm_dict(dir / "norm.yaml");
  NormParams p = norm_params(d, "jets", {"eta_btagJes", "pt_btagJes"});
  EXPECT_EQ(p.mean, (std::vector<float>{0.0f, 100000.5f}));
  EXPECT_EQ(p.std, (std::vector<float>{1.2f, 50000.0f}));
  auto all = norm_params_for(d, {{"jets", {"pt_btagJes"}}, {"trk", {"d0"}}, {"EDGE", {"x"}}}, {{"trk", "tracks"}});
  EXPECT_EQ(all.size(), 2u);
  EXPECT_EQ(all["trk"].std, (std::vector<float>{0.2f}));
}

TEST(NormDict, ErrorsNameVariableAndFile) {
  salt::testing::TempDir dir;
  const auto path = dir / "norm.yaml";
  salt::testing::write_file(path, kNorm);
  NormDict d = read_norm_dict(path);
  // a directory given for the file: said so, not "not found"
  EXPECT_EQ(error_of([&] { read_norm_dict(dir.path()); }),
            "norm_dict " + dir.path().string() + " is a directory, not a norm_dict file");
  std::string msg = error_of([&] { norm_params(d, "flows", {"x"}); });
  EXPECT_CONTAINS(msg, "Missing input type 'flows'");
  EXPECT_CONTAINS(msg, path.string());
  msg = error_of([&] { norm_params(d, "tracks", {"d0", "z0"}); });
  EXPECT_CONTAINS(msg, "Missing variable 'z0'");
  EXPECT_CONTAINS(msg, path.string());
  for (const char* var : {"bad_mean", "bad_std"}) {
    msg = error_of([&] { norm_params(d, "tracks", {var}); });
    EXPECT_CONTAINS(msg, "Non-finite");
    EXPECT_CONTAINS(msg, std::string("'") + var + "'");
    EXPECT_CONTAINS(msg, path.string());
  }
  msg = error_of([&] { norm_params(d, "tracks", {"zero_std"}); });
  EXPECT_CONTAINS(msg, "Zero standard deviation for variable 'zero_std'");
  EXPECT_CONTAINS(error_of([&] { read_norm_dict(dir / "missing.yaml"); }), "missing.yaml");
  salt::testing::write_file(dir / "broken.yaml", "jets: [1, 2");
  EXPECT_CONTAINS(error_of([&] { read_norm_dict(dir / "broken.yaml"); }), "broken.yaml");
  salt::testing::write_file(dir / "text.yaml", "jets:\n  pt: {mean: abc, std: 1}\n");
  EXPECT_CONTAINS(error_of([&] { read_norm_dict(dir / "text.yaml"); }), "jets.pt.mean");
}

TEST(ClassDict, AnchorsAndErrors) {
  salt::testing::TempDir dir;
  const auto path = dir / "class.yaml";
  salt::testing::write_file(path, R"(jets:
  flavour_label: &w [1.0, 2.5, 1.25, 10.0]
  other: *w
tracks:
  ftagTruthOriginLabel: [4.0, 1.0]
  bad: [1.0, -1.0]
)");
  ClassDict d = read_class_dict(path);
  EXPECT_EQ(class_weights(d, "jets", "flavour_label"), (std::vector<double>{1.0, 2.5, 1.25, 10.0}));
  EXPECT_EQ(class_weights(d, "jets", "other"), class_weights(d, "jets", "flavour_label"));
  std::string msg = error_of([&] { class_weights(d, "tracks", "ftagTruthVertexIndex"); });
  EXPECT_CONTAINS(msg, "Label 'ftagTruthVertexIndex'");
  EXPECT_CONTAINS(msg, path.string());
  EXPECT_CONTAINS(error_of([&] { class_weights(d, "flows", "x"); }), "'flows'");
  EXPECT_CONTAINS(error_of([&] { class_weights(d, "tracks", "bad"); }), "must be finite and positive");
}

TEST(DataConfig, DefaultsAndKeys) {
  DataConfig d = data_config_from_yaml(YAML::Load("{}"));
  EXPECT_EQ(d.global_object, "jets");
  EXPECT_EQ(d.batch_size, 1000);
  EXPECT_EQ(d.num_workers, 8);
  EXPECT_EQ(d.num_train, -1);
  EXPECT_TRUE(d.persistent_workers);
  EXPECT_TRUE(d.pin_memory);
  EXPECT_EQ(d.prefetch_factor, 2);
  EXPECT_FALSE(d.move_files_temp.has_value());

  DataConfig c = data_config_from_yaml(YAML::Load(R"(
variables:
  tracks: [d0, z0SinTheta]
  jets: [pt_btagJes, eta_btagJes]
train_file: /a/train.h5
val_file: /a/val.h5
test_file: /a/test.h5
norm_dict: /a/norm.yaml
class_dict: /a/class.yaml
input_map: {tracks: tracks_loose, _ignored: x}
num_inputs: {tracks: 10}
batch_size: 4000
num_workers: 2
num_train: 100
num_val: 10
num_test: 20
move_files_temp: /dev/shm/me/salt
test_suff: extra
pin_memory: false
persistent_workers: false
prefetch_factor: 3
non_finite_to_num: true
ignore_finite_checks: true
)"));
  EXPECT_EQ(c.input_order, (std::vector<std::string>{"tracks", "jets"}));
  EXPECT_EQ(c.variables["tracks"], (std::vector<std::string>{"d0", "z0SinTheta"}));
  EXPECT_EQ(c.dataset_of("tracks"), "tracks_loose");
  EXPECT_EQ(c.dataset_of("jets"), "jets");
  EXPECT_EQ(c.input_map.count("_ignored"), 0u);
  EXPECT_EQ(c.num_inputs["tracks"], 10);
  EXPECT_EQ(c.batch_size, 4000);
  EXPECT_EQ(c.num_workers, 2);
  EXPECT_EQ(c.num_train, 100);
  EXPECT_EQ(c.num_val, 10);
  EXPECT_EQ(c.num_test, 20);
  EXPECT_EQ(c.move_files_temp.value(), "/dev/shm/me/salt");
  EXPECT_EQ(c.test_suff.value(), "extra");
  EXPECT_FALSE(c.pin_memory);
  EXPECT_FALSE(c.persistent_workers);
  EXPECT_EQ(c.prefetch_factor, 3);
  EXPECT_TRUE(c.non_finite_to_num);
  EXPECT_TRUE(c.ignore_finite_checks);
  EXPECT_EQ(c.train_file, "/a/train.h5");
  EXPECT_EQ(c.class_dict, "/a/class.yaml");
}

}  // namespace
}  // namespace salt::data
