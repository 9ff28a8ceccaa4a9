// config::apply_edit: a setting changed after resolve (a tuner's result, the
// checkpoint salt test finds) changes the typed RunConfig and the YAML that
// config.yaml records together, and what is recorded reads back as the same value.
#include <gtest/gtest.h>

#include "config/config_edit.h"
#include "config/yaml11_scalars.h"
#include "config_test_util.h"

namespace salt::config {
namespace {

// What a later run reads from the recorded config.yaml text.
RunConfig read_back(const ResolvedConfig& r) { return read_run_config(YAML::Load(to_yaml(r.config))); }

TEST(ConfigEdit, BatchSizeChangesTheTypedSettingAndTheRecord) {
  auto r = salt::testing::resolve_args({"-c", salt::testing::repo_config("DL1.yaml")});
  ASSERT_NE(r.run.data.batch_size, 512);
  apply_edit(r, ConfigEdit::set_batch_size(512));
  EXPECT_EQ(r.run.data.batch_size, 512);
  EXPECT_EQ(read_back(r).data.batch_size, 512);
  EXPECT_EQ(ConfigEdit::set_batch_size(512).key(), "data.batch_size");
}

TEST(ConfigEdit, LearningRateIsRecordedAsAFloatThatReadsBackExactly) {
  auto r = salt::testing::resolve_args({"-c", salt::testing::repo_config("DL1.yaml")});
  const double lr = 1.2345678901234568e-5;  // 17 digits: the shortest text that reads back
  for (const auto& [name, field] : {std::pair{"lrs_config.initial", LrsField::kInitial},
                                    std::pair{"lrs_config.max", LrsField::kMax}, std::pair{"lrs_config.end", LrsField::kEnd}}) {
    ASSERT_EQ(lrs_field(name), field);
    apply_edit(r, ConfigEdit::set_learning_rate(field, lr));
    EXPECT_EQ(ConfigEdit::set_learning_rate(field, lr).key(), std::string("model.") + name);
  }
  for (const auto& lrs : {r.run.model.lrs, read_back(r).model.lrs}) {
    EXPECT_EQ(lrs.initial, lr);
    EXPECT_EQ(lrs.max, lr);
    EXPECT_EQ(lrs.end, lr);
  }
  EXPECT_NE(to_yaml(r.config).find("max: 1.2345678901234568e-05"), std::string::npos) << to_yaml(r.config);
  EXPECT_FALSE(lrs_field("lr"));
  EXPECT_FALSE(lrs_field("lrs_config.last_epoch"));
}

TEST(ConfigEdit, CkptPathChangesTheTypedSettingAndTheRecord) {
  auto r = salt::testing::resolve_args({"-c", salt::testing::repo_config("DL1.yaml")});
  apply_edit(r, ConfigEdit::set_ckpt_path("/runs/a/ckpts/best.ckpt"));
  EXPECT_EQ(r.run.ckpt_path, "/runs/a/ckpts/best.ckpt");
  EXPECT_EQ(read_back(r).ckpt_path, "/runs/a/ckpts/best.ckpt");
}

// PyYAML (YAML 1.1) reads 1e-05 as a string: the dot goes in, and the value reads back.
TEST(ConfigEdit, FloatTextIsYaml11) {
  EXPECT_EQ(yaml11_float_text(1e-5), "1.0e-05");
  EXPECT_EQ(yaml11_float_text(1e20), "1.0e+20");
  EXPECT_EQ(yaml11_float_text(3), "3.0");
  EXPECT_EQ(yaml11_float_text(0.000123), "0.000123");
  for (double x : {1e-5, 1e20, 3.0, 0.000123, 2.5e-7, 0.1 + 0.2, -4e-300})
    EXPECT_EQ(yaml11_float(yaml11_float_text(x)), x) << yaml11_float_text(x);
}

}  // namespace
}  // namespace salt::config
