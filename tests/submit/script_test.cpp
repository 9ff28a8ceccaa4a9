// The job script's bash: environments, the requeue trap, valid syntax, and the
// script really run (with stand-ins for srun and salt) so its signal forwarding
// and exit status are checked without a cluster.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "core/errors.h"
#include "submit/submit_slurm.h"
#include "submit_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

// bash -n: the generated script parses.
void expect_valid_bash(const std::string& script) {
  TempDir d;
  write_file(d / "job.sh", script);
  auto r = run_process({"bash", "-n", (d / "job.sh").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err << "\n" << script;
}

TEST_F(SubmitTest, LocalEnvironmentCallsThisBinaryUnderSrun) {
  auto s = submit::prepare_slurm_job(slurm(), work());
  EXPECT_TRUE(contains(s.script_text, "srun --kill-on-bad-exit=1 " + submit::current_executable() + " fit ")) << s.script_text;
  EXPECT_TRUE(contains(s.script_text, "export OMP_NUM_THREADS=1\n"));
  EXPECT_FALSE(contains(s.script_text, "conda"));
  EXPECT_FALSE(contains(s.script_text, "singularity"));
  EXPECT_FALSE(contains(s.script_text, "trap"));  // no requeue, no trap
  expect_valid_bash(s.script_text);
}

TEST_F(SubmitTest, CondaEnvironmentIsActivatedFirst) {
  auto s = submit::prepare_slurm_job(
      slurm({"-e", "conda", "--conda_activate", "/opt/conda/bin/activate", "--conda_env", "salt-cpp"}), work());
  auto activate = s.script_text.find("source /opt/conda/bin/activate");
  auto env = s.script_text.find("conda activate salt-cpp");
  auto fit = s.script_text.find(" fit ");
  ASSERT_NE(activate, std::string::npos) << s.script_text;
  EXPECT_LT(activate, env);
  EXPECT_LT(env, fit);
  expect_valid_bash(s.script_text);
}

TEST_F(SubmitTest, SingularityRunsSaltInTheImageWithBinds) {
  auto s = submit::prepare_slurm_job(
      slurm({"-e", "singularity", "--image", "/images/salt-cpp.sif", "-b", "/data:/inputs", "-b", "/scratch"}), work());
  EXPECT_TRUE(contains(s.script_text, "srun --kill-on-bad-exit=1 singularity exec -e --nv --bind /data:/inputs --bind "
                                      "/scratch --home " + work().string() + " --pwd " + work().string() +
                                      " /images/salt-cpp.sif salt fit "))
      << s.script_text;
  expect_valid_bash(s.script_text);
  auto cpu = submit::prepare_slurm_job(slurm({"-e", "singularity", "--image", "/i.sif", "--cpu"}), work());
  EXPECT_FALSE(contains(cpu.script_text, "--nv"));
  EXPECT_THROW(submit::prepare_slurm_job(slurm({"-e", "singularity"}), work()), UsageError);  // no image
  EXPECT_THROW(submit::prepare_slurm_job(slurm({"-b", "/data"}), work()), UsageError);       // bind without singularity
}

TEST_F(SubmitTest, RequeueForwardsTheSignalAndFixesTheRunDirectory) {
  auto s = submit::prepare_slurm_job(slurm({"-r", "-ti", "10"}), work());
  const auto& t = s.script_text;
  EXPECT_TRUE(contains(t, "#SBATCH --requeue\n"));
  EXPECT_TRUE(contains(t, "#SBATCH --signal=B:USR1@90\n"));
  EXPECT_TRUE(contains(t, "#SBATCH --open-mode=append\n"));
  EXPECT_TRUE(contains(t, "#SBATCH --time=10\n"));
  EXPECT_TRUE(contains(t, "trap '"));
  EXPECT_TRUE(contains(t, "kill -USR1 \"${pids[@]}\"")) << t;
  EXPECT_TRUE(contains(t, "' USR1\n"));
  EXPECT_TRUE(contains(t, " &\npids+=($!)\n"));  // salt in the background, so the trap runs at once
  EXPECT_TRUE(contains(t, "--overwrite_config"));
  EXPECT_TRUE(contains(t, "--log_suffix=20"));  // salt's default: a fixed timestamp
  EXPECT_FALSE(s.plan.runs.front().run_dir.empty());
  expect_valid_bash(t);

  // Another signal: Slurm sends it, the trap catches it, salt still gets USR1.
  auto usr2 = submit::prepare_slurm_job(slurm({"-r", "-s", "SIGUSR2@30", "-sls", "keep"}), work());
  EXPECT_TRUE(contains(usr2.script_text, "#SBATCH --signal=B:USR2@30\n"));
  EXPECT_TRUE(contains(usr2.script_text, "' USR2\n"));
  EXPECT_TRUE(contains(usr2.script_text, "kill -USR1"));
  EXPECT_TRUE(contains(usr2.script_text, "--log_suffix=keep"));
  EXPECT_THROW(submit::prepare_slurm_job(slurm({"-r", "-s", "USR1"}), work()), UsageError);
}

// The requeue script run for real: `srun` and `salt` are stand-ins; the salt
// stand-in waits for USR1, records it and exits 3. The script must forward the
// signal at once and exit with salt's status.
TEST_F(SubmitTest, TheRequeueScriptForwardsTheSignalToSalt) {
  TempDir d;
  write_file(d / "srun", "#!/bin/bash\nwhile [[ $1 == -* ]]; do shift; done\nexec \"$@\"\n");
  write_file(d / "salt", "#!/bin/bash\necho \"$@\" > " + (d / "argv").string() + "\n" +
                             "trap 'echo got USR1 > " + (d / "signal").string() + "; exit 3' USR1\n" +
                             "touch " + (d / "started").string() + "\nwhile :; do sleep 0.05; done\n");
  chmod((d / "srun").c_str(), 0755);
  chmod((d / "salt").c_str(), 0755);
  auto s = submit::prepare_slurm_job(slurm({"-r", "--salt_binary", (d / "salt").string()}), work());
  write_file(d / "job.sh", s.script_text);
  BackgroundProcess job({"bash", (d / "job.sh").string()}, work(),
                        {"PATH=" + d.path().string() + ":" + std::getenv("PATH")});
  for (int i = 0; i < 400 && !fs::exists(d / "started"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(d / "started"));
  job.signal(SIGUSR1);
  auto r = job.wait();
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;  // salt's status, not the interrupted wait's
  EXPECT_TRUE(fs::exists(d / "signal"));
  EXPECT_TRUE(contains(read_file(d / "argv"), "fit --config=")) << read_file(d / "argv");
  EXPECT_TRUE(contains(r.out, "SIGUSR1 received")) << r.out;
}

}  // namespace
}  // namespace salt::testing
