// Slurm and salt must agree: ntasks-per-node = gpus_per_node = trainer.devices,
// nodes = trainer.num_nodes, cpus-per-task = data.num_workers. An explicit
// option replaces a config file's value (with a note) but contradicting a
// --config.* passthrough is an error; and every run is validated before
// anything is written.
#include <algorithm>

#include "core/errors.h"
#include "submit/submit_slurm.h"
#include "submit_support.h"
#include "core/remove_tree.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

TEST_F(SubmitTest, ResourcesComeFromTheConfigWhenNotGiven) {
  auto s = submit::prepare_slurm_job(slurm(), work());
  EXPECT_EQ(s.plan.resources.gpus_per_node, 1);  // GN2.yaml: devices 1
  EXPECT_EQ(s.plan.resources.nodes, 1);
  EXPECT_EQ(s.plan.resources.cpus_per_task, 2);  // GN2_cpu.yaml: num_workers 2
  EXPECT_TRUE(s.plan.notes.empty()) << joined(s.plan.notes);
  EXPECT_TRUE(contains(s.script_text, "#SBATCH --ntasks-per-node=1\n"));
  EXPECT_TRUE(contains(s.script_text, "#SBATCH --cpus-per-task=2\n"));
  EXPECT_TRUE(contains(s.script_text, "#SBATCH --gres=gpu:1\n"));
  EXPECT_FALSE(has(s.plan.common_args, "--trainer.devices=1"));  // nothing to change
}

TEST_F(SubmitTest, ExplicitOptionsSetTheSaltFlagsAndReplaceConfigFileValues) {
  auto s = submit::prepare_slurm_job(slurm({"-n", "2", "-g", "4", "-cpt", "8"}), work());
  EXPECT_EQ(s.plan.resources.nodes, 2);
  EXPECT_EQ(s.plan.resources.gpus_per_node, 4);
  EXPECT_EQ(s.plan.resources.cpus_per_task, 8);
  EXPECT_TRUE(has(s.plan.common_args, "--trainer.devices=4")) << joined(s.plan.common_args);
  EXPECT_TRUE(has(s.plan.common_args, "--trainer.num_nodes=2"));
  EXPECT_TRUE(has(s.plan.common_args, "--data.num_workers=8"));
  EXPECT_TRUE(contains(s.script_text, "#SBATCH --nodes=2\n"));
  EXPECT_TRUE(contains(s.script_text, "#SBATCH --ntasks-per-node=4\n"));
  EXPECT_TRUE(contains(s.script_text, "#SBATCH --gres=gpu:4\n"));
  EXPECT_TRUE(contains(s.script_text, "#SBATCH --cpus-per-task=8\n"));
  // one srun task per GPU: each is a rank
  EXPECT_TRUE(contains(s.script_text, "srun --kill-on-bad-exit=1 "));
  auto notes = joined(s.plan.notes);
  EXPECT_TRUE(contains(notes, "--gpus_per_node 4 replaces trainer.devices=1 (")) << notes;
  EXPECT_TRUE(contains(notes, "GN2.yaml:")) << notes;
  EXPECT_TRUE(contains(notes, "--cpus_per_task 8 replaces data.num_workers=2 (")) << notes;
}

TEST_F(SubmitTest, PassthroughsSetResourcesWhenTheOptionIsAbsent) {
  auto s = submit::prepare_slurm_job(slurm({"--config.trainer.devices=2", "--config.data.num_workers=3"}), work());
  EXPECT_EQ(s.plan.resources.gpus_per_node, 2);
  EXPECT_EQ(s.plan.resources.cpus_per_task, 3);
  EXPECT_TRUE(has(s.plan.common_args, "--trainer.devices=2"));  // the passthrough itself
}

TEST_F(SubmitTest, ContradictingPassthroughsAreErrors) {
  auto expect_error = [&](std::vector<std::string> args, const std::string& part) {
    try {
      submit::prepare_slurm_job(slurm(args), work());
      ADD_FAILURE() << "no error for " << joined(args);
    } catch (const UsageError& e) {
      EXPECT_TRUE(contains(e.what(), part)) << e.what();
    }
  };
  expect_error({"-g", "2", "--config.trainer.devices=4"},
               "--gpus_per_node 2 contradicts trainer.devices=4 (command line '--trainer.devices=4')");
  expect_error({"-n", "2", "--config.trainer.num_nodes=1"}, "--nodes 2 contradicts trainer.num_nodes=1");
  expect_error({"-cpt", "4", "--config.data.num_workers=2"}, "--cpus_per_task 4 contradicts data.num_workers=2");
  expect_error({"--cpu", "--config.trainer.accelerator=gpu"}, "--cpu contradicts trainer.accelerator=gpu");
  expect_error({"-g", "1", "--config.trainer.accelerator=cpu"}, "use --cpu for a CPU job");
  expect_error({"--cpu", "-g", "2"}, "--cpu contradicts -g/--gpus_per_node 2");
}

TEST_F(SubmitTest, CpuJobsRequestNoGpus) {
  for (auto args : {std::vector<std::string>{"--cpu"}, std::vector<std::string>{"-g", "0"},
                    std::vector<std::string>{"--config.trainer.accelerator=cpu"}}) {
    auto s = submit::prepare_slurm_job(slurm(args), work());
    EXPECT_EQ(s.plan.resources.gpus_per_node, 0);
    EXPECT_FALSE(contains(s.script_text, "--gres")) << s.script_text;
    EXPECT_TRUE(contains(s.script_text, "#SBATCH --ntasks-per-node=1\n"));
    EXPECT_TRUE(contains(s.script_text, "--trainer.accelerator=cpu"));
    EXPECT_TRUE(contains(s.script_text, "export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}"));
  }
}

TEST_F(SubmitTest, SaltFlagsOfTheJob) {
  auto s = submit::prepare_slurm_job(slurm({"-f", "-sls", "fixed", "--config.trainer.max_epochs=3"}), work());
  const auto& a = s.plan.common_args;
  EXPECT_TRUE(has(a, "--config=" + cfg("GN2.yaml")));  // absolute
  EXPECT_TRUE(has(a, "--config=" + cfg("GN2_cpu.yaml")));
  EXPECT_TRUE(has(a, "--trainer.max_epochs=3"));
  EXPECT_TRUE(has(a, "--force"));
  EXPECT_TRUE(has(a, "--log_suffix=fixed"));
  EXPECT_FALSE(has(a, "--overwrite_config"));
  EXPECT_EQ(s.plan.runs.front().run_dir, work() / "logs" / "GN2_cpu_fixed");
  EXPECT_TRUE(contains(s.script_text, "cd " + work().string() + " ||"));
}

TEST_F(SubmitTest, ATypoFailsBeforeAnythingIsWritten) {
  stand_in("sbatch", "Submitted batch job 1");
  std::ostringstream out;
  EXPECT_THROW(submit::submit_slurm(slurm({"--config.trainer.max_epoch=3"}), out), UsageError);
  EXPECT_THROW(submit::submit_slurm(slurm({"--config.data.train_file=data/toy/nope.h5"}), out), UserError);
  EXPECT_THROW(submit::submit_slurm(slurm({"--config.data.variables.jets=[no_such_var]"}), out),
               UserError);
  write_file(work() / "bad.yaml", "trainer:\n  max_epoch: 3\n");
  auto o = slurm();
  o.configs.push_back((work() / "bad.yaml").string());
  try {
    submit::submit_slurm(o, out);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "bad.yaml:2")) << e.what();
    EXPECT_TRUE(contains(e.what(), "max_epochs")) << e.what();  // did you mean
  }
  EXPECT_FALSE(fs::exists(work() / "slurm"));
  EXPECT_FALSE(fs::exists(work() / "bin" / "sbatch.args"));
}

TEST_F(SubmitTest, AnExistingRunDirectoryIsRefusedUnlessRequeueing) {
  fs::create_directories(work() / "logs" / "GN2_cpu_taken");
  write_file(work() / "logs" / "GN2_cpu_taken" / "config.yaml", "name: x\n");
  EXPECT_THROW(submit::prepare_slurm_job(slurm({"-sls", "taken"}), work()), UsageError);
  // --requeue reuses it (-oc): resubmitting resumes from its requeue.ckpt
  auto s = submit::prepare_slurm_job(slurm({"-sls", "taken", "-r"}), work());
  EXPECT_TRUE(has(s.plan.common_args, "--overwrite_config"));
  salt::remove_tree(work() / "logs");
}

}  // namespace
}  // namespace salt::testing
