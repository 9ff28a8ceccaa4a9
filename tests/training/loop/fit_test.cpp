// `salt fit` end to end on the toy data: run directory, checkpoints, metrics,
// refusals, resume, NaN stop. (Issue: training and evaluation end to end.)
#include <yaml-cpp/yaml.h>

#include <fstream>

#include "training/fit_support.h"
#include "training/checkpoints/checkpoint.h"

namespace salt::testing {
namespace fs = std::filesystem;

namespace {
std::vector<std::string> csv_header(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> cols;
  std::stringstream ss(line);
  std::string c;
  while (std::getline(ss, c, ',')) cols.push_back(c);
  return cols;
}
}  // namespace

TEST_F(FitTest, FastDevRunWritesNothing) {
  auto r = salt("fit", small_gn2({"--trainer.fast_dev_run", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(runs().empty());
  EXPECT_NE(r.err.find("val/jets_classification_loss"), std::string::npos) << r.err;
}

TEST_F(FitTest, ShortRunFillsTheRunDirectoryLikeSalt) {
  auto r = salt("fit", small_gn2({"--trainer.max_epochs", "2", "--trainer.log_every_n_steps", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto all = runs();
  ASSERT_EQ(all.size(), 1u);
  const auto run = all[0];
  EXPECT_TRUE(std::regex_match(run.filename().string(), std::regex("GN2_cpu_[0-9]{8}-T[0-9]{6}")));
  for (const auto* f : {"config.yaml", "metadata.yaml", "metrics.csv", "norm_dict.yaml", "class_dict.yaml"})
    EXPECT_TRUE(fs::exists(run / f)) << f;

  auto config = YAML::LoadFile((run / "config.yaml").string());
  EXPECT_EQ(config["data"]["norm_dict"].as<std::string>(), (run / "norm_dict.yaml").string());
  EXPECT_EQ(config["data"]["class_dict"].as<std::string>(), (run / "class_dict.yaml").string());
  auto tasks = config["model"]["model"]["init_args"]["tasks"]["init_args"]["modules"];
  EXPECT_EQ(tasks[0]["init_args"]["loss"]["init_args"]["weight"].size(), 4u);  // class weights baked in
  EXPECT_EQ(tasks[1]["init_args"]["loss"]["init_args"]["weight"].size(), 8u);
  EXPECT_EQ(config["model"]["model"]["init_args"]["init_nets"][0]["variables"]["tracks"].size(), 19u);
  EXPECT_EQ(config["seed_everything"].as<int>(), 42);

  auto meta = YAML::LoadFile((run / "metadata.yaml").string());
  for (const auto* key : {"train_file", "val_file", "num_train", "num_val", "batch_size", "trainable_params", "num_gpus",
                          "gpu_ids", "num_workers", "available_train", "available_val", "salt_hash", "timestamp",
                          "torch_version", "hostname", "object_classes"})
    EXPECT_TRUE(meta[key]) << key;
  EXPECT_EQ(meta["num_train"].as<int>(), 2000);
  // salt's map of class index to name; CUDA's version (null on a CPU build) and Lightning's
  ASSERT_TRUE(meta["object_classes"].IsMap());
  EXPECT_EQ(meta["object_classes"][0].as<std::string>(), "bjets");
  EXPECT_EQ(meta["object_classes"][3].as<std::string>(), "taujets");
  EXPECT_TRUE(meta["cuda_version"].IsDefined());
  EXPECT_EQ(meta["cuda_version"].IsNull(), !torch::cuda::is_available());
  EXPECT_EQ(meta["lightning_version"].as<std::string>(), "2.6.1");
  EXPECT_EQ(meta["trainable_params"].as<int>(), 82222);
  // The preprocessing's JSON attributes as YAML, as salt's get_attr parses them.
  ASSERT_TRUE(meta["dsids"].IsSequence()) << meta["dsids"];
  EXPECT_EQ(meta["dsids"][0].as<int>(), 999999);
  ASSERT_TRUE(meta["jet_counts_train"].IsMap()) << meta["jet_counts_train"];
  EXPECT_GT(meta["jet_counts_train"]["bjets"].as<int>(), 0);

  auto cols = csv_header(run / "metrics.csv");
  for (const auto* c : {"epoch", "step", "train/loss", "train/jets_classification_loss", "train/track_origin_loss",
                        "train/track_vertexing_loss", "lr-AdamW", "val/loss", "val/jets_classification_loss"})
    EXPECT_NE(std::find(cols.begin(), cols.end(), c), cols.end()) << c;

  auto ckpts = checkpoints(run);
  ASSERT_EQ(ckpts.size(), 2u);
  EXPECT_TRUE(std::regex_match(ckpts[0].filename().string(), std::regex("epoch=000-val_loss=[0-9]\\.[0-9]{5}\\.ckpt")));
  EXPECT_TRUE(std::regex_match(ckpts[1].filename().string(), std::regex("epoch=001-val_loss=[0-9]\\.[0-9]{5}\\.ckpt")));
  auto state = training::load_checkpoint(ckpts[1]);
  EXPECT_EQ(state.epoch, 1);
  EXPECT_EQ(state.global_step, 16);  // 2000 / 250 batches x 2 epochs
  double monitored = 0;
  for (const auto& [k, v] : state.metrics)
    if (k == "val/jets_classification_loss") monitored = v;
  char expected[64];
  std::snprintf(expected, sizeof expected, "val_loss=%.5f.ckpt", monitored);
  EXPECT_NE(ckpts[1].filename().string().find(expected), std::string::npos);
  // no temp files anywhere in the run directory
  for (const auto& e : fs::recursive_directory_iterator(run))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();

  // salt test whose PredictionWriter asks for a field the test file lacks: one line, no prediction file.
  auto bad = salt("test", {"-c", (run / "config.yaml").string(), "--trainer.callbacks.1.init_args.extra_vars",
                           "{jets: [no_such_field]}"});
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_EQ(error_lines(bad.err), 1) << bad.err;
  EXPECT_NE(bad.err.find("PredictionWriter extra_vars: 'no_such_field' is not a field of"), std::string::npos)
      << bad.err;
  for (const auto& e : fs::recursive_directory_iterator(run))
    EXPECT_EQ(e.path().filename().string().find("__test_"), std::string::npos) << e.path();
}

TEST_F(FitTest, ResumingContinuesExactlyLikeAnUninterruptedRun) {
  // Run A: 4 epochs. Run B: from A's epoch-1 checkpoint, epochs 2 and 3. Both on
  // one thread: B's final weights, optimizer state and step equal A's, bitwise. B has
  // another number of (persistent) workers: the order is salt's, which depends on
  // whether the workers persist, not on how many there are.
  auto a = salt("fit", small_gn2({"--trainer.max_epochs", "4", "-ls", "A", "--data.num_workers", "2"}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto run_a = dir / "logs" / "GN2_cpu_A";
  auto ckpts_a = checkpoints(run_a);
  ASSERT_EQ(ckpts_a.size(), 4u);
  auto b = salt("fit", {"-c", (run_a / "config.yaml").string(), "--ckpt_path", ckpts_a[1].string(), "-ls", "B",
                        "--data.num_workers", "3"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto run_b = dir / "logs" / "GN2_cpu_B";  // a new run dir next to A, not inside it
  auto ckpts_b = checkpoints(run_b);
  ASSERT_EQ(ckpts_b.size(), 2u);
  EXPECT_EQ(ckpts_b[0].filename().string().substr(0, 10), "epoch=002-");
  EXPECT_EQ(ckpts_b[1].filename(), ckpts_a[3].filename());  // same epoch and same val loss
  auto final_a = training::load_checkpoint(ckpts_a[3]);
  auto final_b = training::load_checkpoint(ckpts_b[1]);
  EXPECT_EQ(final_a.global_step, final_b.global_step);
  ASSERT_EQ(final_a.state_dict.size(), final_b.state_dict.size());
  for (std::size_t i = 0; i < final_a.state_dict.size(); ++i) {
    EXPECT_EQ(final_a.state_dict[i].first, final_b.state_dict[i].first);
    EXPECT_TRUE(torch::equal(final_a.state_dict[i].second, final_b.state_dict[i].second)) << final_a.state_dict[i].first;
  }
  ASSERT_EQ(final_a.adam_state.size(), final_b.adam_state.size());
  for (std::size_t i = 0; i < final_a.adam_state.size(); ++i) {
    EXPECT_EQ(final_a.adam_state[i].step, final_b.adam_state[i].step);
    EXPECT_TRUE(torch::equal(final_a.adam_state[i].exp_avg_sq, final_b.adam_state[i].exp_avg_sq));
  }
}

TEST_F(FitTest, FailedStartLeavesNothingBehind) {
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {"--data.variables.tracks+=no_such_variable"},
           {"--data.train_file", "data/toy/missing.h5"},
           {"--data.num_train", "999999"},
           {"--model.loss_mode", "GLS"},
           {"--trainer.max_epochs", "0"},
           {"--data.num_workers", "100000"},  // was std::bad_alloc (SIGABRT)
           {"--ckpt_path", "data/toy"},  // a directory
           {"--trainer.default_root_dir", "data/toy/norm_dict.yaml/logs"}}) {
    auto r = salt("fit", small_gn2(extra));
    EXPECT_NE(r.exit_code, 0) << extra[0];
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_TRUE(runs().empty()) << extra[0];
  }
}

// No jets to validate (data.num_val 0, or a validation file without rows) means no
// val_loss and so no checkpoint kept: refused before anything is written, as is
// nothing to train on.
TEST_F(FitTest, NoJetsToValidateOrTrainIsRefused) {
  auto py = run_python(R"(
import sys, h5py
with h5py.File(sys.argv[1]) as src, h5py.File(sys.argv[2], "w") as dst:
    for name in src:
        dst.create_dataset(name, data=src[name][:0])
)",
                       {(dir / "data/toy/pp_output_val.h5").string(), (dir / "data/toy/empty_val.h5").string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--data.num_val", "0"}, "data.num_val is 0: no validation loss, so no checkpoint would be kept"},
      {{"--data.num_train", "0"}, "data.num_train is 0: nothing to train on"},
      {{"--data.val_file", "data/toy/empty_val.h5"}, "empty_val.h5 holds no jets: no validation loss"},
  };
  for (const auto& [extra, message] : cases) {
    auto r = salt("fit", small_gn2(extra));
    EXPECT_NE(r.exit_code, 0) << extra[0];
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_TRUE(runs().empty()) << extra[0];
  }
}

// A run directory that is a symbolic link (to another run, say) is refused: the
// run would write its checkpoints and config into the link's target.
TEST_F(FitTest, ARunDirectoryThatIsALinkIsRefused) {
  fs::create_directories(dir / "logs" / "elsewhere");
  write_file(dir / "logs" / "elsewhere" / "keep.txt", "other run");
  fs::create_directory_symlink(dir / "logs" / "elsewhere", dir / "logs" / "GN2_cpu_linked");
  auto r = salt("fit", small_gn2({"-ls", "linked", "-oc"}));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("GN2_cpu_linked is a symbolic link (to " + (dir / "logs" / "elsewhere").string()), std::string::npos)
      << r.err;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir / "logs" / "elsewhere")) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"keep.txt"});
}

// salt's nan_regression.yaml monitors a loss it never logs; Lightning writes 0.
TEST_F(FitTest, UnloggedMonitorLossNamesCheckpointsWithZero) {
  auto r = salt("fit", small_gn2({"--trainer.callbacks.0.init_args.monitor_loss", "val/nope_loss"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("monitor_loss 'val/nope_loss' is not a logged metric"), std::string::npos) << r.err;
  auto ckpts = checkpoints(runs().at(0));
  ASSERT_FALSE(ckpts.empty());
  EXPECT_EQ(ckpts[0].filename().string(), "epoch=000-val_loss=0.00000.ckpt");
}

TEST_F(FitTest, ErrorsNameWhatAndWhere) {
  auto r = salt("fit", small_gn2({"--data.variables.tracks+=no_such_variable"}));
  EXPECT_NE(r.err.find("no_such_variable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("norm_dict.yaml"), std::string::npos) << r.err;
  r = salt("fit", small_gn2({"--data.num_train", "999999"}));
  EXPECT_NE(r.err.find("999"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2,000"), std::string::npos) << r.err;
  r = salt("fit", small_gn2({"--trainer.default_root_dir", "data/toy/norm_dict.yaml/logs"}));
  EXPECT_NE(r.err.find("cannot create the run directory (trainer.default_root_dir)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

TEST_F(FitTest, ExistingConfigIsRefusedUnlessOverwriteConfig) {
  auto first = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "fixed"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto before = read_file(dir / "logs" / "GN2_cpu_fixed" / "config.yaml");
  auto second = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "fixed"}));
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_NE(second.err.find("already exists; use --overwrite_config"), std::string::npos) << second.err;
  EXPECT_EQ(read_file(dir / "logs" / "GN2_cpu_fixed" / "config.yaml"), before);
  auto third = salt("fit", small_gn2({"--trainer.max_epochs", "1", "-ls", "fixed", "-oc"}));
  EXPECT_EQ(third.exit_code, 0) << third.err;
}

TEST_F(FitTest, NanLossStopsAndKeepsTheLastGoodCheckpoint) {
  SALT_REQUIRE(have_python_module("h5py"), "python3-h5py is not installed (scripts/bootstrap.sh installs it)");
  auto good = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "good"}));
  ASSERT_EQ(good.exit_code, 0) << good.err;
  auto ckpt = checkpoints(dir / "logs" / "GN2_cpu_good").at(0);
  auto bytes_before = read_file(ckpt);
  // A training file with NaN inputs in valid track slots, admitted by ignore_finite_checks.
  auto py = write_nan_tracks_copy(dir / "data/toy/pp_output_train.h5", dir / "data/toy/nan_train.h5");
  ASSERT_EQ(py.exit_code, 0) << py.err;
  auto bad = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "bad", "--ckpt_path", ckpt.string(),
                                    "--data.train_file", "data/toy/nan_train.h5", "--data.ignore_finite_checks", "true"}));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("train/loss is not finite at epoch"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("docs/training.md"), std::string::npos) << bad.err;
  EXPECT_EQ(read_file(ckpt), bytes_before);
  EXPECT_FALSE(fs::exists(dir / "logs" / "GN2_cpu_bad" / "ckpts"));
  // Without ignore_finite_checks the reader refuses the file up front, naming it.
  auto refused = salt("fit", small_gn2({"--data.train_file", "data/toy/nan_train.h5"}));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("Non-finite inputs for 'tracks'"), std::string::npos) << refused.err;
}

}  // namespace salt::testing

namespace salt::testing {

TEST_F(FitTest, ResumingPastTheScheduleFailsBeforeTraining) {
  auto a = salt("fit", small_gn2({"--trainer.max_epochs", "2", "-ls", "short"}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto run = dir / "logs" / "GN2_cpu_short";
  auto r = salt("fit", {"-c", (run / "config.yaml").string(), "--ckpt_path", checkpoints(run).at(0).string(),
                        "--trainer.max_epochs", "5", "-ls", "longer"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("32 more optimizer steps but the checkpoint's one-cycle schedule has 8 left"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--model.lrs_config.last_epoch 0"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "logs" / "GN2_cpu_longer"));

  // salt's training guide: --model.lrs_config.last_epoch 0 trains past the finished
  // schedule with a new one over this run's 24 steps, starting at step 1.
  auto finished = checkpoints(run).back();
  ASSERT_EQ(training::load_checkpoint(finished).global_step, 16);
  auto more = salt("fit", {"-c", (run / "config.yaml").string(), "--ckpt_path", finished.string(), "--trainer.max_epochs",
                           "3", "--model.lrs_config.last_epoch", "0", "-ls", "more"});
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_NE(more.err.find("a new one-cycle schedule of 24 steps starts at step 1"), std::string::npos) << more.err;
  auto state = training::load_checkpoint(checkpoints(dir / "logs" / "GN2_cpu_more").back());
  EXPECT_EQ(state.global_step, 24);
  EXPECT_EQ(state.scheduler_total_steps, 24);
  EXPECT_EQ(state.scheduler_last_epoch, 9);  // started at 1, then 8 steps
}

}  // namespace salt::testing
