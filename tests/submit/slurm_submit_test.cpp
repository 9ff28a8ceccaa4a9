// submit/submit_slurm against a real single-node Slurm (slurm_cluster.h): a CPU
// fit, a fit requeued by the requeue signal that resumes from its checkpoint, a 3-run sweep as a job array, and a typo
// that submits nothing.
#include <algorithm>
#include <chrono>
#include <regex>
#include <thread>

#include <yaml-cpp/yaml.h>

#include "submit/slurm_cluster.h"
#include "support/test_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SALT_REQUIRE(cluster_unavailable().empty(), "a Slurm cluster (" << cluster_unavailable() << ")");
  }

  void make_toy_data(int train, int val) {
    ASSERT_NO_THROW(write_toy_data(dir / "data/toy", train, val, 200));
  }

  static std::string cfg(const std::string& name) { return (source_dir() / "configs" / name).string(); }

  // The user's command: the wrapper in submit/, a CPU job sized for this machine.
  // -f: the temp dir is no git repository (salt's --force).
  ProcessResult submit(std::vector<std::string> extra) {
    std::vector<std::string> argv{(source_dir() / "submit" / "submit_slurm").string(),
                                  "-c", cfg("GN2.yaml"), "-c", cfg("GN2_cpu.yaml"), "--cpu", "-cpt", "1", "-m", "1G",
                                  "-f", "--config.data.batch_size=250", "--config.trainer.enable_progress_bar=false"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, dir.path(), {std::string("SALT_BINARY=") + salt::testing::salt_binary()});
  }

  static std::string job_id(const ProcessResult& r) {
    std::smatch m;
    if (std::regex_search(r.out, m, std::regex("submitted job ([0-9]+)"))) return m[1].str();
    return "";
  }

  std::string job_log(const std::string& stem) {
    std::string text;
    for (const auto* ext : {".out", ".err"})
      if (fs::exists(dir / "slurm" / "batch_logs" / (stem + ext)))
        text += read_file(dir / "slurm" / "batch_logs" / (stem + ext));
    return text;
  }

  static std::vector<std::string> epoch_checkpoints(const fs::path& run) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(run / "ckpts", ec))
      if (e.path().filename().string().rfind("epoch=", 0) == 0) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  TempDir dir;
};

TEST_F(SlurmTest, ACpuFitRunsToCompletion) {
  make_toy_data(2000, 500);
  auto r = submit({"-t", "tiny", "-sls", "tiny", "--config.trainer.max_epochs=2"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto id = job_id(r);
  ASSERT_FALSE(id.empty()) << r.out;
  EXPECT_NE(r.out.find("logs: " + (dir / ("slurm/batch_logs/slurm-" + id + ".out")).string()), std::string::npos)
      << r.out;
  ASSERT_TRUE(wait_for_job(id, 120)) << job_log("slurm-" + id);
  auto info = job_info(id);
  EXPECT_EQ(info["JobState"], "COMPLETED") << job_log("slurm-" + id) << cluster().logs();
  EXPECT_EQ(info["ExitCode"], "0:0");
  const auto run = dir / "logs" / "GN2_cpu_tiny";
  EXPECT_TRUE(fs::exists(run / "config.yaml")) << job_log("slurm-" + id);
  EXPECT_EQ(epoch_checkpoints(run).size(), 2u) << job_log("slurm-" + id);
  auto config = read_file(run / "config.yaml");
  EXPECT_NE(config.find("accelerator: cpu"), std::string::npos);
  EXPECT_NE(config.find("num_workers: 1"), std::string::npos);
  EXPECT_NE(job_log("slurm-" + id).find("finished: " + run.string()), std::string::npos) << job_log("slurm-" + id);
}

// --requeue with --signal SIGUSR1@20: the batch shell's trap forwards the signal;
// salt saves ckpts/requeue.ckpt and runs scontrol requeue; the job restarts ~6 s
// later with SLURM_RESTART_COUNT=1 and the same command resumes from the checkpoint
// in the same run directory. Slurm's own pre-timeout signal comes on a 30 s tick
// (10-40 s into a --time 1 job, see the Slurm notes), so a fit waiting for it had
// to outlast 40 s of training (199 s of the suite under load). The test sends the
// same signal the same way (`scancel --batch`: to the batch shell, as --signal=B:
// does) once the first epoch's checkpoint exists; everything after is the job's own.
TEST_F(SlurmTest, ARequeuedFitResumesFromItsCheckpointToCompletion) {
  const int epochs = 6;
  make_toy_data(6000, 500);
  const auto start = std::chrono::steady_clock::now();
  auto r = submit({"-t", "requeue", "--time", "1", "--requeue", "--signal", "SIGUSR1@20",
                   "--config.trainer.max_epochs=" + std::to_string(epochs)});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto id = job_id(r);
  ASSERT_FALSE(id.empty()) << r.out;
  // Training: the first epoch checkpoint is written.
  const auto first_epoch_done = [&] {
    std::error_code ec;
    for (const auto& run : fs::directory_iterator(dir / "logs", ec))
      if (!epoch_checkpoints(run.path()).empty()) return true;
    return false;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!first_epoch_done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(first_epoch_done()) << job_log("slurm-" + id);
  auto sent = run_process({"scancel", "--batch", "--signal=USR1", id}, dir.path());
  ASSERT_EQ(sent.exit_code, 0) << sent.out << sent.err;
  ASSERT_TRUE(wait_for_job(id, 240)) << job_log("slurm-" + id);
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto info = job_info(id);
  const auto log = job_log("slurm-" + id);
  EXPECT_EQ(info["JobState"], "COMPLETED") << log << cluster().logs();
  EXPECT_GE(std::stoi(info["Restarts"].empty() ? "0" : info["Restarts"]), 1) << log;
  EXPECT_NE(log.find("restart 0,"), std::string::npos) << log;
  EXPECT_NE(log.find("restart 1,"), std::string::npos) << log;  // SLURM_RESTART_COUNT in the requeued job
  EXPECT_NE(log.find("SIGUSR1 received"), std::string::npos) << log;
  EXPECT_NE(log.find("SIGUSR1: saved"), std::string::npos) << log;
  EXPECT_NE(log.find("requeueing: scontrol requeue " + id), std::string::npos) << log;

  // One run directory, resumed in place: every epoch's checkpoint, requeue.ckpt gone.
  std::vector<fs::path> runs;
  for (const auto& e : fs::directory_iterator(dir / "logs")) runs.push_back(e.path());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_NE(log.find("resuming from " + (runs[0] / "ckpts" / "requeue.ckpt").string()), std::string::npos) << log;
  // Requeued, then finished: each said once.
  EXPECT_NE(log.find("requeued: " + runs[0].string()), std::string::npos) << log;
  EXPECT_NE(log.find("finished: " + runs[0].string()), std::string::npos) << log;
  EXPECT_EQ(epoch_checkpoints(runs[0]).size(), static_cast<size_t>(epochs)) << log;
  EXPECT_FALSE(fs::exists(runs[0] / "ckpts" / "requeue.ckpt"));
  // The timeline, for the report.
  std::smatch m;
  auto saved = std::regex_search(log, m, std::regex("SIGUSR1: saved [^\n]*")) ? m[0].str() : "";
  std::cout << "requeue: job " << id << " done in " << seconds << " s with " << info["Restarts"]
            << " restart(s); " << saved << "\n"
            << read_file(dir / "slurm" / "batch_logs" / ("slurm-" + id + ".out"));
}

TEST_F(SlurmTest, ASweepRunsAsOneJobArray) {
  make_toy_data(1000, 250);
  write_file(dir / "sweep.yaml", "grid:\n  model.lrs_config.max: [1e-3, 2e-3, 5e-4]\n");
  auto r = submit({"-t", "sw", "--sweep", "sweep.yaml", "--config.trainer.max_epochs=1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("sweep: 3 runs in a job array of 3 task(s)"), std::string::npos) << r.out;
  auto id = job_id(r);
  ASSERT_FALSE(id.empty()) << r.out;
  ASSERT_TRUE(wait_for_job(id, 180)) << job_log("slurm-" + id + "_0");
  const char* expected[] = {"0.001", "0.002", "0.0005"};
  for (int i = 0; i < 3; ++i) {
    const auto task = id + "_" + std::to_string(i);
    auto info = job_info(task);
    EXPECT_EQ(info["JobState"], "COMPLETED") << task << job_log("slurm-" + task);
    EXPECT_EQ(info["ArrayTaskId"], std::to_string(i));
    const auto run = dir / "logs" / ("GN2_cpu_sw_" + std::to_string(i));
    ASSERT_TRUE(fs::exists(run / "config.yaml")) << job_log("slurm-" + task);
    auto config = YAML::LoadFile((run / "config.yaml").string());
    EXPECT_DOUBLE_EQ(config["model"]["lrs_config"]["max"].as<double>(), std::stod(expected[i])) << run;
    EXPECT_EQ(config["log_suffix"].as<std::string>(), "sw_" + std::to_string(i));
    EXPECT_EQ(epoch_checkpoints(run).size(), 1u);
  }
}

TEST_F(SlurmTest, ATypoSubmitsNothing) {
  make_toy_data(200, 100);
  auto all_jobs = [] { return run_process({"squeue", "-h", "-t", "all", "-o", "%i"}).out; };
  const auto before = all_jobs();  // the cluster may hold finished jobs of earlier tests
  auto r = submit({"-t", "typo", "--config.trainer.max_epoch=1"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("max_epochs"), std::string::npos) << r.err;  // did you mean
  EXPECT_FALSE(fs::exists(dir / "slurm"));
  EXPECT_EQ(all_jobs(), before);
}

}  // namespace
}  // namespace salt::testing
