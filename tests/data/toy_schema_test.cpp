// `salt toydata --config`: the files carry what the config reads, and the reader
// with the config's own settings (labeller, selections, multi_target) reads them.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/one_line_error.h"

#include "config/data_config.h"
#include "data/h5_reader.h"
#include "data/labeller.h"
#include "data/toy_schema.h"
#include "support/test_support.h"

namespace salt::data {
namespace {

YAML::Node tasks_node(const std::string& tasks_yaml) {
  return YAML::Load("init_args: {tasks: {init_args: {modules: " + tasks_yaml + "}}}");
}

const char* kTasks =
    "[{class_path: salt.models.ClassificationTask, init_args: {name: j, input_name: jets, label: flavour_label,"
    "   dense_config: {output_size: 3}}},"
    " {class_path: salt.models.ClassificationTask, init_args: {name: t, input_name: tracks, label: ftagTruthTypeLabel,"
    "   class_names: [a, b, c], label_map: {-2: 2, 7: 1}, dense_config: {output_size: 3}}},"
    " {class_path: salt.models.VertexingTask, init_args: {name: v, input_name: tracks, label: vtx,"
    "   dense_config: {output_size: 1}}},"
    " {class_path: salt.models.RegressionTask, init_args: {name: r, input_name: jets, targets: [mass, handle],"
    "   target_denominators: [pt, pt], dense_config: {output_size: 2}}}]";

config::DataConfig data_config() {
  return config::data_config_from_yaml(YAML::Load(
      "variables: {jets: [pt, eta], tracks: [d0, z0]}\n"
      "input_map: {tracks: trk}\n"
      "num_inputs: {tracks: 7}\n"
      "selections: {tracks: ['d0 < 3.5', 'NSHARED < 1.1']}\n"
      "multi_target: [{input_name: jets, sel_label: HadronConeExclTruthLabelID, opp: '==', value: 15,"
      "                custom_target: handle, source: truth_pt}]\n"));
}

TEST(ToySchema, FieldsFollowTheConfig) {
  const auto schema = toy_schema_from_config(tasks_node(kTasks), data_config(), 20);
  ASSERT_EQ(schema.datasets.size(), 2u);
  EXPECT_EQ(schema.global_dataset, "jets");
  const auto& trk = schema.datasets[1];
  EXPECT_EQ(trk.name, "trk");
  EXPECT_TRUE(trk.sequence);
  EXPECT_EQ(trk.slots, 7);  // num_inputs
  std::vector<std::string> names;
  for (const auto& f : trk.fields) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"d0", "z0", "numberOfPixelSharedHits", "numberOfSCTSharedHits",
                                             "ftagTruthTypeLabel", "vtx"}));
  names.clear();
  for (const auto& f : schema.datasets[0].fields) names.push_back(f.name);
  // pt is an input and a denominator (positive); handle is created by multi_target, not stored.
  EXPECT_EQ(names, (std::vector<std::string>{"pt", "eta", "HadronConeExclTruthLabelID", "truth_pt", "flavour_label",
                                             "mass"}));
  EXPECT_EQ(schema.datasets[0].fields[0].kind, ToyField::Kind::kPositive);
  EXPECT_EQ(schema.class_names, (std::vector<std::string>{"bjets", "cjets", "ujets"}));
  // The mapped label draws raw values of every class: 0, 7 (-> 1), -2 (-> 2), and the keys.
  EXPECT_EQ(trk.fields[4].values, (std::vector<int64_t>{0, 7, -2, -2, 7}));
}

TEST(ToySchema, LabellerRecoversEveryClass) {
  salt::testing::TempDir dir;
  auto data = config::data_config_from_yaml(
      YAML::Load("variables: {jets: [pt], tracks: [d0]}\n"
                 "labeller_config: {use_labeller: true, class_names: [hbb, hcc, top, qcdbb, qcdbx, qcdcx, qcdll, Wqq]}"));
  const char* tasks =
      "[{class_path: salt.models.ClassificationTask, init_args: {name: j, input_name: jets, label: flavour_label,"
      "   class_names: [hbb, hcc, top, qcdbb, qcdbx, qcdcx, qcdll, Wqq], dense_config: {output_size: 8}}}]";
  const auto schema = toy_schema_from_config(tasks_node(tasks), data, 5);
  ToyDataOptions o;
  o.set_out_dir(dir.path()).set_num_train(400).set_num_val(0).set_num_test(0);
  const auto files = write_schema_toy_data(schema, o);
  ReaderOptions r;
  r.set_variables(data.variables).set_labels({{"jets", {"flavour_label"}}}).set_labeller(*data.labeller_config.class_names, true);
  const Batch b = H5Reader(files.train, r).read(0, 400);  // require_labels: every jet gets a class
  const auto y = b.labels.at("jets").at("flavour_label");
  EXPECT_EQ(std::get<0>(at::_unique(y)).numel(), 8) << y;
  const auto cls = YAML::LoadFile(files.class_dict.string());
  EXPECT_EQ(cls["jets"]["flavour_label"].size(), 8u);
}

TEST(ToySchema, UnknownTaskNamesItsKey) {
  const auto msg = salt::testing::one_line_error_of<UsageError>([&] {
    toy_schema_from_config(tasks_node("[{class_path: my.Task, init_args: {input_name: jets}}]"), data_config(), 5);
  });
  EXPECT_NE(msg.find("model.model.init_args.tasks.init_args.modules[0].class_path: salt toydata does not know the labels "
                     "of 'my.Task'"),
            std::string::npos)
      << msg;
}

// Tasks are known by their class (a registered alias counts), not by a substring
// of the class path: before, my.VertexingTaskLike was taken for a VertexingTask.
TEST(ToySchema, TasksAreKnownByTheirClassNotBySubstring) {
  const auto schema = toy_schema_from_config(
      tasks_node("[{class_path: salt.models.task.RegressionTask, init_args: {name: r, input_name: jets, targets: [mass]}}]"),
      data_config(), 5);
  const auto& jets = schema.datasets[0].fields;
  ASSERT_TRUE(std::any_of(jets.begin(), jets.end(), [](const ToyField& f) { return f.name == "mass"; }));
  const auto msg = salt::testing::one_line_error_of<UsageError>([&] {
    toy_schema_from_config(tasks_node("[{class_path: my.VertexingTaskLike, init_args: {input_name: tracks, label: vtx}}]"),
                           data_config(), 5);
  });
  EXPECT_NE(msg.find("modules[0].class_path: salt toydata does not know the labels of 'my.VertexingTaskLike'"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace salt::data
