// The whole command as users run it: submit/submit_slurm (the wrapper) ->
// `salt submit_slurm` -> sbatch. sbatch is a stand-in here that records its
// arguments; tests/submit/slurm_submit_test.cpp submits to a real Slurm.
#include <algorithm>

#include "core/errors.h"
#include "submit/submit_slurm.h"
#include "submit_support.h"

namespace salt::testing {
namespace {

namespace fs = std::filesystem;

TEST_F(SubmitTest, SubmitWritesTheScriptCallsSbatchAndSaysWhereTheLogsGo) {
  stand_in("sbatch", "Submitted batch job 4242");
  std::ostringstream out;
  EXPECT_EQ(submit::submit_slurm(slurm({"-r", "-sls", "keep"}), out), 0);
  auto script = work() / "slurm" / "batch" / "sbatch_test.sh";
  ASSERT_TRUE(fs::exists(script));
  EXPECT_NE(fs::status(script).permissions() & fs::perms::owner_exec, fs::perms::none);
  EXPECT_TRUE(fs::is_directory(work() / "slurm" / "batch_logs"));
  EXPECT_EQ(read_file(work() / "bin" / "sbatch.args"), script.string() + "\n");
  EXPECT_TRUE(contains(out.str(), "submitted job 4242: " + script.string())) << out.str();
  EXPECT_TRUE(contains(out.str(), "logs: " + (work() / "slurm/batch_logs/slurm-4242.out").string())) << out.str();
  fs::remove(work() / "bin" / "sbatch.args");
}

TEST_F(SubmitTest, ASbatchFailureIsAnError) {
  stand_in("sbatch", "sbatch: error: invalid partition specified: nope");
  auto path = work() / "bin" / "sbatch";
  write_file(path, "#!/bin/bash\necho 'sbatch: error: invalid partition specified: nope' >&2\nexit 1\n");
  std::ostringstream out;
  try {
    submit::submit_slurm(slurm({"-p", "nope"}), out);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "invalid partition specified: nope")) << e.what();
  }
  fs::remove(path);
}

TEST_F(SubmitTest, TheWrapperRunsTheSaltBinarysSubcommand) {
  auto wrapper = (source_dir() / "submit" / "submit_slurm").string();
  auto r = run_process({wrapper, "--config", cfg("GN2.yaml"), "-c", cfg("GN2_cpu.yaml"), "--tag", "wrapped", "-cpt",
                        "3", "-cn", "a100", "--slurm.mail-type=END", "--config.trainer.max_epochs=2", "--dry-run"},
                       work(), {std::string("SALT_BINARY=") + salt::testing::salt_binary()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "#SBATCH --cpus-per-task=3\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "#SBATCH --constraint=a100\n"));
  EXPECT_TRUE(contains(r.out, "#SBATCH --mail-type=END\n"));
  EXPECT_TRUE(contains(r.out, "--trainer.max_epochs=2"));
  EXPECT_TRUE(contains(r.out, "note: -cpt/--cpus_per_task 3 replaces data.num_workers=2"));
  EXPECT_FALSE(fs::exists(work() / "slurm"));

  auto help = run_process({wrapper, "--help"}, work(), {std::string("SALT_BINARY=") + salt::testing::salt_binary()});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(contains(help.out, "--runs_per_gpu"));
  auto typo = run_process({wrapper, "-c", cfg("GN2.yaml"), "--config.trainer.max_epoch=2"}, work(),
                          {std::string("SALT_BINARY=") + salt::testing::salt_binary()});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_TRUE(contains(typo.err, "salt: error: ")) << typo.err;
  EXPECT_EQ(std::count(typo.err.begin(), typo.err.end(), '\n'), 1) << typo.err;
  EXPECT_FALSE(fs::exists(work() / "slurm"));

  auto condor = run_process({(source_dir() / "submit" / "submit_htcondor").string(), "-c", cfg("GN2.yaml"), "-c",
                             cfg("GN2_cpu.yaml"), "--gpus", "1", "--dry-run"},
                            work(), {std::string("SALT_BINARY=") + salt::testing::salt_binary()});
  EXPECT_EQ(condor.exit_code, 0) << condor.err;
  EXPECT_TRUE(contains(condor.out, "request_GPUs = 1"));
}

}  // namespace
}  // namespace salt::testing
