// Sweeps: grid x list expansion, one job array, the runs file read by task id,
// --runs_per_gpu packing, and every run validated before submission.
#include <sys/stat.h>

#include "core/errors.h"
#include "submit/submit_slurm.h"
#include "submit/sweep.h"
#include "submit_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

std::vector<submit::SweepRun> expand(const std::string& yaml) { return submit::expand_sweep(YAML::Load(yaml), "s.yaml"); }

std::string flags(const submit::SweepRun& run) {
  std::string out;
  for (const auto& f : submit::sweep_flags(run)) out += (out.empty() ? "" : " ") + f;
  return out;
}

TEST(SweepExpansion, GridIsTheProductWithTheFirstKeySlowest) {
  auto runs = expand("grid: {model.lrs_config.max: [1e-3, 5e-4], data.batch_size: [500, 1000]}");
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(flags(runs[0]), "--model.lrs_config.max=1e-3 --data.batch_size=500");
  EXPECT_EQ(flags(runs[1]), "--model.lrs_config.max=1e-3 --data.batch_size=1000");
  EXPECT_EQ(flags(runs[2]), "--model.lrs_config.max=5e-4 --data.batch_size=500");
  EXPECT_EQ(flags(runs[3]), "--model.lrs_config.max=5e-4 --data.batch_size=1000");
}

TEST(SweepExpansion, ListAloneAndListTimesGrid) {
  auto list = expand("list: [{trainer.max_epochs: 2}, {trainer.max_epochs: 4, name: long}]");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(flags(list[1]), "--trainer.max_epochs=4 --name=long");
  auto both = expand("grid: {data.batch_size: [250, 500]}\nlist: [{trainer.max_epochs: 2}, {trainer.max_epochs: 4}]\n");
  ASSERT_EQ(both.size(), 4u);
  EXPECT_EQ(flags(both[0]), "--trainer.max_epochs=2 --data.batch_size=250");
  EXPECT_EQ(flags(both[1]), "--trainer.max_epochs=2 --data.batch_size=500");
  EXPECT_EQ(flags(both[3]), "--trainer.max_epochs=4 --data.batch_size=500");
  // list-valued settings keep their YAML
  auto lists = expand("grid: {data.variables.jets: [[pt_btagJes], [pt_btagJes, eta_btagJes]]}");
  EXPECT_EQ(flags(lists[1]), "--data.variables.jets=[pt_btagJes, eta_btagJes]");
}

TEST(SweepExpansion, MistakesNameTheFileAndLine) {
  auto error = [](const std::string& yaml) -> std::string {
    try {
      expand(yaml);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_TRUE(SubmitTest::contains(error("grid: {a.b: []}"), "needs a non-empty list")) << error("grid: {a.b: []}");
  EXPECT_TRUE(SubmitTest::contains(error("grid: {a.b: 3}"), "s.yaml:1"));
  EXPECT_TRUE(SubmitTest::contains(error("gird: {a.b: [1]}"), "did you mean 'grid'"));
  EXPECT_TRUE(SubmitTest::contains(error("grid: {a: [1]}\nlist: [{a: 2}]"), "'a' is in both"));
  EXPECT_TRUE(SubmitTest::contains(error("list: [3]"), "each 'list' entry"));
  EXPECT_TRUE(SubmitTest::contains(error("{}"), "needs 'grid' and/or 'list'"));
}

class SweepJobTest : public SubmitTest {
 protected:
  static std::string sweep_file(const std::string& yaml) {
    auto path = work() / "sweep.yaml";
    write_file(path, yaml);
    return path.string();
  }
};

TEST_F(SweepJobTest, OneJobArrayWithARunsFile) {
  auto s = submit::prepare_slurm_job(
      slurm({"--sweep", sweep_file("grid: {model.lrs_config.max: [1e-3, 5e-4]}\nlist: [{data.batch_size: 100}, "
                                   "{data.batch_size: 200}]\n"),
             "-g", "1"}),
      work());
  EXPECT_EQ(s.array_size, 4);
  EXPECT_TRUE(contains(s.script_text, "#SBATCH --array=0-3\n"));
  EXPECT_TRUE(contains(s.script_text, "#SBATCH --output=" + (work() / "slurm/batch_logs/slurm-%A_%a.out").string()));
  EXPECT_EQ(s.runs_file, work() / "slurm" / "batch" / "sweep_test.txt");
  EXPECT_TRUE(contains(s.script_text, "runs_file=" + s.runs_file.string()));
  EXPECT_TRUE(contains(s.script_text, "sed -n \"$((i + 1))p\" \"$runs_file\""));
  EXPECT_EQ(s.runs_text,
            "--data.batch_size=100 --model.lrs_config.max=1e-3 --log_suffix=test_0\n"
            "--data.batch_size=100 --model.lrs_config.max=5e-4 --log_suffix=test_1\n"
            "--data.batch_size=200 --model.lrs_config.max=1e-3 --log_suffix=test_2\n"
            "--data.batch_size=200 --model.lrs_config.max=5e-4 --log_suffix=test_3\n");
  EXPECT_EQ(s.plan.runs[3].run_dir, work() / "logs" / "GN2_cpu_test_3");
  EXPECT_TRUE(contains(s.script_text, "srun --kill-on-bad-exit=1 "));  // one run per task: a rank as usual
}

TEST_F(SweepJobTest, RunsPerGpuPacksRunsIntoFewerTasks) {
  auto yaml = sweep_file("grid: {model.lrs_config.max: [1e-3, 5e-4, 2e-4, 1e-4, 5e-5]}");
  auto s = submit::prepare_slurm_job(slurm({"--sweep", yaml, "--runs_per_gpu", "2", "-r", "-sls", "lr"}), work());
  EXPECT_EQ(s.array_size, 3);  // ceil(5 / 2)
  EXPECT_TRUE(contains(s.script_text, "#SBATCH --array=0-2\n"));
  EXPECT_TRUE(contains(s.script_text, "runs_per_task=2\n"));
  EXPECT_TRUE(contains(s.script_text, "num_runs=5\n"));
  EXPECT_FALSE(contains(s.script_text, "srun"));  // packed runs share the task's GPU
  // packed + requeue: the script requeues once, after every run saved
  EXPECT_TRUE(contains(s.script_text, "env -u SLURM_JOB_ID "));
  EXPECT_TRUE(contains(s.script_text, "scontrol requeue \"$SLURM_JOB_ID\""));
  EXPECT_TRUE(contains(s.script_text, (work() / "logs" / "GN2_cpu_lr_4").string()));
  EXPECT_TRUE(contains(s.runs_text, "--log_suffix=lr_4\n"));
  EXPECT_THROW(submit::prepare_slurm_job(slurm({"--sweep", yaml, "--runs_per_gpu", "2", "-g", "2"}), work()),
               UsageError);
  EXPECT_THROW(submit::prepare_slurm_job(slurm({"--runs_per_gpu", "2"}), work()), UsageError);  // no sweep
}

// The array task's bash, run with SLURM_ARRAY_TASK_ID and a salt stand-in that
// records its arguments: task 1 of 5 runs packed 2 per task runs runs 2 and 3.
TEST_F(SweepJobTest, AnArrayTaskRunsItsOwnLines) {
  TempDir d;
  write_file(d / "salt", "#!/bin/bash\nfor a in \"$@\"; do case $a in --log_suffix=*) echo \"$@\" > " +
                             (d.path() / "run_${a#--log_suffix=}").string() + ";; esac; done\n");
  chmod((d / "salt").c_str(), 0755);
  auto yaml = sweep_file("list: [{name: 'a b'}, {name: \"it's\"}, {name: c}, {name: d}, {name: e}]");
  auto s = submit::prepare_slurm_job(slurm({"--sweep", yaml, "--runs_per_gpu", "2", "--salt_binary",
                                            (d / "salt").string()}),
                                     work());
  fs::create_directories(s.runs_file.parent_path());
  fs::create_directories(s.log_dir);
  write_file(s.runs_file, s.runs_text);
  write_file(d / "job.sh", s.script_text);
  auto r = run_process({"bash", (d / "job.sh").string()}, work(), {"SLURM_ARRAY_TASK_ID=0"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(fs::exists(d / "run_test_0")) << r.out;
  EXPECT_TRUE(contains(read_file(d / "run_test_0"), "--name=a b --log_suffix=test_0"));  // quoting survives
  EXPECT_TRUE(contains(read_file(d / "run_test_1"), "--name=it's --log_suffix=test_1"));
  EXPECT_FALSE(fs::exists(d / "run_test_2"));
  r = run_process({"bash", (d / "job.sh").string()}, work(), {"SLURM_ARRAY_TASK_ID=2"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(d / "run_test_4"));  // the last task has one run
  EXPECT_FALSE(fs::exists(d / "run_test_5"));
}

TEST_F(SweepJobTest, EveryRunIsValidatedAndErrorsNameTheRun) {
  std::ostringstream out;
  auto yaml = sweep_file("list: [{trainer.max_epochs: 2}, {trainer.max_epoch: 3}]");
  try {
    submit::submit_slurm(slurm({"--sweep", yaml}), out);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "sweep run 1: ")) << e.what();
    EXPECT_TRUE(contains(e.what(), "max_epochs")) << e.what();
  }
  EXPECT_FALSE(fs::exists(work() / "slurm"));
  // a sweep value may not change the shared resources
  yaml = sweep_file("list: [{data.num_workers: 1}, {data.num_workers: 2}]");
  EXPECT_THROW(submit::prepare_slurm_job(slurm({"--sweep", yaml}), work()), UsageError);
  yaml = sweep_file("list: [{data.num_workers: 1}]");
  EXPECT_THROW(submit::prepare_slurm_job(slurm({"--sweep", yaml, "-cpt", "2"}), work()), UsageError);
}

TEST_F(SweepJobTest, DryRunListsTheRunsAndWritesNothing) {
  auto yaml = sweep_file("grid: {model.lrs_config.max: [1e-3, 5e-4]}");
  std::ostringstream out;
  EXPECT_EQ(submit::submit_slurm(slurm({"--sweep", yaml, "--dry-run"}), out), 0);
  EXPECT_TRUE(contains(out.str(), "sweep: 2 runs in a job array of 2 task(s)")) << out.str();
  EXPECT_TRUE(contains(out.str(), "run 1 (array task 1) -> " + (work() / "logs/GN2_cpu_test_1").string() +
                                      ": --model.lrs_config.max=5e-4 --log_suffix=test_1"))
      << out.str();
  EXPECT_TRUE(contains(out.str(), "#SBATCH --array=0-1"));
  EXPECT_FALSE(fs::exists(work() / "slurm"));
}

}  // namespace
}  // namespace salt::testing
