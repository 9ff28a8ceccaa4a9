// Data-parallel training end to end: real `salt fit` processes talking Gloo over
// loopback, on the toy data set, one CPU thread each.
//
// Equivalence: unshuffled (overfit_batches 1.0: every batch, in file order; shuffled,
// the ranks' batches follow Lightning's DistributedSampler, tests/training/loop/
// batch_order_test.cpp), 2 ranks with batch_size B average the gradients of batches
// p[2i] (rank 0) and p[2i+1] (rank 1) of the B-row batches p. A single process with
// batch_size B and accumulate_grad_batches 2 visits p[2i], p[2i+1] in one optimizer step and uses
// (g(p[2i]) + g(p[2i+1])) / 2: the same rows, the same global batch of 2B, and the
// same mean of per-batch mean losses (a single batch of 2B rows would weight the
// masked track losses differently). Same number of steps, same OneCycle schedule.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "parallel/dist_support.h"
#include "parallel/free_port.h"

namespace salt::testing {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Weights may differ only by float rounding of the gradient average; (a + b) / 2 and
// a / 2 + b / 2 are in fact equal in binary floating point, so this is loose.
constexpr double kTolerance = 1e-5;

class DistFitTest : public FitTest {
 protected:
  std::vector<std::string> two_ranks(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--trainer.devices", "2", "--trainer.accelerator", "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    return small_gn2(args);
  }
  // The equivalence tests' runs: every batch in file order.
  static std::vector<std::string> in_file_order(std::vector<std::string> args) {
    args.insert(args.end(), {"--trainer.overfit_batches", "1.0"});
    return args;
  }
};

}  // namespace

TEST_F(DistFitTest, TwoProcessesTrainLikeOneWithTheSameGlobalBatches) {
  auto single = salt("fit", small_gn2(in_file_order({"--trainer.max_epochs", "2", "--trainer.accumulate_grad_batches", "2", "-ls", "single"})));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  auto dist = salt("fit", two_ranks(in_file_order({"--trainer.max_epochs", "2", "-ls", "ddp"})));
  ASSERT_EQ(dist.exit_code, 0) << dist.err;
  // Many small buckets (launch order) and no hooks (the synchronous path) give the same.
  auto buckets = salt("fit", two_ranks(in_file_order({"--trainer.max_epochs", "2", "-ls", "buckets"})),
                      {"OMP_NUM_THREADS=1", "SALT_DIST_BUCKET_MB=0.02"});
  ASSERT_EQ(buckets.exit_code, 0) << buckets.err;
  auto sync = salt("fit", two_ranks(in_file_order({"--trainer.max_epochs", "2", "-ls", "sync"})), {"OMP_NUM_THREADS=1", "SALT_DIST_OVERLAP=0"});
  ASSERT_EQ(sync.exit_code, 0) << sync.err;

  EXPECT_NE(dist.err.find("[rank 0] info: data parallel: 2 processes"), std::string::npos) << dist.err;
  EXPECT_NE(dist.err.find("global batch 500 = 250 x 2"), std::string::npos) << dist.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(buckets.err, m, std::regex("gradient sync: ([0-9]+) bucket"))) << buckets.err;
  EXPECT_GT(std::stoi(m[1]), 4) << buckets.err;  // 0.33 MB of gradients in 0.02 MB buckets
  EXPECT_NE(sync.err.find("0 started during backward"), std::string::npos) << sync.err;

  auto a = checkpoints(dir / "logs" / "GN2_cpu_single");
  ASSERT_EQ(a.size(), 2u);
  for (const char* run : {"ddp", "buckets", "sync"}) {
    auto b = checkpoints(dir / "logs" / (std::string("GN2_cpu_") + run));
    ASSERT_EQ(b.size(), 2u) << run;
    for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(a[i].filename(), b[i].filename()) << run;  // same val loss, 5 digits
    auto ca = training::load_checkpoint(a[1]), cb = training::load_checkpoint(b[1]);
    EXPECT_EQ(ca.global_step, 8);  // 2000 jets: 8 batches of 250, 4 steps of 2 batches per epoch, 2 epochs
    EXPECT_EQ(cb.global_step, ca.global_step) << run;
    EXPECT_LT(max_weight_diff(a[1], b[1]), kTolerance) << run;
    // Validation metrics are jet-weighted means over both ranks' shards: the val set
    // (500 jets, 2 batches) splits evenly, so they equal the single process's.
    ASSERT_EQ(ca.metrics.size(), cb.metrics.size());
    for (std::size_t i = 0; i < ca.metrics.size(); ++i)
      EXPECT_NEAR(ca.metrics[i].second, cb.metrics[i].second, 1e-6) << run << " " << ca.metrics[i].first;
  }
}

// WorkingPoints on two ranks gathers every rank's validation jets: the figures
// are one process's over the same batches (the global batch by accumulation).
TEST_F(DistFitTest, WorkingPointsGatherEveryRanksJets) {
  const std::string wp = "--trainer.callbacks+={class_path: salt_cpp.callbacks.WorkingPoints}";
  auto single = salt("fit", small_gn2(in_file_order({"--trainer.accumulate_grad_batches", "2", "--trainer.max_epochs",
                                                     "2", "-ls", "one", wp})));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  auto dist = salt("fit", two_ranks(in_file_order({"--trainer.max_epochs", "2", "-ls", "two", wp})));
  ASSERT_EQ(dist.exit_code, 0) << dist.err;
  auto validations = [&](const char* run) {
    std::vector<std::map<std::string, double>> rows;
    for (const auto& row : read_metrics(dir / "logs" / run / "metrics.csv"))
      if (row.count("val/loss")) rows.push_back(row);
    return rows;
  };
  const auto a = validations("GN2_cpu_one"), b = validations("GN2_cpu_two");
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (std::size_t e = 0; e < 2; ++e)
    for (const char* name : {"light_rej_70", "light_rej_77", "light_rej_85", "c_rej_70", "c_rej_77", "c_rej_85"}) {
      const auto key = std::string("val/GN2_cpu_") + name;
      ASSERT_TRUE(a[e].count(key) && b[e].count(key)) << key;
      EXPECT_NEAR(a[e].at(key), b[e].at(key), 1e-9 * a[e].at(key)) << key << " at epoch " << e;
    }
}

// LearningRateFinder on 2 ranks: the trial's epochs (crossing into new ones) in rank
// 0's order, its losses rank 0's (Lightning broadcasts rank 0's results), so both
// ranks stop, suggest and train alike; the sweep is rank 0's file.
TEST_F(DistFitTest, TheLearningRateFinderSweepsOnEveryRankWithRankZerosLosses) {
  auto dist = salt("fit", two_ranks({"--trainer.max_epochs", "5", "-ls", "lrf",
                                     "--trainer.callbacks+={class_path: lightning.pytorch.callbacks.LearningRateFinder, "
                                     "init_args: {min_lr: 1.0e-5, max_lr: 0.01, num_training_steps: 20, "
                                     "early_stop_threshold: null, attr_name: lrs_config.max}}"}));
  ASSERT_EQ(dist.exit_code, 0) << dist.err;
  const auto run = dir / "logs" / "GN2_cpu_lrf";
  std::ifstream csv(run / "lr_find.csv");
  int rows = -1;  // the header
  for (std::string line; std::getline(csv, line);) ++rows;
  EXPECT_EQ(rows, 20);  // 4 batches a rank an epoch: the trial goes on through 5
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dist.err, m, std::regex("Learning rate set to ([0-9.e-]+)"))) << dist.err;
  const auto config = YAML::LoadFile((run / "config.yaml").string());
  EXPECT_EQ(config["model"]["lrs_config"]["max"].as<double>(), std::stod(m[1]));
  EXPECT_EQ(checkpoints(run).size(), 5u);
}

// A validation set of fewer batches than ranks (1 batch, 2 ranks): as Lightning's
// distributed sampler pads it, rank 1 validates batch 0 again, so every epoch is
// validated and checkpointed, and the jet-weighted mean equals one process's.
TEST_F(DistFitTest, AValidationSetOfFewerBatchesThanRanksIsValidatedOnEveryRank) {
  const std::vector<std::string> few{"--data.num_val", "250", "--trainer.max_epochs", "2"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), few.begin(), few.end());
    return extra;
  };
  auto single = salt("fit", small_gn2(in_file_order(with({"--trainer.accumulate_grad_batches", "2", "-ls", "one"}))));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  auto dist = salt("fit", two_ranks(in_file_order(with({"-ls", "two"}))));
  ASSERT_EQ(dist.exit_code, 0) << dist.err;
  const auto a = checkpoints(dir / "logs" / "GN2_cpu_one"), b = checkpoints(dir / "logs" / "GN2_cpu_two");
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u) << dist.err;  // both epochs validated and kept
  int validations = 0;
  for (const auto& row : read_metrics(dir / "logs" / "GN2_cpu_two" / "metrics.csv")) validations += row.count("val/loss");
  EXPECT_EQ(validations, 2);
  const auto ca = training::load_checkpoint(a[1]), cb = training::load_checkpoint(b[1]);
  ASSERT_EQ(ca.metrics.size(), cb.metrics.size());
  for (std::size_t i = 0; i < ca.metrics.size(); ++i)
    EXPECT_NEAR(ca.metrics[i].second, cb.metrics[i].second, 1e-5) << ca.metrics[i].first;
}

// Lightning re-seeds every process once the model is built (reset_seed), and its
// DistributedSamplerWrapper lists the epoch (salt's randperm) when the iterator is
// made, before that iterator's base seed: so each epoch's order follows from the
// seed alone. The run's mid-epoch checkpoints record it.
TEST_F(DistFitTest, ShuffledRanksTakeTheOrderLightningDrawsFromTheSeedItself) {
  SALT_REQUIRE(have_python_module("torch"), "Python torch (python3-torch)");
  write_file(dir / "mid.yaml", R"(trainer:
  callbacks:
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args: {every_n_train_steps: 2, save_top_k: -1, filename: "mid-{step}"}
)");
  auto r = salt("fit", two_ranks({"-c", (dir / "mid.yaml").string(), "--data.num_workers", "0", "--seed_everything", "7",
                                  "--trainer.max_epochs", "2", "-ls", "shuffled"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 8 batches, 4 steps an epoch: per epoch randperm(8), the base seed; a validation's base seed.
  const auto expected = run_python(R"(
import torch
torch.manual_seed(7)
for epoch in range(2):
    print(*torch.randperm(8).tolist())
    torch.empty((), dtype=torch.int64).random_()
    torch.empty((), dtype=torch.int64).random_()
)");
  ASSERT_EQ(expected.exit_code, 0) << expected.err;
  std::string ours;
  for (int step : {2, 6}) {
    const auto ck = training::load_checkpoint(dir / "logs" / "GN2_cpu_shuffled" / "checkpoints" /
                                              ("mid-step=" + std::to_string(step) + ".ckpt"));
    ASSERT_TRUE(ck.epoch_order.defined()) << step;
    for (int64_t i = 0; i < ck.epoch_order.numel(); ++i)
      ours += std::to_string(ck.epoch_order[i].item<int64_t>()) + (i + 1 < ck.epoch_order.numel() ? " " : "\n");
  }
  EXPECT_EQ(ours, expected.out);
}

// salt's checkpoint saved inside a 2-rank epoch (Lightning's loops count rank 0's
// batches) resumes on 2 ranks as Lightning resumes it: each rank's count, the epoch
// started over from the order the re-seeded processes draw, each rank training the
// batches it has left (measured against the real salt: docs/migrating.md). A salt-cpp
// checkpoint saved in that restarted epoch records the restart, so resuming it
// again ends where the restarted run ends.
TEST_F(DistFitTest, ASaltMidEpochCheckpointRestartsItsEpochOnEveryRank) {
  SALT_REQUIRE(have_python_module("torch"), "Python torch (python3-torch)");
  write_file(dir / "mid.yaml", R"(trainer:
  callbacks:
    - class_path: lightning.pytorch.callbacks.ModelCheckpoint
      init_args: {every_n_train_steps: 1, save_top_k: -1, filename: "mid-{step}"}
)");
  auto args = [&](const std::string& suffix, std::vector<std::string> extra = {}) {
    auto a = two_ranks({"-c", (dir / "mid.yaml").string(), "--data.num_workers", "0", "--seed_everything", "7",
                        "--trainer.max_epochs", "2", "-ls", suffix});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const auto mid = [&](const std::string& run, int step) {
    return dir / "logs" / ("GN2_cpu_" + run) / "checkpoints" / ("mid-step=" + std::to_string(step) + ".ckpt");
  };
  auto straight = salt("fit", args("straight"));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  const auto salt_ckpt = dir / "salt_mid.ckpt";  // epoch 0, 1 of each rank's 4 batches done
  auto r = run_python(read_file(source_dir() / "tests" / "zoo" / "as_salt_writes_it.py"),
                      {mid("straight", 1).string(), salt_ckpt.string(), "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto restarted = salt("fit", args("restarted", {"--ckpt_path", salt_ckpt.string()}));
  ASSERT_EQ(restarted.exit_code, 0) << restarted.err;
  EXPECT_EQ(restarted.err.find("skipping"), std::string::npos) << restarted.err;  // same world: no share rescaled
  const auto first = training::load_checkpoint(mid("straight", 1)), inside = training::load_checkpoint(mid("restarted", 2));
  EXPECT_TRUE(torch::equal(inside.epoch_order, first.epoch_order));  // the re-seeded draw: a fresh run's epoch 0
  EXPECT_EQ(inside.epoch_restart, 1);
  EXPECT_EQ(first.epoch_restart, 0);
  EXPECT_TRUE(fs::exists(mid("restarted", 8)));  // 3 steps left in epoch 0 after step 1, 4 in epoch 1
  EXPECT_FALSE(fs::exists(mid("restarted", 9)));
  EXPECT_EQ(training::load_checkpoint(mid("restarted", 4)).epoch_restart, 1);
  EXPECT_EQ(training::load_checkpoint(mid("restarted", 5)).epoch_restart, 0);  // epoch 1 is a plain one

  auto again = salt("fit", args("again", {"--ckpt_path", mid("restarted", 2).string()}));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(max_weight_diff(mid("restarted", 8), mid("again", 8)), 0.0);
}

TEST_F(DistFitTest, WithAccumulationOnlyTheStepBoundarySynchronises) {
  // 2 ranks x accumulate 2 = 1 process x accumulate 4: steps of p[4i..4i+3].
  auto single = salt("fit", small_gn2(in_file_order({"--trainer.max_epochs", "1", "--trainer.accumulate_grad_batches", "4", "-ls", "acc4"})));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  auto dist = salt("fit", two_ranks(in_file_order({"--trainer.max_epochs", "1", "--trainer.accumulate_grad_batches", "2", "-ls", "acc2x2"})));
  ASSERT_EQ(dist.exit_code, 0) << dist.err;
  EXPECT_NE(dist.err.find("gradient sync: 1 bucket(s), 2 started during backward"), std::string::npos) << dist.err;
  auto a = checkpoints(dir / "logs" / "GN2_cpu_acc4"), b = checkpoints(dir / "logs" / "GN2_cpu_acc2x2");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(training::load_checkpoint(b[0]).global_step, 2);
  // Summation order differs here (g0/4 + g1/4 + ... vs ((g0 + g2)/2 + (g1 + g3)/2) / 2).
  EXPECT_LT(max_weight_diff(a[0], b[0]), kTolerance);
}

TEST_F(DistFitTest, AnErrorEveryRankHitsEndsWithOneSummaryLine) {
  auto r = salt("fit", two_ranks({"--data.norm_dict", "data/toy/no_such_norm_dict.yaml"}), {"OMP_NUM_THREADS=1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // Each rank's own line stays visible behind its "[rank N]" prefix; the launcher's
  // summary is the one line that starts with "salt: error:".
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("\nsalt: error: rank "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no_such_norm_dict.yaml; the other ranks were stopped"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  EXPECT_TRUE(runs().empty());
}

TEST_F(DistFitTest, AKilledRankEndsTheRunWithAClearErrorAndNoHang) {
  auto args = two_ranks({"--trainer.max_epochs", "200", "-ls", "killed"});
  std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
  argv.insert(argv.end(), args.begin(), args.end());
  BackgroundProcess launcher(argv, dir.path(), {"OMP_NUM_THREADS=1"});
  const auto run = dir / "logs" / "GN2_cpu_killed";
  ASSERT_TRUE(wait_until([&] { return fs::exists(run / "metrics.csv"); }, 60s));  // training is under way
  int victim = -1;
  ASSERT_TRUE(wait_until([&] { return (victim = worker_pid(launcher.pid(), 1)) > 0; }, 10s));
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(victim, SIGKILL);
  ASSERT_TRUE(wait_until([&] { return !process_alive(launcher.pid()); }, 30s)) << "the launcher hangs";
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto r = launcher.wait();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("salt: error: rank 1 was killed by signal 9"), std::string::npos) << r.err;
  EXPECT_LT(seconds, 15.0);  // noticed at once, not after a timeout
  EXPECT_EQ(worker_pid(launcher.pid(), 0), -1);  // rank 0 was stopped too
}

// A peer's death is an error on rank 0 too: OnExceptionCheckpoint saves rank 0's last
// step (every rank holds the same weights) before the run ends.
TEST_F(DistFitTest, AKilledRanksPeerSavesItsCheckpointOnException) {
  write_file(dir / "crash.yaml", "trainer:\n  callbacks:\n"
                                 "    - class_path: salt.callbacks.Checkpoint\n"
                                 "      init_args: {monitor_loss: val/jets_classification_loss}\n"
                                 "    - class_path: lightning.pytorch.callbacks.OnExceptionCheckpoint\n"
                                 "      init_args: {dirpath: " + (dir / "crash").string() + "}\n");
  auto args = two_ranks({"-c", (dir / "crash.yaml").string(), "--trainer.max_epochs", "200", "-ls", "killed"});
  std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
  argv.insert(argv.end(), args.begin(), args.end());
  BackgroundProcess launcher(argv, dir.path(), {"OMP_NUM_THREADS=1"});
  const auto run = dir / "logs" / "GN2_cpu_killed";
  ASSERT_TRUE(wait_until([&] { return fs::exists(run / "metrics.csv"); }, 60s));  // training is under way
  int victim = -1;
  ASSERT_TRUE(wait_until([&] { return (victim = worker_pid(launcher.pid(), 1)) > 0; }, 10s));
  ::kill(victim, SIGKILL);
  auto r = launcher.wait();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("salt: error: rank 1 was killed by signal 9"), std::string::npos) << r.err;
  const auto crash = dir / "crash" / "on_exception.ckpt";
  ASSERT_TRUE(fs::exists(crash)) << r.err;
  EXPECT_NE(r.err.find("OnExceptionCheckpoint: saved " + crash.string()), std::string::npos) << r.err;
  const auto saved = training::load_checkpoint(crash);
  EXPECT_GT(saved.global_step, 0);
  EXPECT_NE(r.err.find("[rank 0] info: OnExceptionCheckpoint: saved"), std::string::npos) << r.err;
  for (const auto& [name, tensor] : saved.state_dict) EXPECT_TRUE(tensor.isfinite().all().item<bool>()) << name;
}

TEST_F(DistFitTest, TorchrunStyleVariablesByHandAndOnlyRankZeroWrites) {
  const int port = parallel::free_local_port();
  auto args = two_ranks({"--trainer.max_epochs", "2"});  // timestamped run directory: rank 0 names it
  std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto env = [&](int rank) {
    return std::vector<std::string>{"OMP_NUM_THREADS=1",  "RANK=" + std::to_string(rank), "LOCAL_RANK=" + std::to_string(rank),
                                    "WORLD_SIZE=2",       "MASTER_ADDR=127.0.0.1",         "MASTER_PORT=" + std::to_string(port),
                                    "SALT_DIST_TIMEOUT=30"};
  };
  BackgroundProcess rank1(argv, dir.path(), env(1));  // the non-server rank first: it waits for rank 0
  std::this_thread::sleep_for(1s);
  BackgroundProcess rank0(argv, dir.path(), env(0));
  auto r0 = rank0.wait();
  auto r1 = rank1.wait();
  ASSERT_EQ(r0.exit_code, 0) << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  EXPECT_EQ(r0.err.find("[rank"), std::string::npos);  // no launcher of ours: plain output
  EXPECT_NE(r0.err.find("run directory:"), std::string::npos) << r0.err;
  EXPECT_NE(r0.err.find("finished:"), std::string::npos) << r0.err;
  EXPECT_EQ(r1.err.find("run directory:"), std::string::npos) << r1.err;
  EXPECT_EQ(r1.err.find("finished:"), std::string::npos) << r1.err;
  EXPECT_EQ(r1.err.find("Params"), std::string::npos) << r1.err;  // no model summary either
  auto all = runs();
  ASSERT_EQ(all.size(), 1u);  // one run directory, named by rank 0
  for (const char* f : {"config.yaml", "metadata.yaml", "metrics.csv", "norm_dict.yaml", "class_dict.yaml"})
    EXPECT_TRUE(fs::exists(all[0] / f)) << f;
  EXPECT_EQ(checkpoints(all[0]).size(), 2u);
}

TEST_F(DistFitTest, Sigusr1RequeuesEveryRankAtTheSameStepAndTheRerunResumesExactly) {
  // 12 epochs (~0.2 s each): the signal, sent once epoch 0's checkpoint exists, lands mid-run.
  auto straight = salt("fit", two_ranks({"--trainer.max_epochs", "12", "-ls", "straight"}));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  auto args = two_ranks({"--trainer.max_epochs", "12", "-ls", "requeued", "-oc", "--trainer.log_every_n_steps", "1"});
  std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto run = dir / "logs" / "GN2_cpu_requeued";
  {
    BackgroundProcess first(argv, dir.path(), {"OMP_NUM_THREADS=1"});
    ASSERT_TRUE(wait_until([&] { return fs::exists(run / "ckpts") && !checkpoints(run).empty(); }, 60s));
    first.signal(SIGUSR1);  // to the launcher, which forwards it
    ASSERT_TRUE(wait_until([&] { return !process_alive(first.pid()); }, 60s));
    auto r = first.wait();
    // Not a Slurm job: every rank stops as by a stop signal, and so does the launcher.
    ASSERT_EQ(r.exit_code, 128 + SIGUSR1) << r.err;
    EXPECT_NE(r.err.find("[rank 0] warning: SIGUSR1: saved"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("failed (exit code"), std::string::npos) << r.err;
  }
  ASSERT_TRUE(fs::exists(run / "ckpts" / "requeue.ckpt"));
  EXPECT_LT(checkpoints(run).size(), 12u);  // it did stop early
  auto second = salt("fit", args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("resuming from " + (run / "ckpts" / "requeue.ckpt").string()), std::string::npos) << second.err;
  EXPECT_FALSE(fs::exists(run / "ckpts" / "requeue.ckpt"));
  auto a = checkpoints(dir / "logs" / "GN2_cpu_straight");
  auto b = checkpoints(run);
  ASSERT_EQ(a.size(), 12u);
  ASSERT_EQ(b.size(), 12u);
  EXPECT_EQ(max_weight_diff(a[11], b[11]), 0.0);  // bitwise: same steps, same reductions
}

TEST_F(DistFitTest, ResumesAnyWorldSizeFromAnEpochCheckpoint) {
  // Checkpoints hold unsharded state: a 2-rank run's epoch-1 checkpoint continued by
  // one process (same global batches via accumulation) ends like the 2-rank run.
  auto ddp = salt("fit", two_ranks(in_file_order({"--trainer.max_epochs", "3", "-ls", "ddp3"})));
  ASSERT_EQ(ddp.exit_code, 0) << ddp.err;
  auto ckpts = checkpoints(dir / "logs" / "GN2_cpu_ddp3");
  ASSERT_EQ(ckpts.size(), 3u);
  auto single = salt("fit", small_gn2(in_file_order({"--trainer.max_epochs", "3", "--trainer.accumulate_grad_batches", "2",
                                                     "-ls", "resumed", "--ckpt_path", ckpts[0].string()})));
  ASSERT_EQ(single.exit_code, 0) << single.err;
  auto resumed = checkpoints(dir / "logs" / "GN2_cpu_resumed");
  ASSERT_EQ(resumed.size(), 2u);
  EXPECT_LT(max_weight_diff(ckpts[2], resumed[1]), kTolerance);
}

// SALT_DIST_BACKEND (parallel/process_group.h): gloo is what CPU processes use anyway and
// trains; nccl cannot reduce CPU tensors and is one line, before any run is written.
TEST_F(DistFitTest, TheBackendCanBeChosenAndNcclOnTheCpuIsOneLine) {
  auto gloo = salt("fit", two_ranks({"-ls", "gloo"}), {"OMP_NUM_THREADS=1", "SALT_DIST_BACKEND=gloo"});
  ASSERT_EQ(gloo.exit_code, 0) << gloo.err;
  EXPECT_NE(gloo.err.find("backend gloo"), std::string::npos) << gloo.err;
  auto nccl = salt("fit", two_ranks({"-ls", "nccl"}), {"OMP_NUM_THREADS=1", "SALT_DIST_BACKEND=nccl"});
  EXPECT_NE(nccl.exit_code, 0) << nccl.err;
  EXPECT_EQ(error_lines(nccl.err), 1) << nccl.err;
  EXPECT_NE(nccl.err.find("SALT_DIST_BACKEND=nccl but the run trains on the CPU"), std::string::npos) << nccl.err;
  auto typo = salt("fit", two_ranks({"-ls", "typo"}), {"OMP_NUM_THREADS=1", "SALT_DIST_BACKEND=mpi"});
  EXPECT_NE(typo.exit_code, 0) << typo.err;
  EXPECT_NE(typo.err.find("SALT_DIST_BACKEND=mpi"), std::string::npos) << typo.err;
  EXPECT_EQ(typo.err.find("internal error"), std::string::npos) << typo.err;
}

TEST_F(DistFitTest, ConfigAndLauncherMustAgree) {
  auto r = salt("fit", small_gn2({"--trainer.devices", "3", "--trainer.accelerator", "cpu"}),
                {"OMP_NUM_THREADS=1", "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("salt: error: torchrun-style variables started 2 process(es) but trainer.devices=3"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(runs().empty());
}

TEST_F(DistFitTest, AMissingPeerTimesOutWithOneLine) {
  const int port = parallel::free_local_port();
  const auto t0 = std::chrono::steady_clock::now();
  auto r = salt("fit", two_ranks(),
                {"OMP_NUM_THREADS=1", "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                 "MASTER_PORT=" + std::to_string(port), "SALT_DIST_TIMEOUT=2"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("salt: error: rank 0 of 2 could not join the run at 127.0.0.1:" + std::to_string(port) +
                       " within 2 s"),
            std::string::npos)
      << r.err;
  EXPECT_LT(seconds, 20.0);
  EXPECT_TRUE(runs().empty());
}

}  // namespace salt::testing

namespace salt::testing {

// Ranks started by hand (torchrun's variables) with different configs: before, Gloo
// aborted the weights' broadcast (a model of another size) or the run trained on
// (another batch size). Every rank now says the same line before training.
TEST_F(DistFitTest, RanksSetUpDifferentlyStopWithOneLineNamingTheDifference) {
  auto start_pair = [&](const std::vector<std::string>& rank1_extra) {
    const int port = parallel::free_local_port();
    auto argv = [&](const std::vector<std::string>& extra) {
      std::vector<std::string> a{salt::testing::salt_binary(), "fit"};
      for (const auto& x : two_ranks(extra)) a.push_back(x);
      return a;
    };
    auto env = [&](int rank) {
      return std::vector<std::string>{"OMP_NUM_THREADS=1", "RANK=" + std::to_string(rank),
                                      "LOCAL_RANK=" + std::to_string(rank), "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                                      "MASTER_PORT=" + std::to_string(port), "SALT_DIST_TIMEOUT=30"};
    };
    BackgroundProcess rank1(argv(rank1_extra), dir.path(), env(1));
    std::this_thread::sleep_for(1s);
    BackgroundProcess rank0(argv({}), dir.path(), env(0));
    return std::pair{rank0.wait(), rank1.wait()};
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--data.batch_size", "100"}, "data.batch_size is '250' on rank 0 but '100' on rank 1"},
      {{"--model.model.init_args.encoder.init_args.num_layers", "3"}, "the model is 82222 parameters (82222 trained) in "},
      {{"--data.num_train", "1000"}, "the number of training jets is '2000' on rank 0 but '1000' on rank 1"},
  };
  for (const auto& [extra, says] : cases) {
    const auto [r0, r1] = start_pair(extra);
    for (const auto* r : {&r0, &r1}) {
      EXPECT_EQ(r->exit_code, 2) << r->err;
      EXPECT_EQ(error_lines(r->err), 1) << r->err;
      EXPECT_NE(r->err.find("salt: error: the ranks are not set up alike: " + says), std::string::npos) << r->err;
      EXPECT_EQ(r->err.find("terminate"), std::string::npos) << r->err;
    }
  }
  EXPECT_TRUE(runs().empty());
}

}  // namespace salt::testing

namespace salt::testing {

// Before: rank 0's line about a MASTER_PORT another process holds came after four
// lines of c10d's own logging about the failed bind.
TEST_F(DistFitTest, APortInUseIsRank0sFirstAndOnlyLine) {
  const int port = parallel::free_local_port();
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  std::vector<std::string> argv{salt::testing::salt_binary(), "fit"};
  for (const auto& a : two_ranks()) argv.push_back(a);
  const auto r = run_process(argv, dir.path(),
                             {"OMP_NUM_THREADS=1", "RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                              "MASTER_PORT=" + std::to_string(port), "SALT_DIST_TIMEOUT=10"});
  ::close(holder);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(error_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("salt: error: rank 0 cannot serve the run's rendezvous at 127.0.0.1:" + std::to_string(port) +
                       ": port " + std::to_string(port) + " is in use by another process"),
            std::string::npos)
      << r.err;
  for (const char* c10d : {"TCPStore", "socket.cpp", "[W", "[E"})
    EXPECT_EQ(r.err.find(c10d), std::string::npos) << c10d << ": " << r.err;
  EXPECT_TRUE(runs().empty());
}

// A bad data-parallel switch was refused by every worker after it started, and
// once more by the launcher: three lines. Now the launcher reads them first. And
// the workers, started through /proc/self/exe, are named salt (not "exe") in ps.
TEST_F(DistFitTest, ABadDataParallelSwitchIsOneLineBeforeTheWorkersStart) {
  for (const std::string& bad : {"SALT_DIST_TIMEOUT=0", "SALT_DIST_TIMEOUT=1e9", "SALT_DIST_BUCKET_MB=0",
                                 "SALT_DIST_OVERLAP=off"}) {
    SCOPED_TRACE(bad);
    const auto r = salt("fit", two_ranks({"--trainer.fast_dev_run", "1"}), {"OMP_NUM_THREADS=1", bad});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(error_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("salt: error: " + bad + ": expected "), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("[rank"), std::string::npos) << r.err;  // no worker started
  }
  std::vector<std::string> argv{salt_binary(), "fit"};
  for (const auto& a : two_ranks({"--trainer.max_epochs", "50", "-ls", "named"})) argv.push_back(a);
  BackgroundProcess fit(argv, dir.path(), {"OMP_NUM_THREADS=1"});
  const auto children = fs::path("/proc") / std::to_string(fit.pid()) / "task" / std::to_string(fit.pid()) / "children";
  std::vector<int> workers;
  ASSERT_TRUE(wait_until(
      [&] {
        std::ifstream in(children);
        workers.clear();
        for (int pid; in >> pid;) workers.push_back(pid);
        return workers.size() == 2;
      },
      std::chrono::seconds(30)));
  auto comm = [](int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(in, name);
    return name;
  };
  ASSERT_TRUE(wait_until([&] { return comm(workers[0]) == "salt" && comm(workers[1]) == "salt"; }, 10s))
      << comm(workers[0]) << " " << comm(workers[1]);
  EXPECT_EQ(comm(fit.pid()), "salt");
  fit.signal(SIGTERM);
  EXPECT_EQ(fit.wait().exit_code, 128 + SIGTERM);
}

}  // namespace salt::testing
